package hang

import (
	"math"
	"slices"
)

// The statistics the detector takes of a window's readings: median (by
// selection, in the detector's scratch space), standard deviation, median
// absolute deviation, and the rounding used in evidence.

// round rounds x to three decimals, for evidence.
func round(x float64) float64 { return math.Round(x*1000) / 1000 }

// median of v (not modified), using the detector's scratch space.
func (d *Detector) median(v []float64) float64 {
	d.vals = append(d.vals[:0], v...)
	return medianInPlace(d.vals)
}

// median of v (not modified), in a copy.
func median(v []float64) float64 { return medianInPlace(slices.Clone(v)) }

// medianInPlace returns the median of c, reordering c. It selects in
// linear time instead of sorting: the detector takes medians of every device
// on every sample of a suspect host.
func medianInPlace(c []float64) float64 {
	n := len(c)
	if n == 0 {
		return 0
	}
	m := n / 2
	if n%2 == 1 {
		return selectKth(c, m)
	}
	lo := selectKth(c, m-1)
	// Everything from m on is >= c[m-1]: the median's upper half is their minimum.
	return (lo + slices.Min(c[m:])) / 2
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

// stddev is the population standard deviation of v; 0 for fewer than two values.
func stddev(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	var mean float64
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(len(v)))
}

// mad is the median absolute deviation of v around med.
func (d *Detector) mad(v []float64, med float64) float64 {
	d.vals = d.vals[:0]
	for _, x := range v {
		d.vals = append(d.vals, math.Abs(x-med))
	}
	return medianInPlace(d.vals)
}
