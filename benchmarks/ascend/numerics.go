package ascend

import (
	"fmt"
	"math"

	"github.com/vigil-hpc/vigil/benchmarks/compute"
)

// GEMM inputs are multiples of 1/8 in [-2, 2]: exact in FP16 and BF16, with
// products exact in the FP32 accumulator, so the host reference is exact
// and the only legitimate error is the rounding of D to the output type.
const (
	inputSteps  = 16
	inputScale  = 8
	defaultSeed = 0xa5ce_0d_5eed
)

// rng is xorshift64*: deterministic test data.
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = rng(x)
	return x * 2685821657736338717
}

// genMatrix returns rows×cols values (row-major), reproducible from seed.
func genMatrix(rows, cols int, seed uint64) []float32 {
	r := rng(seed | 1)
	out := make([]float32, rows*cols)
	for i := range out {
		out[i] = float32(int(r.next()>>33%(2*inputSteps+1))-inputSteps) / inputScale
	}
	return out
}

// outEps is the relative rounding allowed on an element of D.
func outEps(dt compute.DType) float64 {
	if dt == compute.FP16 {
		return 1.0 / 1024 // 11 significant bits
	}
	return 1.0 / 128 // bf16: 8 significant bits
}

// gemmRef holds what the host knows about a GEMM's inputs: D = A·Bᵀ, A
// m×k and Bt n×k row-major, D column-major m×n.
type gemmRef struct {
	dt      compute.DType
	m, n, k int
	a, bt   []float32
	sigma   float64 // typical |D element|: sqrt(k)·rms(A)·rms(B)
}

func newGEMMRef(dt compute.DType, m, n, k int, a, bt []float32) gemmRef {
	rms := func(x []float32) float64 {
		var s float64
		for _, v := range x {
			s += float64(v) * float64(v)
		}
		return math.Sqrt(s / float64(len(x)))
	}
	return gemmRef{dt: dt, m: m, n: n, k: k, a: a, bt: bt, sigma: math.Sqrt(float64(k)) * rms(a) * rms(bt)}
}

// wrongResult describes a GEMM that computed wrong answers.
type wrongResult struct {
	How        string
	Bad, Total int
	Worst      string
}

func (w *wrongResult) Error() string {
	return fmt.Sprintf("%s: %d of %d wrong, worst %s", w.How, w.Bad, w.Total, w.Worst)
}

type mismatch struct {
	bad, total int
	worst      float64
	desc       string
}

func (mm *mismatch) compare(got, want, tol float64, where string) {
	mm.total++
	d := math.Abs(got - want)
	if d <= tol && !math.IsNaN(got) {
		return
	}
	mm.bad++
	ex := d / tol
	if math.IsNaN(got) || math.IsInf(got, 0) {
		ex = math.Inf(1)
	}
	if mm.desc == "" || ex > mm.worst {
		mm.worst = ex
		mm.desc = fmt.Sprintf("%s = %g, want %g ± %.3g", where, got, want, tol)
	}
}

func (mm *mismatch) err(how string) error {
	if mm.bad == 0 {
		return nil
	}
	return &wrongResult{How: how, Bad: mm.bad, Total: mm.total, Worst: mm.desc}
}

// verify compares D with references computed on the host another way:
// exact dot products for `samples` pseudo-random elements, and for every
// column j the checksum identity Σ_i D[i,j] = Σ_l (Σ_i A[i,l])·B[l,j],
// computed in O(mk + nk). A fast device that returns garbage, zeros or a
// wrong tile fails one or the other.
func (g gemmRef) verify(d []float32, samples int, seed uint64) error {
	if len(d) != g.m*g.n {
		return fmt.Errorf("GEMM returned %d elements, want %d", len(d), g.m*g.n)
	}
	eps := outEps(g.dt)
	r := rng(seed | 1)
	var mm mismatch
	for s := 0; s < samples; s++ {
		i, j := int(r.next()%uint64(g.m)), int(r.next()%uint64(g.n))
		var ref float64
		ar, br := g.a[i*g.k:(i+1)*g.k], g.bt[j*g.k:(j+1)*g.k]
		for l := range ar {
			ref += float64(ar[l]) * float64(br[l])
		}
		mm.compare(float64(d[i+j*g.m]), ref, eps*(math.Abs(ref)+g.sigma), fmt.Sprintf("D[%d,%d]", i, j))
	}
	if err := mm.err("sampled elements"); err != nil {
		return err
	}
	colA := make([]float64, g.k)
	for i := 0; i < g.m; i++ {
		for l, v := range g.a[i*g.k : (i+1)*g.k] {
			colA[l] += float64(v)
		}
	}
	slack := 4 * g.sigma * math.Sqrt(float64(g.m))
	mm = mismatch{}
	for j := 0; j < g.n; j++ {
		var ref float64
		for l, v := range g.bt[j*g.k : (j+1)*g.k] {
			ref += colA[l] * float64(v)
		}
		var sum, abs float64
		for _, v := range d[j*g.m : (j+1)*g.m] {
			sum += float64(v)
			abs += math.Abs(float64(v))
		}
		mm.compare(sum, ref, eps*(abs+slack)+1e-6, fmt.Sprintf("column %d sum", j))
	}
	return mm.err("column sums")
}

// Element encodings for uploading inputs and reading D back.

func bf16FromF32(x float32) uint16 {
	b := math.Float32bits(x)
	if x != x {
		return 0x7fc0
	}
	b += 0x7fff + (b>>16)&1 // round to nearest even
	return uint16(b >> 16)
}

func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// f16FromF32 converts exactly for the values GEMM inputs use (normal
// numbers in FP16's range); others round toward zero, saturate or flush.
func f16FromF32(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case x != x:
		return 0x7e00
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0:
		return sign
	}
	return sign | uint16(exp)<<10 | uint16(mant>>13)
}

func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		v := float32(mant) / (1 << 24)
		if sign != 0 {
			return -v
		}
		return v
	case exp == 31:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
