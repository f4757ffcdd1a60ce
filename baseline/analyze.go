package baseline

import (
	"math"
	"sort"
)

// Analyze computes each group's statistics, current and proposed limits
// and outliers. For GEMM, whose values come per matrix size while the
// config key is per dtype, only the largest size gets the proposal (the
// check compares only that one with the limit).
func Analyze(groups []*Group) {
	largest := map[Key]int{}
	for _, g := range groups {
		key, _, size := configKey(g.Check, g.Name)
		k := Key{g.Model, g.Check, key}
		if size > largest[k] {
			largest[k] = size
		}
	}
	for _, g := range groups {
		sort.Slice(g.Samples, func(i, j int) bool { return g.Samples[i].Label() < g.Samples[j].Label() })
		xs := make([]float64, len(g.Samples))
		for i, s := range g.Samples {
			xs[i] = s.Value
		}
		g.Stats = Summarize(xs)
		g.Current = current(g.Samples)
		key, perModel, size := configKey(g.Check, g.Name)
		if size != largest[Key{g.Model, g.Check, key}] {
			key = ""
		}
		g.ConfigKey, g.PerModel = key, perModel
		g.Outliers = nil
		if key == "" || g.Stats.N < MinCount {
			g.HasProposal = false
			continue
		}
		g.Proposed, g.HasProposal = roundSafe(Limit(g.Stats, g.Lower), g.Lower), true
		for _, s := range g.Samples {
			if Beyond(s.Value, g.Proposed, g.Lower) {
				g.Outliers = append(g.Outliers, s)
			}
		}
	}
}

// current returns the most common limit the samples were compared with
// (the smallest of equally common ones), nil when none was.
func current(ss []Sample) *float64 {
	count := map[float64]int{}
	for _, s := range ss {
		if s.Threshold != nil {
			count[*s.Threshold]++
		}
	}
	var best *float64
	for v, n := range count {
		if best == nil || n > count[*best] || (n == count[*best] && v < *best) {
			x := v
			best = &x
		}
	}
	return best
}

// roundSafe rounds x to 3 significant digits in the permissive direction:
// a floor down, the limit of a lower-is-better metric up.
func roundSafe(x float64, lower bool) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	scale := math.Pow(10, math.Floor(math.Log10(x))-2)
	if lower {
		return math.Ceil(x/scale) * scale
	}
	return math.Floor(x/scale) * scale
}
