package ascend

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
)

// ReasonCollectiveWrongResult: a collective delivered wrong data (fail).
const ReasonCollectiveWrongResult = "NPUCollectiveWrongResult"

// CollectiveSettings are the settings of [checks.npu-allreduce],
// [checks.npu-allgather] and [checks.npu-alltoall].
type CollectiveSettings struct {
	// Bytes, VerifyBytes, Warmup, Iters and Thresholds (model →
	// "busbw_gbps" → least bus bandwidth in GB/s) are those of every
	// collective check.
	device.CollectiveSettings
}

// Validate reports out-of-range settings, naming the key.
func (s *CollectiveSettings) Validate() error {
	return device.ValidateCollective(&s.CollectiveSettings)
}

// collThresholds: 8 × 910B in one Atlas 800T A2 server are fully meshed
// over HCCS (7 links of 56 GB/s per NPU, 392 GB/s). The floors are a
// conservative fraction of what hccl_test reports on healthy nodes for
// 256 MiB buffers; calibrate on the fleet, and lower them for nodes with
// fewer NPUs per job.
var (
	allReduceThresholds = device.Thresholds{"Ascend910B": {"busbw_gbps": 100}}
	allGatherThresholds = device.Thresholds{"Ascend910B": {"busbw_gbps": 100}}
)

// collSlow is the threshold reason of op's check.
func collSlow(op device.CollOp) string {
	switch op {
	case device.AllGather:
		return "NPUAllGatherBelowThreshold"
	case device.AllToAll:
		return "NPUAllToAllBelowThreshold"
	}
	return "NPUAllReduceBelowThreshold"
}

// newCollCheck is the HCCL check name of op over the NPUs open opens.
func newCollCheck(name string, op device.CollOp, thresholds device.Thresholds, open Opener) benchmarks.Check {
	return device.NewCollective(device.CollectiveSpec[CollectiveSettings]{
		Common: spec[CollectiveSettings](name, "HCCL "+device.Label(op)+" bus bandwidth over the node's NPUs, result verified", func() CollectiveSettings {
			return CollectiveSettings{
				CollectiveSettings: device.DefaultCollectiveSettings(thresholds),
			}
		}, thresholds, open),
		Op:          op,
		Collective:  func(s *CollectiveSettings) *device.CollectiveSettings { return &s.CollectiveSettings },
		WrongResult: ReasonCollectiveWrongResult,
		Slow:        collSlow(op),
		LibraryNote: "HCCL %s",
	})
}
