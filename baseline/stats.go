package baseline

import (
	"math"
	"sort"

	"github.com/vigil-hpc/vigil/internal/stats"
)

// K is how many robust standard deviations (1.4826 × MAD) a healthy value
// may lie from the fleet median before it is an outlier.
const K = 4

// MaxFraction caps a proposed floor at MaxFraction × the median (and a
// proposed limit of a lower-is-better metric at median / MaxFraction), so
// that a very tight fleet does not get a limit that ordinary run-to-run
// noise would cross.
const MaxFraction = 0.9

// madScale turns a median absolute deviation into an estimate of the
// standard deviation of normally distributed values.
const madScale = 1.4826

// Stats are the robust statistics of one metric over one group of devices.
type Stats struct {
	// N is the number of values.
	N int
	// Median of the values.
	Median float64
	// MAD is the median absolute deviation from Median (unscaled).
	MAD float64
	// P1, P5, P95 and P99 are percentiles (linear interpolation).
	P1, P5, P95, P99 float64
	// Min and Max are the extremes.
	Min, Max float64
}

// Summarize returns the statistics of xs (not modified); N is 0 for none.
func Summarize(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	med := stats.Quantile(s, 0.5)
	dev := make([]float64, len(s))
	for i, x := range s {
		dev[i] = math.Abs(x - med)
	}
	sort.Float64s(dev)
	return Stats{
		N: len(s), Median: med, MAD: stats.Quantile(dev, 0.5),
		P1: stats.Quantile(s, 0.01), P5: stats.Quantile(s, 0.05), P95: stats.Quantile(s, 0.95), P99: stats.Quantile(s, 0.99),
		Min: s[0], Max: s[len(s)-1],
	}
}

// Limit is the proposed threshold for a metric with statistics s: for a
// higher-is-better metric the floor
//
//	min(median − K·1.4826·MAD, MaxFraction·median)
//
// and for a lower-is-better one the mirror
//
//	max(median + K·1.4826·MAD, median / MaxFraction).
//
// Median and MAD ignore up to half of the values, so a few bad nodes in the
// input move neither; the cap keeps the limit a margin away from the
// median when the fleet is very uniform (MAD near 0).
func Limit(s Stats, lower bool) float64 {
	sigma := madScale * s.MAD
	if lower {
		return math.Max(s.Median+K*sigma, s.Median/MaxFraction)
	}
	return math.Min(s.Median-K*sigma, MaxFraction*s.Median)
}

// Beyond reports whether x fails limit: below a floor, or above the limit
// of a lower-is-better metric.
func Beyond(x, limit float64, lower bool) bool {
	if lower {
		return x > limit
	}
	return x < limit
}
