package ascend

import (
	"errors"
	"math"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

func TestEncodings(t *testing.T) {
	for _, x := range []float32{0, 1, -1, 0.125, -2, 1.875, 65504, -0.375} {
		if got := devcheck.F16ToF32(devcheck.F16FromF32(x)); got != x {
			t.Errorf("fp16 %v -> %v", x, got)
		}
		if got := devcheck.BF16ToF32(devcheck.BF16FromF32(x)); x != 65504 && got != x {
			t.Errorf("bf16 %v -> %v", x, got)
		}
	}
	if devcheck.F16ToF32(devcheck.F16FromF32(1e6)) != float32(math.Inf(1)) {
		t.Error("fp16 overflow is not inf")
	}
	if devcheck.F16ToF32(0x0001) != float32(math.Ldexp(1, -24)) {
		t.Error("fp16 subnormal")
	}
	if devcheck.BF16FromF32(1+1.0/256) != devcheck.BF16FromF32(1) { // ties to even
		t.Error("bf16 rounding")
	}
}

func TestGEMMInputsAreExact(t *testing.T) {
	a := devcheck.GenMatrix(32, 48, 7)
	for _, v := range a {
		if devcheck.F16ToF32(devcheck.F16FromF32(v)) != v || devcheck.BF16ToF32(devcheck.BF16FromF32(v)) != v || v < -2 || v > 2 {
			t.Fatalf("input %v is not exact in fp16/bf16", v)
		}
	}
}

// hostGEMM is D = A·Bᵀ (column-major) rounded to dt.
func hostGEMM(dt device.DType, m, n, k int, a, bt []float32) []float32 {
	d := make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for l := 0; l < k; l++ {
				s += float64(a[i*k+l]) * float64(bt[j*k+l])
			}
			d[i+j*m] = roundTo(dt, float32(s))
		}
	}
	return d
}

func TestGEMMVerification(t *testing.T) {
	const m, n, k = 48, 32, 256
	a, bt := devcheck.GenMatrix(m, k, 1), devcheck.GenMatrix(n, k, 2)
	for _, dt := range []device.DType{device.FP16, device.BF16} {
		ref := devcheck.NewGEMM(m, n, k, a, bt, outEps(dt))
		good := hostGEMM(dt, m, n, k, a, bt)
		if err := ref.Verify(good, 200, 3); err != nil {
			t.Errorf("%s: a correct product fails: %v", dt, err)
		}
		tests := map[string]func(d []float32){
			"zeros":        func(d []float32) { clear(d) },
			"one element":  func(d []float32) { d[5+7*m] += 40 },
			"swapped tile": func(d []float32) { copy(d[0:m], d[m:2*m]) },
			"nan":          func(d []float32) { d[m*n-1] = float32(math.NaN()) },
			"transposed":   func(d []float32) { t := hostGEMM(dt, n, m, k, bt, a); copy(d, t) },
		}
		for name, corrupt := range tests {
			d := append([]float32(nil), good...)
			corrupt(d)
			var wr *devcheck.WrongResult
			if err := ref.Verify(d, 200, 3); !errors.As(err, &wr) {
				t.Errorf("%s %s: not caught: %v", dt, name, err)
			}
		}
		if err := ref.Verify(good[:10], 10, 3); err == nil {
			t.Errorf("%s: short result accepted", dt)
		}
	}
}
