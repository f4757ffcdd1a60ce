package baseline

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/report"
)

// A synthetic fleet for the fleet view: nodes of 8 GPUs and one HCA port,
// each part with its identity, running a prolog every slot (6 hours) and
// the health runs and re-tests a scenario adds.

var fleetStart = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// at is slot's start plus min minutes.
func at(slot, min int) time.Time {
	return fleetStart.Add(time.Duration(slot)*6*time.Hour + time.Duration(min)*time.Minute)
}

// box is a node as the reports show it.
type box struct {
	name string
	gpus []string // the UUID of each GPU by index
	guid string   // the HCA's node GUID
	// noIDs is a node of an older vigil: its reports list no components.
	noIDs bool
}

func newBox(name string) *box {
	b := &box{name: name, guid: "a088:c203:00" + name[1:] + ":0000"}
	for i := 0; i < 8; i++ {
		b.gpus = append(b.gpus, fmt.Sprintf("GPU-%s-%d", name, i))
	}
	return b
}

func (b *box) components() []benchmarks.Component {
	if b.noIDs {
		return nil
	}
	var out []benchmarks.Component
	for i, u := range b.gpus {
		out = append(out, benchmarks.Component{Kind: "gpu", Name: fmt.Sprintf("gpu%d", i), UUID: u,
			Model: "NVIDIA H100 80GB HBM3", PCI: fmt.Sprintf("0000:%02x:00.0", 0x18+0x10*i)})
	}
	return append(out, benchmarks.Component{Kind: "hca", Name: "mlx5_0/1", GUID: b.guid, Port: 1, Model: "MT4129"})
}

// fault is a check failing on a device ("" the node).
type fault struct{ check, device, reason string }

var (
	prologChecks = []string{"gpu-count", "ecc", "xid", "nvlink", "gemm", "rdma", "disk"}
	healthChecks = []string{"gpu-count", "ecc", "xid", "nvlink", "rdma", "disk"}
)

// perGPU are the per-GPU checks: value name, unit, healthy value, failed
// value, limit and comparison.
var perGPU = map[string]struct {
	name, unit       string
	good, bad, limit float64
	op               string
}{
	"ecc":    {"ecc_uncorrected", "count", 0, 3, 0, "<="},
	"xid":    {"xid_faults", "count", 0, 1, 0, "<="},
	"nvlink": {"links_down", "count", 0, 2, 0, "<="},
	"gemm":   {"tflops_bf16_8192", "TFLOPS", 700, 410, 600, ">="},
}

// synth writes the fleet's reports.
type synth struct {
	rng  *rand.Rand
	reps []*report.Report
}

// result is check's result on b with faults.
func (s *synth) result(b *box, check string, faults []fault) benchmarks.Result {
	r := benchmarks.Result{Check: check, Status: benchmarks.StatusPass, Attempts: 1}
	if p, ok := perGPU[check]; ok {
		for i := range b.gpus {
			v := benchmarks.Value{Device: fmt.Sprintf("gpu%d", i), Name: p.name, Value: p.good, Unit: p.unit,
				Threshold: ptr(p.limit), Op: p.op, Status: benchmarks.StatusPass}
			if check == "gemm" {
				v.Value = 700 + 7*s.rng.NormFloat64()
			}
			r.Values = append(r.Values, v)
		}
	}
	switch check {
	case "gpu-count":
		r.Values = []benchmarks.Value{{Name: "gpus", Value: 8, Unit: "count", Threshold: ptr(8), Op: ">=", Status: benchmarks.StatusPass}}
	case "rdma":
		r.Values = []benchmarks.Value{{Device: "mlx5_0/1", Name: "active", Value: 1, Status: benchmarks.StatusPass}}
	case "disk":
		r.Values = []benchmarks.Value{{Device: "/scratch", Name: "write_mib_s", Value: 2000, Unit: "MiB/s", Status: benchmarks.StatusPass}}
	}
	for _, f := range faults {
		if f.check != check {
			continue
		}
		r.Status, r.Reason, r.Device = benchmarks.StatusFail, f.reason, f.device
		for i := range r.Values {
			if r.Values[i].Device == f.device && f.device != "" {
				r.Values[i].Status = benchmarks.StatusFail
				if p, ok := perGPU[check]; ok {
					r.Values[i].Value = p.bad
				}
			}
		}
	}
	return r
}

// add writes one report of b: mode, start, the checks run, the action and
// the faults found.
func (s *synth) add(b *box, mode string, t time.Time, checks []string, a report.Action, faults ...fault) *report.Report {
	r := &report.Report{V: report.Version, Program: "vigil-prolog", Mode: mode, Node: b.name, Start: t,
		Duration: 90 * time.Second, Config: report.ConfigInfo{Found: true, Valid: true}, Verdict: benchmarks.StatusPass,
		Components: b.components(), Action: a}
	if mode == "prolog" {
		r.Job = fmt.Sprint(1000 + len(s.reps))
	}
	for _, c := range checks {
		r.Results = append(r.Results, s.result(b, c, faults))
	}
	r.Verdict = benchmarks.Verdict(r.Results)
	s.reps = append(s.reps, r)
	return r
}

// prolog is a healthy prolog of b in slot.
func (s *synth) prolog(b *box, slot int) { s.add(b, "prolog", at(slot, 0), prologChecks, none()) }

// prologs are b's healthy prologs in slots [from, to), except skip.
func (s *synth) prologs(b *box, from, to int, skip ...int) {
	for slot := from; slot < to; slot++ {
		if !slices.Contains(skip, slot) {
			s.prolog(b, slot)
		}
	}
}

// drain is the action of a run that drained for faults.
func drain(faults ...fault) report.Action {
	var es []benchmarks.DrainEntry
	for _, f := range faults {
		es = append(es, benchmarks.DrainEntry{Check: f.check, Reason: f.reason, Device: f.device})
	}
	return report.Action{Kind: report.ActionDrain, Reason: benchmarks.FormatDrain(es), Done: true}
}

// stay is the action of a run on a node that stays drained for faults.
func stay(faults ...fault) report.Action {
	a := drain(faults...)
	a.Kind, a.Done = report.ActionStay, false
	return a
}

func none() report.Action { return report.Action{Kind: report.ActionNone} }

func resume() report.Action { return report.Action{Kind: report.ActionResume, Done: true} }

// withRemedy is a with the remedy kind of device at t.
func withRemedy(a report.Action, kind, device string, t time.Time) report.Action {
	a.Remedy = &report.Remedy{Kind: kind, Check: "ecc", Device: device, At: t, Done: true}
	return a
}

// readBack is reps as a reader of the JSON files sees them.
func readBack(reps []*report.Report) ([]*report.Report, error) {
	var out []*report.Report
	for _, r := range reps {
		b, err := r.JSON()
		if err != nil {
			return nil, err
		}
		var back report.Report
		if err := json.Unmarshal(b, &back); err != nil {
			return nil, err
		}
		out = append(out, &back)
	}
	return out, nil
}

func ptr(v float64) *float64 { return &v }
