// Package stats holds the order statistics that vigil's checks, detectors
// and fleet tools share: one median, one quantile, one percentile, so that
// a "median" means the same thing in a check's evidence, a hang verdict and
// a proposed threshold.
package stats

import (
	"math"
	"slices"
)

// Median is the median of v (the mean of the two middle values for an even
// count); v is not modified. NaN when v is empty.
func Median(v []float64) float64 { return MedianInPlace(slices.Clone(v)) }

// MedianInPlace is Median, reordering c instead of copying it. It selects
// in linear time instead of sorting: the hang detector takes medians of
// every device on every sample of a suspect host.
func MedianInPlace(c []float64) float64 {
	n := len(c)
	if n == 0 {
		return math.NaN()
	}
	m := n / 2
	if n%2 == 1 {
		return selectKth(c, m)
	}
	lo := selectKth(c, m-1)
	// Everything from m on is >= c[m-1]: the median's upper half is their minimum.
	return (lo + slices.Min(c[m:])) / 2
}

// Quantile is the q-quantile (q in [0, 1]) of sorted, interpolating
// linearly between neighbouring values (the "type 7" rule of R and NumPy's
// default). NaN when sorted is empty.
func Quantile(sorted []float64, q float64) float64 {
	switch len(sorted) {
	case 0:
		return math.NaN()
	case 1:
		return sorted[0]
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	if lo < 0 {
		return sorted[0]
	}
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(lo)
	return sorted[lo] + f*(sorted[lo+1]-sorted[lo])
}

// Percentile is the p-th percentile (p in 0..100) of v by nearest rank: a
// value that was measured, never one between two; v is not modified. NaN
// when v is empty.
func Percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// selectKth reorders a so that a[k] is the k-th smallest (0-based), every
// element before it no larger and every element after it no smaller, and
// returns a[k] (Hoare's selection).
func selectKth(a []float64, k int) float64 {
	lo, hi := 0, len(a)-1
	for lo < hi {
		pivot := a[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
}
