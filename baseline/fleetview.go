package baseline

import (
	"sort"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/report"
)

// The fleet view (`vigil-baseline fleet`, docs/operations.md "A memory
// per component") reads the reports of many nodes over time and follows
// each component by its stable identity (benchmarks.Component.ID) from
// node to node: its failures, remedies and drains, the lemons among them,
// and for every check how often its drains held up.

// Outcome is what became of a drain.
type Outcome string

// Outcomes of a drain (classify).
const (
	// Confirmed: the check failed again on the same part (on the next
	// run, or after a remedy).
	Confirmed Outcome = "confirmed"
	// LikelyFalse: the check passed its re-test on the same part with no
	// remedy in between.
	LikelyFalse Outcome = "likely-false"
	// Unresolved: no re-test yet, or one that came after a remedy and
	// passed (the remedy may have fixed a real fault).
	Unresolved Outcome = "unresolved"
)

// Drain is one check put on a node's vigil drain reason by a run, and what
// became of it.
type Drain struct {
	// At is the start of the run that drained; Node and Mode name it.
	At         time.Time
	Node, Mode string
	// Check and Reason are the drain entry's check and reason token.
	Check, Reason string
	// Device is the device the entry names ("gpu3"), "" for the node.
	Device string
	// Component is the device's stable identity, "" when it has none (a
	// node-level drain, "/scratch", a report without components).
	Component string
	// Outcome and Why say what became of it, Why in words.
	Outcome Outcome
	Why     string

	run int // the drain's run in the fleet
}

// CheckPrecision is how often a check's drains held up.
type CheckPrecision struct {
	// Check is the check's name.
	Check string
	// Drains counts its drains, the others those of each outcome.
	Drains, Confirmed, LikelyFalse, Unresolved int
	// Thresholds are the limits vigil-baseline proposes for the check from
	// the same reports ("H100 tflops_bf16: >= 600 now, >= 631 proposed").
	Thresholds []string
}

// Precision is Confirmed / (Confirmed + LikelyFalse); ok is false when no
// drain of the check was resolved either way.
func (p CheckPrecision) Precision() (precision float64, ok bool) {
	n := p.Confirmed + p.LikelyFalse
	if n == 0 {
		return 0, false
	}
	return float64(p.Confirmed) / float64(n), true
}

// Event kinds of a component's history.
const (
	EventSeen   = "seen"   // first seen, in a report's components
	EventMoved  = "moved"  // seen on another node than last time
	EventFail   = "fail"   // a check failed on it
	EventRemedy = "remedy" // a remedy of its node or of it
)

// Event is one thing that happened to a component.
type Event struct {
	// At is the start of the run it was seen in.
	At time.Time
	// Node and Name say where it was: the node and its name there ("gpu3").
	Node, Name string
	// Kind is one of the Event* constants.
	Kind string
	// Check, Reason and Mode are the failed check, its reason and the
	// run's mode, for EventFail; Drain is the drain it made, if it made one.
	Check, Reason, Mode string
	Drain               *Drain
	// Detail is the remedy (EventRemedy) or where it was before (EventMoved,
	// "n03 gpu3").
	Detail string
}

// History is one component's life in the reports.
type History struct {
	// ID is its stable identity; Component is it as last seen.
	ID        string
	Component benchmarks.Component
	// Nodes are the nodes it was seen in, in order (a node again after
	// another is listed again).
	Nodes []string
	// FailedOn are the nodes where a check failed on it, sorted.
	FailedOn []string
	// FailedRuns is the number of runs in which a check failed on it.
	FailedRuns int
	// Episodes are the starts of its failure episodes (LemonRule).
	Episodes []time.Time
	// Drains and Remedies count its drains and the remedies of it or its node.
	Drains, Remedies int
	// Events are its failures, remedies, sightings and moves, in time order.
	Events []Event
	// Lemon says why it is a lemon, "" when it is not.
	Lemon string
}

// View is the fleet view of a set of reports.
type View struct {
	// Reports and Nodes count what was read; From and To span the runs.
	Reports, Nodes int
	From, To       time.Time
	// Identified is the number of components with a stable identity.
	Identified int
	// Rule is the lemon rule applied.
	Rule LemonRule
	// Checks are the checks that drained, by name.
	Checks []CheckPrecision
	// Drains are all drains, in time order.
	Drains []*Drain
	// Histories are the components that failed or had a remedy, by ID;
	// Lemons those of them that are lemons.
	Histories []*History
	Lemons    []*History
}

// sortRuns orders reports by start time, then by file name (node, mode).
func sortRuns(reps []*report.Report) {
	sort.SliceStable(reps, func(i, j int) bool {
		if !reps[i].Start.Equal(reps[j].Start) {
			return reps[i].Start.Before(reps[j].Start)
		}
		return reps[i].FileName() < reps[j].FileName()
	})
}

// BuildView follows the components and drains of reps (any order) under
// rule. thresholds gives, per check, the limits proposed for it (nil:
// none).
func BuildView(reps []*report.Report, rule LemonRule, thresholds map[string][]string) *View {
	reps = append([]*report.Report(nil), reps...)
	sortRuns(reps)
	f := newFleet(reps)
	v := &View{Reports: len(reps), Rule: rule, Identified: len(f.parts)}
	nodes := map[string]bool{}
	for _, r := range reps {
		nodes[r.Node] = true
	}
	v.Nodes = len(nodes)
	if len(reps) > 0 {
		v.From, v.To = reps[0].Start, reps[len(reps)-1].Start
	}
	v.Drains = f.drains()
	for _, d := range v.Drains {
		d.Outcome, d.Why = classify(f.steps(d))
	}
	v.Checks = precisions(v.Drains, thresholds)
	v.Histories = f.histories(v.Drains)
	for _, h := range v.Histories {
		if h.Lemon = rule.Judge(h); h.Lemon != "" {
			v.Lemons = append(v.Lemons, h)
		}
	}
	return v
}

// precisions counts each check's drains by outcome.
func precisions(drains []*Drain, thresholds map[string][]string) []CheckPrecision {
	by := map[string]*CheckPrecision{}
	for _, d := range drains {
		p := by[d.Check]
		if p == nil {
			p = &CheckPrecision{Check: d.Check, Thresholds: thresholds[d.Check]}
			by[d.Check] = p
		}
		p.Drains++
		switch d.Outcome {
		case Confirmed:
			p.Confirmed++
		case LikelyFalse:
			p.LikelyFalse++
		default:
			p.Unresolved++
		}
	}
	out := make([]CheckPrecision, 0, len(by))
	for _, p := range by {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Check < out[j].Check })
	return out
}
