package ascend

import (
	"errors"
	"math"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks/compute"
)

func TestEncodings(t *testing.T) {
	for _, x := range []float32{0, 1, -1, 0.125, -2, 1.875, 65504, -0.375} {
		if got := f16ToF32(f16FromF32(x)); got != x {
			t.Errorf("fp16 %v -> %v", x, got)
		}
		if got := bf16ToF32(bf16FromF32(x)); x != 65504 && got != x {
			t.Errorf("bf16 %v -> %v", x, got)
		}
	}
	if f16ToF32(f16FromF32(1e6)) != float32(math.Inf(1)) {
		t.Error("fp16 overflow is not inf")
	}
	if f16ToF32(0x0001) != float32(math.Ldexp(1, -24)) {
		t.Error("fp16 subnormal")
	}
	if bf16FromF32(1+1.0/256) != bf16FromF32(1) { // ties to even
		t.Error("bf16 rounding")
	}
}

func TestGEMMInputsAreExact(t *testing.T) {
	a := genMatrix(32, 48, 7)
	for _, v := range a {
		if f16ToF32(f16FromF32(v)) != v || bf16ToF32(bf16FromF32(v)) != v || v < -2 || v > 2 {
			t.Fatalf("input %v is not exact in fp16/bf16", v)
		}
	}
}

// hostGEMM is D = A·Bᵀ (column-major) rounded to dt.
func hostGEMM(dt compute.DType, m, n, k int, a, bt []float32) []float32 {
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
	a, bt := genMatrix(m, k, 1), genMatrix(n, k, 2)
	for _, dt := range []compute.DType{compute.FP16, compute.BF16} {
		ref := newGEMMRef(dt, m, n, k, a, bt)
		good := hostGEMM(dt, m, n, k, a, bt)
		if err := ref.verify(good, 200, 3); err != nil {
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
			var wr *wrongResult
			if err := ref.verify(d, 200, 3); !errors.As(err, &wr) {
				t.Errorf("%s %s: not caught: %v", dt, name, err)
			}
		}
		if err := ref.verify(good[:10], 10, 3); err == nil {
			t.Errorf("%s: short result accepted", dt)
		}
	}
}

func TestEvaluateAndMedian(t *testing.T) {
	if median([]float64{3, 1, 2}) != 2 || median([]float64{4, 1, 2, 3}) != 2.5 || !math.IsNaN(median(nil)) {
		t.Error("median")
	}
	th := compute.Thresholds{"Ascend910B": {"x": 10}, "Ascend910B4": {"x": 5}}
	ty := &tally{check: "c"}
	rs := []reading{{"npu0", "Ascend910B4", 6}, {"npu1", "Ascend910B3", 9}, {"npu2", "Ascend910B3", 20}, {"npu3", "Ascend910B3", 21}}
	evaluate(ty, metric{Name: "x", Key: "x", Unit: "u", Label: "x"}, "P", rs, th, compute.Peers{Fraction: 0.5, Min: 3})
	// npu0 passes its own floor (5) but is below half the median (14.5);
	// npu1 is below the 910B floor (10).
	if len(ty.fails) != 2 || ty.fails[0].reason != "PBelowPeers" || ty.fails[0].device != "npu0" ||
		ty.fails[1].reason != "PBelowThreshold" || ty.fails[1].device != "npu1" {
		t.Errorf("fails %+v", ty.fails)
	}
	if *ty.values[0].Threshold != 5 || *ty.values[1].Threshold != 10 {
		t.Error("thresholds by model")
	}
}
