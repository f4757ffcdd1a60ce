package nvidia

import (
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"math"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

func TestEncodings(t *testing.T) {
	tests := []struct {
		x         float32
		bf16, f16 uint16
		e4m3      uint8
	}{
		{1, 0x3f80, 0x3c00, 0x38},
		{-2, 0xc000, 0xc000, 0xc0},
		{0.125, 0x3e00, 0x3000, 0x20},
		{1.875, 0x3ff0, 0x3f80, 0x3f},
		{0, 0, 0, 0},
		{448, 0x43e0, 0x5f00, 0x7e},
		{0.001953125, 0x3b00, 0x1800, 0x01}, // 2^-9: e4m3's smallest subnormal
	}
	for _, tt := range tests {
		if got := devcheck.BF16FromF32(tt.x); got != tt.bf16 {
			t.Errorf("bf16(%g) = %#x, want %#x", tt.x, got, tt.bf16)
		}
		if got := devcheck.F16FromF32(tt.x); got != tt.f16 {
			t.Errorf("f16(%g) = %#x, want %#x", tt.x, got, tt.f16)
		}
		if got := e4m3FromF32(tt.x); got != tt.e4m3 {
			t.Errorf("e4m3(%g) = %#x, want %#x", tt.x, got, tt.e4m3)
		}
	}
	// Rounding and saturation.
	if got := e4m3FromF32(1000); got != 0x7e {
		t.Errorf("e4m3(1000) = %#x, want saturation to 448 (0x7e)", got)
	}
	if got := devcheck.F16ToF32(devcheck.F16FromF32(1 + 1.0/4096)); got != 1 {
		t.Errorf("f16 round to even: %g", got)
	}
	if got := devcheck.F16FromF32(1e6); got != 0x7c00 {
		t.Errorf("f16(1e6) = %#x, want inf", got)
	}
	if got := devcheck.BF16ToF32(devcheck.BF16FromF32(1 + 1.0/256 + 1.0/512)); got != 1+1.0/128 {
		t.Errorf("bf16 rounding: %g", got)
	}
}

func TestGEMMInputsAreExactInEveryType(t *testing.T) {
	for i := -devcheck.InputSteps; i <= devcheck.InputSteps; i++ {
		x := float32(i) / devcheck.InputScale
		if y := devcheck.BF16ToF32(devcheck.BF16FromF32(x)); y != x {
			t.Errorf("bf16 %g -> %g", x, y)
		}
		if y := devcheck.F16ToF32(devcheck.F16FromF32(x)); y != x {
			t.Errorf("f16 %g -> %g", x, y)
		}
		if y := e4m3ToF32(e4m3FromF32(x)); y != x {
			t.Errorf("e4m3 %g -> %g", x, y)
		}
	}
	a := devcheck.GenMatrix(8, 8, 1)
	for _, v := range a {
		if v < -2 || v > 2 || v*devcheck.InputScale != float32(math.Round(float64(v*devcheck.InputScale))) {
			t.Fatalf("genMatrix value %g is not a multiple of 1/8 in [-2, 2]", v)
		}
	}
}

// hostGEMM computes D (column-major m×n) exactly and rounds it to dt.
func hostGEMM(dt device.DType, m, n, k int, a, bt []float32) []float32 {
	d := make([]float32, m*n)
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			var s float64
			for l := 0; l < k; l++ {
				s += float64(a[i*k+l]) * float64(bt[j*k+l])
			}
			d[i+j*m] = roundTo(dt, s)
		}
	}
	return d
}

func TestGEMMVerification(t *testing.T) {
	const m, n, k = 48, 32, 64
	a, bt := devcheck.GenMatrix(m, k, 11), devcheck.GenMatrix(n, k, 12)
	st := devcheck.NewGEMM(m, n, k, a, bt, 0)
	ref := func(dt device.DType) devcheck.GEMM { g := st; g.Eps = outEps(dt); return g }
	for _, dt := range []device.DType{device.BF16, device.FP16, device.TF32, device.FP8} {
		d := hostGEMM(dt, m, n, k, a, bt)
		d2 := hostGEMM(dt, n, m, k, bt, a)
		t.Run(string(dt)+"/correct", func(t *testing.T) {
			if err := ref(dt).CheckSamples(d, 200, 1); err != nil {
				t.Error(err)
			}
			if err := ref(dt).CheckColumnSums(d); err != nil {
				t.Error(err)
			}
			if err := ref(dt).CheckCross(d, d2); err != nil {
				t.Error(err)
			}
		})
	}
	// Corrupted products: see devcheck's TestGEMMVerification.
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	x := devcheck.GenMatrix(4, 33, 5)
	for _, dt := range []device.DType{device.BF16, device.FP16, device.TF32} {
		got := decodeOut(dt, encode(dt, x))
		for i := range x {
			if got[i] != x[i] {
				t.Fatalf("%s: element %d %g -> %g", dt, i, x[i], got[i])
			}
		}
	}
	b := encode(device.FP8, x)
	if len(b) != len(x) {
		t.Fatalf("fp8 is one byte per element, got %d for %d", len(b), len(x))
	}
	for i := range x {
		if e4m3ToF32(b[i]) != x[i] {
			t.Fatalf("fp8 element %d %g -> %g", i, x[i], e4m3ToF32(b[i]))
		}
	}
	// The fill patterns the overlap check writes read as 1.0.
	if devcheck.BF16ToF32(uint16(onePattern(device.BF16))) != 1 || devcheck.F16ToF32(uint16(onePattern(device.FP16))) != 1 ||
		math.Float32frombits(onePattern(device.TF32)) != 1 || e4m3ToF32(uint8(onePattern(device.FP8))) != 1 {
		t.Error("onePattern is not 1.0 in every type")
	}
}

// e4m3ToF32 decodes an FP8 E4M3 byte: the inverse of e4m3FromF32, which
// only the tests need.
func e4m3ToF32(b uint8) float32 {
	sign := float32(1)
	if b&0x80 != 0 {
		sign = -1
	}
	exp := int(b>>3) & 0xf
	mant := float64(b & 7)
	if exp == 0xf && b&7 == 7 {
		return float32(math.NaN())
	}
	if exp == 0 {
		return sign * float32(math.Ldexp(mant, -9))
	}
	return sign * float32(math.Ldexp(8+mant, exp-7-3))
}
