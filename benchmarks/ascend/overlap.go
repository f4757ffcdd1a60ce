package ascend

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
)

// OverlapSettings are the settings of [checks.npu-overlap].
type OverlapSettings struct {
	// DType (fp16, bf16), Size, GEMMs, AllReduces, Bytes and MinEfficiency
	// are those of every overlap check.
	device.OverlapSettings
}

// DefaultOverlapSettings are the shipped settings: bf16 GEMMs, and the
// floor every overlap check ships (0.9: concurrent slower than serial),
// which only catches pathological interference.
func DefaultOverlapSettings() OverlapSettings {
	return OverlapSettings{OverlapSettings: device.DefaultOverlapSettings(device.BF16)}
}

// Validate reports out-of-range settings, naming the key.
func (s *OverlapSettings) Validate() error {
	return device.ValidateOverlap(&s.OverlapSettings, device.FP16, device.BF16)
}

// newOverlapCheck is the npu-overlap check over the NPUs open opens:
// aclnnMatmul and HCCL all-reduces alone and at once.
func newOverlapCheck(open Opener) benchmarks.Check {
	return device.NewOverlap(device.OverlapSpec[OverlapSettings]{
		Common: spec[OverlapSettings]("npu-overlap", "aclnnMatmul and HCCL all-reduces alone and at once: how well they overlap",
			DefaultOverlapSettings, nil, open),
		Overlap: func(s *OverlapSettings) *device.OverlapSettings { return &s.OverlapSettings },
		Slow:    "NPUOverlapBelowThreshold",
	})
}

func init() { benchmarks.Register(newOverlapCheck(OpenACL)) }
