package baseline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/report"
)

// metricSpec is one metric of the synthetic fleet.
type metricSpec struct {
	check, name, unit string
	lower             bool
	perNode           bool    // one value per node (collectives, disk), not per GPU
	device            string  // the device of a per-node value
	median            float64 // healthy median, H100
	drift             float64 // H200 median / H100 median
	spread            float64 // healthy relative standard deviation
	current           float64 // shipped limit on the values, 0 for none
}

var fleetMetrics = []metricSpec{
	{check: "gemm", name: "tflops_bf16_8192", unit: "TFLOPS", median: 700, drift: 1.1, spread: 0.01, current: 600},
	{check: "gemm", name: "tflops_bf16_4096", unit: "TFLOPS", median: 640, drift: 1.1, spread: 0.015},
	{check: "kernel-launch", name: "event_us", unit: "us", lower: true, median: 5.5, drift: 1, spread: 0.03, current: 8},
	{check: "kernel-launch", name: "wall_us_p99", unit: "us", lower: true, median: 17, drift: 1, spread: 0.05},
	{check: "copy", name: "h2d_gbps", unit: "GB/s", median: 54, drift: 1.01, spread: 0.02, current: 35},
	{check: "allreduce", name: "busbw_gbps", unit: "GB/s", perNode: true, median: 360, drift: 1.05, spread: 0.02, current: 300},
	{check: "disk", name: "write_mib_s", unit: "MiB/s", perNode: true, device: "/scratch", median: 2000, drift: 1, spread: 0.03},
}

// planted are the slow devices of the synthetic fleet: model, node index,
// device ("" for the node), metric name and the factor on the healthy median.
type planted struct {
	model  string
	node   int
	device string
	name   string
	factor float64
}

var plantedFaults = []planted{
	{"H100", 7, "gpu3", "tflops_bf16_8192", 0.62},
	{"H100", 101, "gpu0", "tflops_bf16_8192", 0.8},
	{"H200", 33, "gpu5", "tflops_bf16_8192", 0.85},
	{"H200", 40, "gpu1", "h2d_gbps", 0.5},
	{"H100", 12, "gpu6", "event_us", 2.5},
	{"H200", 77, "", "busbw_gbps", 0.7},
	{"H100", 150, "/scratch", "write_mib_s", 0.4},
}

const (
	fleetNodes   = 230 // per model
	fleetGPUs    = 8
	fleetReports = 500 // 460 current, 20 older with bad values, 20 newer health runs
)

// writeFleet writes 2×230 current reports, 20 older ones with bad GEMM
// values and 20 newer health runs without performance values (500 in
// all), and returns the sources. The device models differ by a drift of each metric.
func writeFleet(t *testing.T) []Source {
	t.Helper()
	rng := rand.New(rand.NewPCG(13, 2026))
	root := t.TempDir()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var sources []Source
	for _, model := range []string{"H100", "H200"} {
		dir := filepath.Join(root, strings.ToLower(model))
		sources = append(sources, Source{Model: model, Dir: dir})
		for n := range fleetNodes {
			node := fmt.Sprintf("%s-n%03d", strings.ToLower(model), n)
			r := fleetReport(node, "prolog", start.Add(time.Duration(n)*time.Second))
			for _, m := range fleetMetrics {
				r.Results = append(r.Results, fleetResult(rng, model, n, m))
			}
			mustWrite(t, dir, r)
			if n%23 == 5 {
				old := fleetReport(node, "prolog", start.Add(-time.Hour))
				old.Results = []benchmarks.Result{{Check: "gemm", Status: benchmarks.StatusFail, Values: []benchmarks.Value{
					{Device: "gpu0", Name: "tflops_bf16_8192", Value: 200, Unit: "TFLOPS", Status: benchmarks.StatusFail}}}}
				mustWrite(t, dir, old)
				health := fleetReport(node, "health", start.Add(time.Hour))
				health.Results = []benchmarks.Result{{Check: "gpu-count", Status: benchmarks.StatusPass, Values: []benchmarks.Value{
					{Name: "gpus", Value: 8, Unit: "count", Status: benchmarks.StatusPass}}}}
				mustWrite(t, dir, health)
			}
		}
	}
	if files, _ := filepath.Glob(filepath.Join(root, "*", "*.json")); len(files) != fleetReports {
		t.Fatalf("%d reports, want %d", len(files), fleetReports)
	}
	return sources
}

func fleetReport(node, mode string, start time.Time) *report.Report {
	return &report.Report{V: report.Version, Program: "vigil-prolog", Mode: mode, Node: node, Start: start,
		Accelerators: report.Accelerators{Count: benchmarks.Hardware{benchmarks.VendorNVIDIA: fleetGPUs}}, Verdict: benchmarks.StatusPass}
}

func mustWrite(t *testing.T, dir string, r *report.Report) {
	t.Helper()
	if _, err := report.WriteJSON(dir, r); err != nil {
		t.Fatal(err)
	}
}

