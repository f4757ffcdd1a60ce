package baseline

import (
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/report"
)

// drains finds the drains of the fleet: each check a run put on its
// node's vigil drain reason that was not on it before. The reason the
// node carries is followed from report to report: a drain carried out or
// a drain that stays sets it; a resume, another party's state, or a run
// with nothing to do clears it; and a prolog means the node was not
// drained (Slurm gives no job to a drained node), so an admin's resume
// between reports is seen too. A failure while the check is already on
// the reason is no new drain; it counts as the drain failing again. Dry
// runs, drains scontrol refused and the guard's held checks drain nothing.
func (f *fleet) drains() []*Drain {
	var out []*Drain
	onReason := map[string]map[string]bool{}
	for i, r := range f.runs {
		rep := r.rep
		if rep.DryRun {
			continue
		}
		if rep.Mode == "prolog" {
			delete(onReason, rep.Node)
		}
		entries, _ := benchmarks.ParseDrain(rep.Action.Reason)
		switch a := rep.Action; {
		case a.Kind == report.ActionDrain && a.Done:
			failed := map[string]bool{}
			for _, res := range rep.Results {
				failed[res.Check] = failed[res.Check] || res.Status == benchmarks.StatusFail
			}
			for _, e := range entries {
				if e.Check == benchmarks.BudgetCheck || !failed[e.Check] || onReason[rep.Node][e.Check] {
					continue
				}
				d := &Drain{At: rep.Start, Node: rep.Node, Mode: rep.Mode, Check: e.Check, Reason: e.Reason, Device: e.Device, run: i}
				if c, ok := r.resolve(e.Device); ok {
					d.Component = c.ID()
				}
				out = append(out, d)
			}
			onReason[rep.Node] = checksOf(entries)
		case a.Kind == report.ActionStay:
			onReason[rep.Node] = checksOf(entries)
		case a.Kind == report.ActionDrain, a.Kind == report.ActionHold:
			// not carried out, or the job held: the node is as it was
		default:
			delete(onReason, rep.Node)
		}
	}
	return out
}

// checksOf is the set of checks a drain reason names.
func checksOf(entries []benchmarks.DrainEntry) map[string]bool {
	m := map[string]bool{}
	for _, e := range entries {
		m[e.Check] = true
	}
	return m
}

// step is what one run after a drain says of the drained part: whether
// it moved in from another node first, what the drained check said of it
// (pass, fail, or "" nothing), and the remedy the run carried out on it
// after its checks.
type step struct {
	Run    string // the run, for people: "n03 2026-11-02 10:00:00"
	Moved  string // "moved from n03", "" when it did not move
	Retest benchmarks.Status
	Remedy string
}

// steps lists what the runs after d say of its part: the runs in which
// the part is known, wherever it went, when it has a stable identity;
// else the runs of its node. The drain's own run adds only its remedy.
func (f *fleet) steps(d *Drain) []step {
	first := f.runs[d.run]
	names := f.drainedNames(first, d)
	steps := []step{{Run: runName(first.rep), Remedy: remedyOn(first.rep, names)}}
	list, node := f.byNode[d.Node], d.Node
	if d.Component != "" {
		list = f.byPart[d.Component]
	}
	for _, j := range list {
		if j <= d.run {
			continue
		}
		r := f.runs[j]
		s := step{Run: runName(r.rep)}
		if d.Component != "" {
			names = r.namesOf(d.Component)
			if r.rep.Node != node {
				s.Moved, node = "moved from "+node, r.rep.Node
			}
		}
		for _, res := range r.rep.Results {
			if res.Check == d.Check {
				s.Retest = statusOn(res, names)
				break
			}
		}
		s.Remedy = remedyOn(r.rep, names)
		steps = append(steps, s)
	}
	return steps
}

// drainedNames are the names of d's device in its own run (none for a
// node-level drain).
func (f *fleet) drainedNames(r *fleetRun, d *Drain) []string {
	if d.Device == "" {
		return nil
	}
	if d.Component != "" {
		if names := r.namesOf(d.Component); len(names) > 0 {
			return names
		}
	}
	return []string{d.Device}
}

// runName names a run for people: "n03 2026-11-02 10:00:00".
func runName(rep *report.Report) string { return rep.Node + " " + stamp(rep.Start) }

// classify decides what became of a drain from the steps after it:
//
//   - the check failed again on the part: Confirmed, whether a remedy
//     came first or not (the remedy did not fix it);
//   - it passed with no remedy and no move in between: LikelyFalse (the
//     part was fine, or its fault was too rare for the check to see again);
//   - it passed after a remedy or a move (a re-seat): Unresolved, the
//     remedy may have fixed a real fault;
//   - no re-test yet: Unresolved.
//
// The first re-test decides; runs that say nothing of the part (the check
// not run, unknown, other devices) are no re-test.
func classify(steps []step) (Outcome, string) {
	remedied := ""
	for _, s := range steps {
		if s.Moved != "" && remedied == "" {
			remedied = s.Moved
		}
		switch s.Retest {
		case benchmarks.StatusFail:
			if remedied != "" {
				return Confirmed, fmt.Sprintf("failed again (%s) after %s", s.Run, remedied)
			}
			return Confirmed, fmt.Sprintf("failed again (%s)", s.Run)
		case benchmarks.StatusPass:
			if remedied != "" {
				return Unresolved, fmt.Sprintf("passed (%s) after %s: the remedy may have fixed it", s.Run, remedied)
			}
			return LikelyFalse, fmt.Sprintf("passed its re-test (%s) with no remedy in between", s.Run)
		}
		if s.Remedy != "" && remedied == "" {
			remedied = s.Remedy
		}
	}
	if remedied != "" {
		return Unresolved, fmt.Sprintf("not re-tested since %s", remedied)
	}
	return Unresolved, "not re-tested yet"
}
