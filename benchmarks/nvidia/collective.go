package nvidia

import (
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
)

// ReasonCollectiveWrongResult: a collective delivered wrong data (fail).
const ReasonCollectiveWrongResult = "CollectiveWrongResult"

// CollectiveSettings are the settings of [checks.allreduce], [checks.allgather],
// [checks.alltoall] and [checks.multi-allreduce].
type CollectiveSettings struct {
	// Bytes, VerifyBytes, Warmup, Iters and Thresholds (model →
	// "busbw_gbps" → least bus bandwidth in GB/s) are those of every
	// collective check.
	device.CollectiveSettings
	// Concurrent is how many all-reduces run at once (multi-allreduce only).
	Concurrent int `toml:"concurrent"`
}

// Validate reports out-of-range settings, naming the key.
func (s *CollectiveSettings) Validate() error {
	if err := device.ValidateCollective(&s.CollectiveSettings); err != nil {
		return err
	}
	if s.Concurrent < 1 {
		return benchmarks.BadSetting("concurrent", "%d: want 1 or more", s.Concurrent)
	}
	return nil
}

// newCollCheck is the NCCL check name of op over the GPUs open opens;
// concurrent > 1 runs that many at once (multi-allreduce).
func newCollCheck(name string, op CollOp, concurrent int, thresholds Thresholds, open Opener) benchmarks.Check {
	slow := map[CollOp]string{AllReduce: "AllReduceBelowThreshold", AllGather: "AllGatherBelowThreshold", AllToAll: "AllToAllBelowThreshold"}[op]
	desc := "NCCL " + device.Label(op) + " bus bandwidth over the node's GPUs, result verified"
	if concurrent > 1 {
		desc = fmt.Sprintf("%d NCCL all-reduces at once, each on its own communicator: aggregate bus bandwidth", concurrent)
	}
	return device.NewCollective(device.CollectiveSpec[CollectiveSettings]{
		Common: spec[CollectiveSettings](name, desc, func() CollectiveSettings {
			return CollectiveSettings{
				CollectiveSettings: device.DefaultCollectiveSettings(thresholds),
				Concurrent:         concurrent,
			}
		}, thresholds, open),
		Op:         op,
		Collective: func(s *CollectiveSettings) *device.CollectiveSettings { return &s.CollectiveSettings },
		Concurrent: func(s *CollectiveSettings) int {
			if concurrent > 1 {
				return s.Concurrent
			}
			return 1
		},
		WrongResult:  ReasonCollectiveWrongResult,
		Slow:         slow,
		LimitMessage: true,
		LibraryNote:  "NCCL %s",
	})
}
