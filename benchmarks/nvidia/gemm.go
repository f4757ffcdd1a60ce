package nvidia

import (
	"fmt"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// Reasons of the gemm check.
const (
	// ReasonGEMMWrongResult: a device computed a wrong product (fail).
	ReasonGEMMWrongResult = "GEMMWrongResult"
	// ReasonGEMMBelowThreshold / BelowPeers: GEMM throughput below the
	// model's floor or the node's median (fail).
	ReasonGEMMBelowThreshold = "GEMMBelowThreshold"
	ReasonGEMMBelowPeers     = "GEMMBelowPeers"
)

// GEMMSettings are the settings of [checks.gemm].
type GEMMSettings struct {
	// DTypes (bf16, fp16, tf32, fp8: fp8 only on compute capability >= 8.9,
	// skipped with a note elsewhere), Sizes, Warmup, MinTime, MaxIters,
	// VerifySamples, the peer comparison and Thresholds (model →
	// "tflops_<dtype>" → least dense TFLOPS) are those of every GEMM check.
	device.GEMMSettings
	// CrossCheck compares every element with the product computed with
	// swapped operands (one more GEMM per measurement).
	CrossCheck bool `toml:"cross_check"`
}

// gemmThresholds are the shipped floors in dense TFLOPS at the largest
// size: roughly 70–75% of what cuBLAS reaches on healthy parts (datasheet
// peaks: A100 312 bf16/fp16, 156 tf32; H100/H200 SXM 989 bf16/fp16, 494
// tf32, 1979 fp8; B200 2250 bf16/fp16, 1100 tf32, 4500 fp8). Calibrate
// them on a known-good fleet; [checks.gemm.thresholds.MODEL] overrides.
var gemmThresholds = Thresholds{
	"A100":           {"tflops_bf16": 220, "tflops_fp16": 220, "tflops_tf32": 110},
	"A100-PCIE":      {"tflops_bf16": 190, "tflops_fp16": 190, "tflops_tf32": 95},
	"A100 80GB PCIe": {"tflops_bf16": 190, "tflops_fp16": 190, "tflops_tf32": 95},
	"H100":           {"tflops_bf16": 600, "tflops_fp16": 600, "tflops_tf32": 300, "tflops_fp8": 1100},
	"H100 PCIe":      {"tflops_bf16": 420, "tflops_fp16": 420, "tflops_tf32": 210, "tflops_fp8": 800},
	"H200":           {"tflops_bf16": 620, "tflops_fp16": 620, "tflops_tf32": 310, "tflops_fp8": 1150},
	"B200":           {"tflops_bf16": 1400, "tflops_fp16": 1400, "tflops_tf32": 650, "tflops_fp8": 2800},
}

// DefaultGEMMSettings are the shipped settings.
func DefaultGEMMSettings() GEMMSettings {
	return GEMMSettings{
		GEMMSettings: device.DefaultGEMMSettings(gemmThresholds, BF16, FP16, TF32, FP8),
		CrossCheck:   true,
	}
}

// Validate reports out-of-range settings, naming the key.
func (s *GEMMSettings) Validate() error {
	return device.ValidateGEMM(&s.GEMMSettings, BF16, FP16, TF32, FP8)
}

// newGEMMCheck is the gemm check over the GPUs open opens: dense GEMM
// throughput with cuBLASLt, products verified.
func newGEMMCheck(open Opener) benchmarks.Check {
	return device.NewGEMM(device.GEMMSpec[GEMMSettings]{
		Common:      spec[GEMMSettings]("gemm", "dense GEMM TFLOPS per GPU and dtype (cuBLASLt), products verified", DefaultGEMMSettings, gemmThresholds, open),
		GEMM:        func(s *GEMMSettings) *device.GEMMSettings { return &s.GEMMSettings },
		CrossCheck:  func(s *GEMMSettings) bool { return s.CrossCheck },
		Op:          "GEMM",
		WrongResult: ReasonGEMMWrongResult,
		Slow:        devcheck.Tokens{Limit: ReasonGEMMBelowThreshold, Peers: ReasonGEMMBelowPeers},
		Seed:        defaultSeed,
		Eps:         outEps,
		SizesFirst:  true,
		Skip:        skipFP8,
		LibraryNote: "cuBLASLt %s",
		RuntimeNote: "libcuda %s",
	})
}

func init() { benchmarks.Register(newGEMMCheck(OpenCUDA)) }

// skipFP8 names the devices below compute capability 8.9 when dt is FP8.
func skipFP8(dt DType, devs []DeviceInfo) (map[int]bool, string) {
	if dt != FP8 {
		return nil, ""
	}
	skip := map[int]bool{}
	var names []string
	cc := ""
	for _, d := range devs {
		if d.Major*10+d.Minor < 89 {
			skip[d.Index] = true
			names = append(names, devName(d.Index))
			cc = fmt.Sprintf("%d.%d", d.Major, d.Minor)
		}
	}
	if len(names) == 0 {
		return nil, ""
	}
	return skip, fmt.Sprintf("fp8 skipped on %s (compute capability %s < 8.9)", strings.Join(names, ", "), cc)
}
