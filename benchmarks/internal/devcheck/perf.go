package devcheck

import (
	"fmt"
	"math"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/stats"
)

// Thresholds are per-device-model limits: model key → metric → limit.
// A model key matches a device whose name contains it (case-insensitive);
// the longest matching key wins, so "H100 PCIe" overrides "H100".
type Thresholds map[string]map[string]float64

// Merge returns a copy of base with the limits of over replacing or adding
// to it, metric by metric. Neither is modified; either may be nil.
func (base Thresholds) Merge(over Thresholds) Thresholds {
	out := Thresholds{}
	for _, t := range []Thresholds{base, over} {
		for m, lim := range t {
			if out[m] == nil {
				out[m] = map[string]float64{}
			}
			for k, v := range lim {
				out[m][k] = v
			}
		}
	}
	return out
}

// Lookup returns the limit for metric on a device called name, and the
// model key it came from.
func (t Thresholds) Lookup(name, metric string) (float64, string, bool) {
	best := ""
	for key, lim := range t {
		if _, ok := lim[metric]; !ok {
			continue
		}
		if strings.Contains(strings.ToLower(name), strings.ToLower(key)) && len(key) > len(best) {
			best = key
		}
	}
	if best == "" {
		return 0, "", false
	}
	return t[best][metric], best, true
}

// Peers configures the comparison of each device with the node's median.
type Peers struct {
	// Fraction: a device whose value is below Fraction × the node median
	// (for higher-is-better metrics) or above median / Fraction (for
	// lower-is-better ones) fails, even above its absolute floor. 0 disables.
	Fraction float64 `toml:"peer_fraction"`
	// Min is the fewest devices for which the comparison is made.
	Min int `toml:"peer_min_devices"`
}

// ValidatePeers reports out-of-range peer settings, naming the key. It is
// a function, not a method, so that settings structs embedding Peers do not
// gain a Validate that checks only part of them.
func ValidatePeers(p Peers) error {
	if p.Fraction < 0 || p.Fraction > 1 {
		return benchmarks.BadSetting("peer_fraction", "%v: want 0 to 1", p.Fraction)
	}
	if p.Min < 2 {
		return benchmarks.BadSetting("peer_min_devices", "%d: want 2 or more", p.Min)
	}
	return nil
}

// Metric describes one measured quantity.
type Metric struct {
	// Name is the value name ("tflops_bf16_8192").
	Name string
	// Key is the threshold key ("tflops_bf16"); empty for none.
	Key string
	// Unit of the value.
	Unit string
	// Lower is true when lower is better (latency).
	Lower bool
	// Label is how messages name it ("bf16 GEMM").
	Label string
}

// Reading is one device's value of a metric.
type Reading struct {
	Device string // "gpu3"
	Model  string // device name, matched against Thresholds keys
	Value  float64
}

// Finding is a failed comparison of Evaluate.
type Finding struct {
	Device string
	// Peers is true when the device is below (above) its peers rather
	// than its absolute limit.
	Peers   bool
	Message string
}

// Tokens are the reason tokens of a metric's failed comparisons, each
// spelled out whole so that the token sinfo -R shows can be found in the
// source as it reads ("GEMMBelowThreshold", never "GEMM"+"BelowThreshold").
type Tokens struct {
	// Limit is the token of a reading past its model's limit ("GEMMBelowThreshold").
	Limit string
	// Peers is the token of a reading past the node's median ("GEMMBelowPeers");
	// empty where readings are not compared with peers.
	Peers string
}

// List returns the tokens that are set, Limit first.
func (t Tokens) List() []string {
	var out []string
	for _, s := range []string{t.Limit, t.Peers} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Reason is the reason token of f: t.Peers for a finding against the
// peers, t.Limit for one against the limit.
func (f Finding) Reason(t Tokens) string {
	if f.Peers {
		return t.Peers
	}
	return t.Limit
}

// Evaluate compares each reading with its model's limit (when m.Key has
// one in th) and, with p, with the median of all readings. It returns one
// Value per reading, in order, and the failures.
func Evaluate(m Metric, rs []Reading, th Thresholds, p Peers) ([]benchmarks.Value, []Finding) {
	var vals []benchmarks.Value
	var fs []Finding
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = r.Value
	}
	med := stats.Median(xs)
	usePeers := p.Fraction > 0 && len(rs) >= p.Min
	op := ">="
	if m.Lower {
		op = "<="
	}
	for _, r := range rs {
		v := benchmarks.Value{Device: r.Device, Name: m.Name, Value: Round(r.Value), Unit: m.Unit, Status: benchmarks.StatusPass}
		if lim, _, ok := th.Lookup(r.Model, m.Key); m.Key != "" && ok {
			l := lim
			v.Threshold, v.Op = &l, op
			if (!m.Lower && r.Value < lim) || (m.Lower && r.Value > lim) || math.IsNaN(r.Value) {
				v.Status = benchmarks.StatusFail
				fs = append(fs, Finding{Device: r.Device, Message: fmt.Sprintf("%s %s %.4g %s, limit %s %.4g", r.Device, m.Label, r.Value, m.Unit, op, lim)})
			}
		}
		if usePeers && v.Status == benchmarks.StatusPass {
			if (!m.Lower && r.Value < p.Fraction*med) || (m.Lower && r.Value > med/p.Fraction) {
				v.Status = benchmarks.StatusFail
				fs = append(fs, Finding{Device: r.Device, Peers: true, Message: fmt.Sprintf("%s %s %.4g %s is %.0f%% of the node median %.4g", r.Device, m.Label, r.Value, m.Unit, 100*r.Value/med, med)})
			}
		}
		vals = append(vals, v)
	}
	return vals, fs
}

// Round keeps reports readable: 4 digits after the point.
func Round(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	return math.Round(x*1e4) / 1e4
}

// DecodeThresholds decodes the check's config table into s, which holds
// the defaults, so that its [thresholds] table adds to the shipped limits
// base, model by model and metric by metric, instead of replacing them: th
// points at s's Thresholds field, which is cleared before decoding and then
// set to base merged with what the table held.
func DecodeThresholds(env *benchmarks.Env, s any, th *Thresholds, base Thresholds) error {
	*th = nil
	if err := Decode(env, s); err != nil {
		return err
	}
	*th = base.Merge(*th)
	return nil
}
