package devcheck

import (
	"fmt"
	"math"
)

// GEMM inputs are multiples of 1/InputScale in [-InputSteps/InputScale,
// InputSteps/InputScale] = [-2, 2]: exact in FP8 E4M3, BF16, FP16 and TF32,
// and their products are exact in an FP32 accumulator, so the host
// reference is exact and the only legitimate error is the rounding of D to
// the output type.
const (
	// InputSteps: values are i/InputScale for i in [-InputSteps, InputSteps].
	InputSteps = 16
	// InputScale is the denominator of every input value.
	InputScale = 8
)

// RNG is xorshift64*: fast, deterministic, good enough for test data.
// Its state must not be 0 (GenMatrix seeds with seed|1).
type RNG uint64

// Next returns the next pseudo-random number.
func (r *RNG) Next() uint64 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = RNG(x)
	return x * 2685821657736338717
}

// GenMatrix returns rows×cols GEMM input values (row-major), reproducible
// from seed.
func GenMatrix(rows, cols int, seed uint64) []float32 {
	r := RNG(seed | 1)
	out := make([]float32, rows*cols)
	for i := range out {
		out[i] = float32(int(r.Next()>>33%(2*InputSteps+1))-InputSteps) / InputScale
	}
	return out
}

// GEMM is what the host knows about a GEMM's inputs, D = A·Bᵀ: A is M×K
// and Bt N×K, both row-major; D is column-major M×N.
type GEMM struct {
	M, N, K int
	A, Bt   []float32
	// Sigma is the typical magnitude of an element of D: sqrt(K)·rms(A)·rms(B).
	Sigma float64
	// Eps is the relative error allowed on an element of D (a few units of
	// the output type's last place), relative to |D| plus Sigma.
	Eps float64
}

// NewGEMM describes the GEMM of a (m×k) and bt (n×k) whose output type
// allows the relative error eps.
func NewGEMM(m, n, k int, a, bt []float32, eps float64) GEMM {
	rms := func(x []float32) float64 {
		var s float64
		for _, v := range x {
			s += float64(v) * float64(v)
		}
		return math.Sqrt(s / float64(len(x)))
	}
	return GEMM{M: m, N: n, K: k, A: a, Bt: bt, Sigma: math.Sqrt(float64(k)) * rms(a) * rms(bt), Eps: eps}
}

// WrongResult describes a GEMM that computed wrong answers.
type WrongResult struct {
	// How is the comparison that failed ("sampled elements", "column sums",
	// "cross-check with swapped operands").
	How string
	// Bad and Total count compared items.
	Bad, Total int
	// Worst describes the worst mismatch.
	Worst string
}

func (w *WrongResult) Error() string {
	return fmt.Sprintf("%s: %d of %d wrong, worst %s", w.How, w.Bad, w.Total, w.Worst)
}

type mismatch struct {
	bad, total int
	worst      float64 // excess over tolerance, relative to tolerance
	desc       string
}

// compare counts one comparison; where names the item and is only called
// for a mismatch (formatting millions of names would dominate the cost).
func (mm *mismatch) compare(got, want, tol float64, where func() string) {
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
		mm.desc = fmt.Sprintf("%s = %g, want %g ± %.3g", where(), got, want, tol)
	}
}

func (mm *mismatch) err(how string) error {
	if mm.bad == 0 {
		return nil
	}
	return &WrongResult{How: how, Bad: mm.bad, Total: mm.total, Worst: mm.desc}
}

// Verify checks that d has M·N elements, then CheckSamples and
// CheckColumnSums. The error is a *WrongResult when D is wrong.
func (g GEMM) Verify(d []float32, samples int, seed uint64) error {
	if len(d) != g.M*g.N {
		return fmt.Errorf("GEMM returned %d elements, want %d", len(d), g.M*g.N)
	}
	if err := g.CheckSamples(d, samples, seed); err != nil {
		return err
	}
	return g.CheckColumnSums(d)
}

