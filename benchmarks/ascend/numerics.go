package ascend

import "github.com/vigil-hpc/vigil/benchmarks/device"

// defaultSeed seeds the GEMM inputs (devcheck.GenMatrix: multiples of 1/8
// in [-2, 2], exact in FP16 and BF16, with products exact in the FP32
// accumulator, so the only legitimate error is the rounding of D).
const defaultSeed = 0xa5ce_0d_5eed

// outEps is the relative rounding allowed on an element of D.
func outEps(dt device.DType) float64 {
	if dt == device.FP16 {
		return 1.0 / 1024 // 11 significant bits
	}
	return 1.0 / 128 // bf16: 8 significant bits
}
