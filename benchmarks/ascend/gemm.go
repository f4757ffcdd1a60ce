package ascend

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ReasonGEMMWrongResult: a device computed a wrong product (fail). Low
// throughput gives NPUGEMMBelowThreshold or NPUGEMMBelowPeers.
const ReasonGEMMWrongResult = "NPUGEMMWrongResult"

// ReasonGEMMBelowThreshold / BelowPeers: matmul throughput below the
// model's floor or the node's median (fail).
const (
	ReasonGEMMBelowThreshold = "NPUGEMMBelowThreshold"
	ReasonGEMMBelowPeers     = "NPUGEMMBelowPeers"
)

// GEMMSettings are the settings of [checks.npu-gemm].
type GEMMSettings struct {
	// DTypes (fp16, bf16), Sizes, Warmup, MinTime, MaxIters, VerifySamples,
	// the peer comparison and Thresholds (model → "tflops_fp16" /
	// "tflops_bf16" → least dense TFLOPS) are those of every GEMM check.
	device.GEMMSettings
}

// gemmThresholds are the shipped floors in dense TFLOPS at the largest
// size, keyed by the SoC name ACL reports. They are 60% of the peak FP16
// (= BF16) figures publicly reported for the 910B family (910B1 414,
// 910B2 376, 910B3 313, 910B4 280 TFLOPS; Huawei publishes per-product,
// not per-SKU, datasheets, so treat these as estimates). Calibrate them on
// a known-good fleet; [checks.npu-gemm.thresholds.MODEL] overrides.
var gemmThresholds = device.Thresholds{
	"Ascend910B1": {"tflops_fp16": 248, "tflops_bf16": 248},
	"Ascend910B2": {"tflops_fp16": 225, "tflops_bf16": 225},
	"Ascend910B3": {"tflops_fp16": 188, "tflops_bf16": 188},
	"Ascend910B4": {"tflops_fp16": 168, "tflops_bf16": 168},
}

// DefaultGEMMSettings are the shipped settings.
func DefaultGEMMSettings() GEMMSettings {
	return GEMMSettings{
		GEMMSettings: device.DefaultGEMMSettings(gemmThresholds, device.FP16, device.BF16),
	}
}

// Validate reports out-of-range settings, naming the key.
func (s *GEMMSettings) Validate() error {
	return device.ValidateGEMM(&s.GEMMSettings, device.FP16, device.BF16)
}

// newGEMMCheck is the npu-gemm check over the NPUs open opens: aclnnMatmul
// throughput, products verified.
func newGEMMCheck(open Opener) benchmarks.Check {
	return device.NewGEMM(device.GEMMSpec[GEMMSettings]{
		Common:      spec[GEMMSettings]("npu-gemm", "aclnnMatmul TFLOPS per NPU in fp16 and bf16, products verified", DefaultGEMMSettings, gemmThresholds, open),
		GEMM:        func(s *GEMMSettings) *device.GEMMSettings { return &s.GEMMSettings },
		Op:          "matmul",
		WrongResult: ReasonGEMMWrongResult,
		Slow:        devcheck.Tokens{Limit: ReasonGEMMBelowThreshold, Peers: ReasonGEMMBelowPeers},
		Seed:        defaultSeed,
		Eps:         outEps,
		RuntimeNote: "ACL %s",
	})
}

func init() { benchmarks.Register(newGEMMCheck(OpenACL)) }
