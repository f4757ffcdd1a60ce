package compute

import (
	"fmt"
	"math"
	"sort"
)

// GEMM inputs are multiples of 1/8 in [-2, 2]: exact in FP8 E4M3, BF16,
// FP16 and TF32, and their products are exact in FP32, so the reference
// result is exact and the only legitimate error is the rounding of D (and,
// for FP8, the reduced-precision accumulation of some tensor cores).
const (
	inputSteps   = 16 // values are i/inputScale for i in [-inputSteps, inputSteps]
	inputScale   = 8
	defaultSeed  = 0x5eed_0f_716111
	maxFP16Value = 65504
)

// rng is xorshift64*: fast, deterministic, good enough for test data.
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

// tolerance of a dtype: outEps is the relative error allowed on each
// element of D (a few units of its last place), relative to |D| plus the
// typical magnitude of an element.
func outEps(dt DType) float64 {
	switch dt {
	case BF16:
		return 1.0 / 128 // bf16 keeps 8 significant bits
	case FP16:
		return 1.0 / 1024 // fp16 keeps 11
	case TF32:
		return 1.0 / (1 << 20) // fp32 output
	case FP8:
		return 1.0 / 64 // bf16 output, reduced-precision accumulation
	}
	return 1.0 / 128
}

// gemmStats are host-side facts about a GEMM's inputs used by the checks.
type gemmStats struct {
	m, n, k int
	// sigma is the typical magnitude of an element of D: sqrt(k)·rms(A)·rms(B).
	sigma float64
}

func statsOf(m, n, k int, a, bt []float32) gemmStats {
	rms := func(x []float32) float64 {
		var s float64
		for _, v := range x {
			s += float64(v) * float64(v)
		}
		return math.Sqrt(s / float64(len(x)))
	}
	return gemmStats{m: m, n: n, k: k, sigma: math.Sqrt(float64(k)) * rms(a) * rms(bt)}
}

// wrongResult describes a GEMM that computed wrong answers.
type wrongResult struct {
	// How is the comparison that failed ("sampled elements", "column sums",
	// "cross-check").
	How string
	// Bad and Total count compared items.
	Bad, Total int
	// Worst describes the worst mismatch.
	Worst string
}

func (w *wrongResult) Error() string {
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
	return &wrongResult{How: how, Bad: mm.bad, Total: mm.total, Worst: mm.desc}
}

// checkSamples compares `samples` elements of D (column-major m×n),
// chosen pseudo-randomly from seed, with exact dot products of A and Bt.
func checkSamples(dt DType, st gemmStats, a, bt, d []float32, samples int, seed uint64) error {
	r := rng(seed | 1)
	var mm mismatch
	eps := outEps(dt)
	for s := 0; s < samples; s++ {
		i := int(r.next() % uint64(st.m))
		j := int(r.next() % uint64(st.n))
		var ref float64
		ar, br := a[i*st.k:(i+1)*st.k], bt[j*st.k:(j+1)*st.k]
		for l := range ar {
			ref += float64(ar[l]) * float64(br[l])
		}
		got := float64(d[i+j*st.m])
		mm.compare(got, ref, eps*(math.Abs(ref)+st.sigma), func() string { return fmt.Sprintf("D[%d,%d]", i, j) })
	}
	return mm.err("sampled elements")
}

// checkColumnSums verifies the checksum identity Σ_i D[i,j] = Σ_l
// (Σ_i A[i,l])·B[l,j] for every column j, computed on the host from the
// inputs in O(mk + nk): a result that is wrong in bulk (zeros, garbage, a
// wrong tile) fails it.
func checkColumnSums(dt DType, st gemmStats, a, bt, d []float32) error {
	colA := make([]float64, st.k) // Σ_i A[i,l]
	for i := 0; i < st.m; i++ {
		row := a[i*st.k : (i+1)*st.k]
		for l, v := range row {
			colA[l] += float64(v)
		}
	}
	eps := outEps(dt)
	slack := 4 * st.sigma * math.Sqrt(float64(st.m))
	var mm mismatch
	for j := 0; j < st.n; j++ {
		var ref float64
		br := bt[j*st.k : (j+1)*st.k]
		for l, v := range br {
			ref += colA[l] * float64(v)
		}
		var sum, abs float64
		for _, v := range d[j*st.m : (j+1)*st.m] {
			sum += float64(v)
			abs += math.Abs(float64(v))
		}
		mm.compare(sum, ref, eps*(abs+slack)+1e-6, func() string { return fmt.Sprintf("column %d sum", j) })
	}
	return mm.err("column sums")
}

// checkCross compares D (column-major m×n) element by element with D2, the
// same product computed with the operands swapped (D2 = B·Aᵀ, column-major
// n×m, so D2[j + i·n] = D[i + j·m]): another kernel, another tiling.
func checkCross(dt DType, st gemmStats, d, d2 []float32) error {
	eps := outEps(dt)
	var mm mismatch
	// Tiles keep both the column-major walk of D and the transposed walk
	// of D2 in cache.
	const tile = 64
	for j0 := 0; j0 < st.n; j0 += tile {
		for i0 := 0; i0 < st.m; i0 += tile {
			for j := j0; j < min(j0+tile, st.n); j++ {
				for i := i0; i < min(i0+tile, st.m); i++ {
					x, y := float64(d[i+j*st.m]), float64(d2[j+i*st.n])
					mm.compare(x, y, eps*(math.Abs(x)+math.Abs(y)+st.sigma), func() string { return fmt.Sprintf("D[%d,%d]", i, j) })
				}
			}
		}
	}
	return mm.err("cross-check with swapped operands")
}

// percentile p (0..100) of xs, nearest rank.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	return s[i]
}

// Element encodings used to upload GEMM inputs and read D back.

func bf16FromF32(x float32) uint16 {
	b := math.Float32bits(x)
	if x != x { // NaN
		return 0x7fc0
	}
	// round to nearest even
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

func f16FromF32(x float32) uint16 {
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
