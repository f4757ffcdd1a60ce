package nvidia

import (
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"math"
)

// GEMM inputs come from devcheck.GenMatrix: multiples of 1/8 in [-2, 2],
// exact in FP8 E4M3, BF16, FP16 and TF32, with products exact in FP32, so
// the only legitimate error is the rounding of D (and, for FP8, the
// reduced-precision accumulation of some tensor cores).
const (
	defaultSeed  = 0x5eed_0f_716111
	maxFP16Value = 65504
)

// tolerance of a dtype: outEps is the relative error allowed on each
// element of D (a few units of its last place), relative to |D| plus the
// typical magnitude of an element.
func outEps(dt device.DType) float64 {
	switch dt {
	case device.BF16:
		return 1.0 / 128 // bf16 keeps 8 significant bits
	case device.FP16:
		return 1.0 / 1024 // fp16 keeps 11
	case device.TF32:
		return 1.0 / (1 << 20) // fp32 output
	case device.FP8:
		return 1.0 / 64 // bf16 output, reduced-precision accumulation
	}
	return 1.0 / 128
}

// e4m3FromF32 encodes FP8 E4M3 (OCP "fn" variant: bias 7, no infinities,
// largest finite 448), rounding to nearest even and saturating.
func e4m3FromF32(x float32) uint8 {
	if x != x {
		return 0x7f
	}
	var sign uint8
	if math.Signbit(float64(x)) {
		sign = 0x80
		x = -x
	}
	if x >= 448 {
		return sign | 0x7e
	}
	if x == 0 {
		return sign
	}
	// Find the encoding by scaling: quantum is 2^(e-3) for normals with
	// unbiased exponent e >= -6, and 2^-9 for subnormals.
	e := int(math.Floor(math.Log2(float64(x))))
	if e < -6 {
		e = -6
	}
	q := math.Ldexp(1, e-3)
	n := math.RoundToEven(float64(x) / q) // significand in units of q
	if n >= 16 && e >= -6 {               // carried into the next binade
		e++
		n /= 2
	}
	if e > 8 || (e == 8 && n > 14) {
		return sign | 0x7e
	}
	if n < 8 { // subnormal
		return sign | uint8(n)
	}
	return sign | uint8(e+7)<<3 | uint8(n-8)
}