// CheckSamples compares `samples` elements of D, chosen pseudo-randomly
// from seed, with exact dot products of A and Bt.
func (g GEMM) CheckSamples(d []float32, samples int, seed uint64) error {
	r := RNG(seed | 1)
	var mm mismatch
	for s := 0; s < samples; s++ {
		i := int(r.Next() % uint64(g.M))
		j := int(r.Next() % uint64(g.N))
		var ref float64
		ar, br := g.A[i*g.K:(i+1)*g.K], g.Bt[j*g.K:(j+1)*g.K]
		for l := range ar {
			ref += float64(ar[l]) * float64(br[l])
		}
		mm.compare(float64(d[i+j*g.M]), ref, g.Eps*(math.Abs(ref)+g.Sigma), func() string { return fmt.Sprintf("D[%d,%d]", i, j) })
	}
	return mm.err("sampled elements")
}

// CheckColumnSums verifies the checksum identity Σ_i D[i,j] = Σ_l
// (Σ_i A[i,l])·B[l,j] for every column j, computed on the host from the
// inputs in O(MK + NK): a result that is wrong in bulk (zeros, garbage, a
// wrong tile) fails it.
func (g GEMM) CheckColumnSums(d []float32) error {
	colA := make([]float64, g.K) // Σ_i A[i,l]
	for i := 0; i < g.M; i++ {
		for l, v := range g.A[i*g.K : (i+1)*g.K] {
			colA[l] += float64(v)
		}
	}
	slack := 4 * g.Sigma * math.Sqrt(float64(g.M))
	var mm mismatch
	for j := 0; j < g.N; j++ {
		var ref float64
		for l, v := range g.Bt[j*g.K : (j+1)*g.K] {
			ref += colA[l] * float64(v)
		}
		var sum, abs float64
		for _, v := range d[j*g.M : (j+1)*g.M] {
			sum += float64(v)
			abs += math.Abs(float64(v))
		}
		mm.compare(sum, ref, g.Eps*(abs+slack)+1e-6, func() string { return fmt.Sprintf("column %d sum", j) })
	}
	return mm.err("column sums")
}

// CheckCross compares D element by element with D2, the same product
// computed with the operands swapped (D2 = B·Aᵀ, column-major N×M, so
// D2[j + i·N] = D[i + j·M]): another kernel, another tiling.
func (g GEMM) CheckCross(d, d2 []float32) error {
	var mm mismatch
	// Tiles keep both the column-major walk of D and the transposed walk
	// of D2 in cache.
	const tile = 64
	for j0 := 0; j0 < g.N; j0 += tile {
		for i0 := 0; i0 < g.M; i0 += tile {
			for j := j0; j < min(j0+tile, g.N); j++ {
				for i := i0; i < min(i0+tile, g.M); i++ {
					x, y := float64(d[i+j*g.M]), float64(d2[j+i*g.N])
					mm.compare(x, y, g.Eps*(math.Abs(x)+math.Abs(y)+g.Sigma), func() string { return fmt.Sprintf("D[%d,%d]", i, j) })
				}
			}
		}
	}
	return mm.err("cross-check with swapped operands")
}

// Element encodings used to upload GEMM inputs and read D back.

// BF16FromF32 encodes x as bfloat16, rounding to nearest even.
func BF16FromF32(x float32) uint16 {
	b := math.Float32bits(x)
	if x != x { // NaN
		return 0x7fc0
	}
	b += 0x7fff + (b>>16)&1 // round to nearest even
	return uint16(b >> 16)
}

// BF16ToF32 decodes a bfloat16.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F16FromF32 encodes x as IEEE half precision, rounding to nearest even,
// with subnormals, and overflow to infinity.
func F16FromF32(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case x != x:
		return 0x7e00
	case (b>>23)&0xff == 0xff:
		return sign | 0x7c00
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		h := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is right
	}
	if h >= 0x7c00 {
		return sign | 0x7c00
	}
	return sign | uint16(h)
}

// F16ToF32 decodes an IEEE half (exactly: every half is a float32).
func F16ToF32(h uint16) float32 {
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