// fleetResult is one check's result on node n: healthy values with noise
// clipped at ±3 standard deviations, and the planted faults.
func fleetResult(rng *rand.Rand, model string, n int, m metricSpec) benchmarks.Result {
	med := m.median
	if model == "H200" {
		med *= m.drift
	}
	devices := []string{m.device}
	if !m.perNode {
		devices = nil
		for g := range fleetGPUs {
			devices = append(devices, fmt.Sprintf("gpu%d", g))
		}
	}
	res := benchmarks.Result{Check: m.check, Status: benchmarks.StatusPass, Attempts: 1}
	for _, dev := range devices {
		z := math.Max(-3, math.Min(3, rng.NormFloat64()))
		x := med * (1 + m.spread*z)
		for _, p := range plantedFaults {
			if p.model == model && p.node == n && p.device == dev && p.name == m.name {
				x = med * p.factor
			}
		}
		v := benchmarks.Value{Device: dev, Name: m.name, Value: math.Round(x*1e4) / 1e4, Unit: m.unit, Status: benchmarks.StatusPass}
		if m.current > 0 {
			c := m.current
			v.Threshold, v.Op = &c, ">="
			if m.lower {
				v.Op = "<="
			}
		}
		res.Values = append(res.Values, v)
	}
	return res
}

func plantedLabel(p planted) string {
	node := fmt.Sprintf("%s-n%03d", strings.ToLower(p.model), p.node)
	if p.device == "" {
		return node
	}
	return node + ":" + p.device
}

// TestFleetFlagsThePlantedOutliers: on 500 reports of two GPU models that
// differ by a drift, the proposal flags exactly the planted slow devices.
func TestFleetFlagsThePlantedOutliers(t *testing.T) {
	sources := writeFleet(t)
	groups, notes, err := Read(sources)
	if err != nil || len(notes) > 0 {
		t.Fatalf("Read: %v %v", err, notes)
	}
	Analyze(groups)
	var got, want []string
	for _, g := range groups {
		for _, o := range g.Outliers {
			got = append(got, g.Name+" "+o.Label())
		}
	}
	for _, p := range plantedFaults {
		want = append(want, p.name+" "+plantedLabel(p))
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("outliers:\n got %q\nwant %q", got, want)
	}
	byKey := map[Key]*Group{}
	for _, g := range groups {
		byKey[g.Key] = g
	}
	h100, h200 := byKey[Key{"H100", "gemm", "tflops_bf16_8192"}], byKey[Key{"H200", "gemm", "tflops_bf16_8192"}]
	if h100 == nil || h200 == nil || h100.Stats.N != fleetNodes*fleetGPUs {
		t.Fatalf("gemm groups: %+v %+v", h100, h200)
	}
	// The planted H200 device is slow for an H200 but fast for an H100:
	// only a floor per model catches it.
	if slow := 0.85 * h200.Stats.Median; !(h200.Proposed > slow && slow > h100.Proposed) {
		t.Errorf("floors H100 %v, H200 %v: the planted H200 at %v should fall between them", h100.Proposed, h200.Proposed, slow)
	}
	if g := byKey[Key{"", "disk", "write_mib_s"}]; g == nil || g.Stats.N != 2*fleetNodes || g.PerModel {
		t.Errorf("disk is not pooled over the models: %+v", g)
	}
	if g := byKey[Key{"H100", "gemm", "tflops_bf16_4096"}]; g == nil || g.HasProposal {
		t.Errorf("the smaller GEMM size got a proposal: %+v", g)
	}
}

// TestFleetTOMLFedBack: the proposed TOML parses, and its limits, looked up
// the way the checks do (longest model key contained in the device name),
// pass every healthy device and fail every planted one.
func TestFleetTOMLFedBack(t *testing.T) {
	groups, _, err := Read(writeFleet(t))
	if err != nil {
		t.Fatal(err)
	}
	Analyze(groups)
	var b strings.Builder
	if err := WriteTOML(&b, groups); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Checks map[string]map[string]any `toml:"checks"`
	}
	if _, err := toml.Decode(b.String(), &cfg); err != nil {
		t.Fatalf("TOML does not parse: %v\n%s", err, b.String())
	}
	isPlanted := map[string]bool{}
	for _, p := range plantedFaults {
		isPlanted[p.name+" "+plantedLabel(p)] = true
	}
	checked := 0
	for _, g := range groups {
		if g.ConfigKey == "" {
			continue
		}
		deviceName := map[string]string{"H100": "NVIDIA H100 80GB HBM3", "H200": "NVIDIA H200"}[g.Model]
		lim, ok := number(cfg.Checks[g.Check][g.ConfigKey])
		if g.PerModel {
			lim, ok = lookup(cfg.Checks[g.Check]["thresholds"], deviceName, g.ConfigKey)
		}
		if !ok {
			t.Errorf("%v: no limit %s in the TOML", g.Key, g.ConfigKey)
			continue
		}
		for _, s := range g.Samples {
			checked++
			if fails := Beyond(s.Value, lim, g.Lower); fails != isPlanted[g.Name+" "+s.Label()] {
				t.Errorf("%v %s %v against %v: fails=%v", g.Key, s.Label(), s.Value, lim, fails)
			}
		}
	}
	if checked < 4*fleetNodes*fleetGPUs {
		t.Errorf("only %d values checked", checked)
	}
}

// lookup is the checks' rule: the longest model key that the device name
// contains (case-insensitive) and that has the metric wins.
func lookup(thresholds any, name, metric string) (float64, bool) {
	th, _ := thresholds.(map[string]any)
	best, lim, found := "", 0.0, false
	for key, t := range th {
		m, _ := t.(map[string]any)
		if v, ok := number(m[metric]); ok && strings.Contains(strings.ToLower(name), strings.ToLower(key)) && len(key) > len(best) {
			best, lim, found = key, v, true
		}
	}
	return lim, found
}

// number is a TOML number as a float64 (the checks decode either kind
// into their float64 limits).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}
