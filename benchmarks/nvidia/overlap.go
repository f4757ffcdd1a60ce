package nvidia

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
)

// OverlapSettings are the settings of [checks.overlap].
type OverlapSettings struct {
	// DType (bf16, fp16, tf32, fp8), Size, GEMMs, AllReduces, Bytes and
	// MinEfficiency are those of every overlap check.
	device.OverlapSettings
}

// DefaultOverlapSettings are the shipped settings: bf16 GEMMs.
func DefaultOverlapSettings() OverlapSettings {
	return OverlapSettings{OverlapSettings: device.DefaultOverlapSettings(BF16)}
}

// Validate reports out-of-range settings, naming the key.
func (s *OverlapSettings) Validate() error {
	return device.ValidateOverlap(&s.OverlapSettings, BF16, FP16, TF32, FP8)
}

// newOverlapCheck is the overlap check over the GPUs open opens: cuBLASLt
// GEMMs and NCCL all-reduces alone and at once.
func newOverlapCheck(open Opener) benchmarks.Check {
	return device.NewOverlap(device.OverlapSpec[OverlapSettings]{
		Common: spec[OverlapSettings]("overlap", "GEMMs and NCCL all-reduces alone and at once: how well they overlap",
			DefaultOverlapSettings, nil, open),
		Overlap: func(s *OverlapSettings) *device.OverlapSettings { return &s.OverlapSettings },
		Slow:    "OverlapBelowThreshold",
	})
}

func init() { benchmarks.Register(newOverlapCheck(OpenCUDA)) }
