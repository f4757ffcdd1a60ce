// Package baseline reads the JSON reports of many nodes and proposes
// thresholds from them: per device model and metric it computes robust
// statistics (median, MAD, percentiles), names the devices far from the
// fleet, and writes the floors and limits as TOML for the checks' config.
// It is what `vigil-baseline` runs. Its fleet view (`vigil-baseline
// fleet`, BuildView) follows each component by its stable identity
// through all the reports: failures, remedies, drains and what became of
// them, per check the measured precision, and the lemons.
package baseline

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/report"
)

// MinCount is the fewest values of a metric for which a threshold is
// proposed; smaller groups get statistics only.
const MinCount = 5

// Source is a directory of JSON reports and the device model of the nodes
// that wrote them. Reports do not name the model of a device, so the model
// comes from the command line; empty means unknown.
type Source struct {
	Model string
	Dir   string
}

// ParseSource parses "DIR" or "MODEL=DIR"; a plain DIR gets model def.
func ParseSource(arg, def string) Source {
	if i := strings.Index(arg, "="); i > 0 {
		return Source{Model: arg[:i], Dir: arg[i+1:]}
	}
	return Source{Model: def, Dir: arg}
}

// Sample is one device's reading of a metric.
type Sample struct {
	// Node is the Slurm node name of the report.
	Node string
	// Device is the value's device ("gpu3", "/scratch"); empty for the node.
	Device string
	// Value is the reading, in the metric's unit.
	Value float64
	// Threshold is the limit the run compared it with, if any.
	Threshold *float64
}

// Label names the sample's device in output: "node:device" ("n12:gpu3",
// "n12:/scratch") or "node".
func (s Sample) Label() string {
	if s.Device == "" {
		return s.Node
	}
	return s.Node + ":" + s.Device
}

// Key identifies one metric of one check for one device model.
type Key struct {
	Model, Check, Name string
}

// Group is one metric over the fleet, with what is proposed for it.
type Group struct {
	Key
	// Unit of the values.
	Unit string
	// Lower is true when lower is better (latency).
	Lower bool
	// ConfigKey is the threshold's key in the check's config
	// ("tflops_bf16", "min_write_mib_s"); empty when the metric has none.
	ConfigKey string
	// PerModel is true when the key lives under [checks.NAME.thresholds."MODEL"],
	// false when directly under [checks.NAME].
	PerModel bool
	// Samples are the devices' readings, sorted by node and device.
	Samples []Sample
	// Stats are the statistics of Samples.
	Stats Stats
	// Current is the limit the reports were compared with (the most common
	// one), nil when none.
	Current *float64
	// Proposed is the proposed limit (Limit), set when HasProposal.
	Proposed float64
	// HasProposal is false for metrics without a config key or with fewer
	// than MinCount values.
	HasProposal bool
	// Outliers are the samples beyond Proposed.
	Outliers []Sample
}

// units are the units of the performance metrics that get a baseline
// (GEMM, launch latency, copies, collectives, disk); counts and states of
// the health facts do not.
var units = map[string]bool{"TFLOPS": true, "us": true, "ms": true, "GB/s": true, "MiB/s": true}

// Read reads every *.json report in the sources' directories and returns
// one group per metric with its samples: for each node and check, the
// values of the newest report (by start time) in which the check recorded
// any, so that older runs and health-only runs do not count. Files that
// are not reports are skipped and named in the notes, and so are the
// per-link values of PerLinkChecks, which are not device metrics.
func Read(sources []Source) (groups []*Group, notes []string, err error) {
	read, notes, err := readSources(sources)
	if err != nil {
		return nil, nil, err
	}
	groups, more := Groups(read)
	return groups, append(notes, more...), nil
}

// Sourced are the reports read from one source.
type Sourced struct {
	Source
	Reports []*report.Report
}

// readSources reads the reports of each source, naming in notes the files
// that are not reports.
func readSources(sources []Source) ([]Sourced, []string, error) {
	var out []Sourced
	var notes []string
	for _, src := range sources {
		reps, n, err := readDir(src.Dir)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, Sourced{Source: src, Reports: reps})
		notes = append(notes, n...)
	}
	return out, notes, nil
}

// readDir reads every *.json report in dir (not recursive); a file that is
// not a report is named in notes.
func readDir(dir string) (reps []*report.Report, notes []string, err error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("baseline: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("baseline: %w", err)
	}
	for _, f := range files {
		r, err := readReport(f)
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		reps = append(reps, r)
	}
	return reps, notes, nil
}

// Groups returns one group per metric of the reports read (Read), and a
// note per check whose per-link values were left out.
func Groups(read []Sourced) (groups []*Group, notes []string) {
	newest := newestReports(read)
	byKey := map[Key]*Group{}
	perLink := map[string]int{}
	for k, r := range newest {
		for _, res := range r.Results {
			if res.Check != k.check {
				continue
			}
			if isPerLink(res.Check) {
				perLink[res.Check] += len(res.Values)
				continue
			}
			addSamples(byKey, k.model, r.Node, res)
		}
	}
	for _, g := range byKey {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Key.less(groups[j].Key) })
	return groups, perLinkNotes(perLink)
}

// nodeCheck identifies one check on one node of one model.
type nodeCheck struct{ model, node, check string }

// newestReports returns, per model, node and check, the newest report in
// which the check recorded values.
func newestReports(read []Sourced) map[nodeCheck]*report.Report {
	newest := map[nodeCheck]*report.Report{}
	for _, src := range read {
		for _, r := range src.Reports {
			for _, res := range r.Results {
				k := nodeCheck{src.Model, r.Node, res.Check}
				if old := newest[k]; len(res.Values) > 0 && (old == nil || r.Start.After(old.Start)) {
					newest[k] = r
				}
			}
		}
	}
	return newest
}

// addSamples adds the performance values of res, measured on node of
// model, to their groups in byKey.
func addSamples(byKey map[Key]*Group, model, node string, res benchmarks.Result) {
	for _, v := range res.Values {
		if !units[v.Unit] || math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
			continue
		}
		key := Key{Model: model, Check: res.Check, Name: v.Name}
		if _, perModel, _ := configKey(res.Check, v.Name); !perModel {
			key.Model = "" // one limit for every node: pool the models
		}
		g := byKey[key]
		if g == nil {
			g = &Group{Key: key, Unit: v.Unit, Lower: v.Op == "<=" || (v.Op == "" && (v.Unit == "us" || v.Unit == "ms"))}
			byKey[key] = g
		}
		g.Samples = append(g.Samples, Sample{Node: node, Device: v.Device, Value: v.Value, Threshold: v.Threshold})
	}
}

// perLinkNotes names the per-link values left out, one note per check.
func perLinkNotes(perLink map[string]int) []string {
	var notes []string
	for _, c := range PerLinkChecks {
		if n := perLink[c]; n > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d values left out: they are per link (node to peer), not device "+
				"metrics, and are judged against the job's own links, so no fleet threshold applies", c, n))
		}
	}
	return notes
}

func (k Key) less(o Key) bool {
	if k.Model != o.Model {
		return k.Model < o.Model
	}
	if k.Check != o.Check {
		return k.Check < o.Check
	}
	return k.Name < o.Name
}

func readReport(path string) (*report.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a report: %w", path, err)
	}
	if r.V == 0 || r.Node == "" {
		return nil, fmt.Errorf("%s: not a report: %w", path, errors.New("no format version or node"))
	}
	return &r, nil
}
