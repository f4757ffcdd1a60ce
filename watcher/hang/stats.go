package hang

import (
	"math"

	"github.com/vigil-hpc/vigil/internal/stats"
)

// The statistics the detector takes of a window's readings: median (by
// selection, in the detector's scratch space), standard deviation, median
// absolute deviation (evidence rounds them with hangfmt.Round).

// median of v (not modified), using the detector's scratch space; 0 for none.
func (d *Detector) median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	d.vals = append(d.vals[:0], v...)
	return stats.MedianInPlace(d.vals)
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
	if len(d.vals) == 0 {
		return 0
	}
	return stats.MedianInPlace(d.vals)
}
