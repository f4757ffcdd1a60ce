package baseline

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// LemonRule says which components are lemons: parts that keep failing
// wherever they are put, which a site replaces rather than repairs again.
//
// A part is a lemon when a check failed on it in at least Nodes different
// nodes (the fault went with the part when it moved), or when it had at
// least Episodes failure episodes within Window. An episode is a run of
// failures of the part: it starts with a failure and ends at a remedy of
// the part or its node, a move to another node, or a run in which checks
// passed on the part and none failed. A fault that persists run after run
// is one episode; one that comes back after each repair is many.
type LemonRule struct {
	// Nodes is the fewest nodes a lemon failed in; 0 leaves the rule out.
	Nodes int
	// Episodes is the fewest failure episodes within Window; 0 leaves the
	// rule out.
	Episodes int
	// Window is how long the episodes may spread over; 0 means any time.
	Window time.Duration
}

// DefaultLemonRule: failed in 2 nodes, or 3 failure episodes within 30 days.
var DefaultLemonRule = LemonRule{Nodes: 2, Episodes: 3, Window: 30 * 24 * time.Hour}

// String says the rule in words.
func (r LemonRule) String() string {
	var parts []string
	if r.Nodes > 0 {
		parts = append(parts, fmt.Sprintf("failed in >= %d nodes", r.Nodes))
	}
	if r.Episodes > 0 {
		w := "any time"
		if r.Window > 0 {
			w = "within " + fmtWindow(r.Window)
		}
		parts = append(parts, fmt.Sprintf(">= %d failure episodes %s", r.Episodes, w))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", or ")
}

// Judge says why h is a lemon under r, "" when it is not.
func (r LemonRule) Judge(h *History) string {
	if r.Nodes > 0 && len(h.FailedOn) >= r.Nodes {
		return fmt.Sprintf("failed in %d nodes (%s)", len(h.FailedOn), strings.Join(h.FailedOn, ", "))
	}
	if r.Episodes <= 0 {
		return ""
	}
	n, from := mostWithin(h.Episodes, r.Window)
	if n < r.Episodes {
		return ""
	}
	if r.Window > 0 {
		return fmt.Sprintf("%d failure episodes within %s from %s", n, fmtWindow(r.Window), stamp(from))
	}
	return fmt.Sprintf("%d failure episodes", n)
}

// mostWithin returns the most of ts (sorted) that lie within w of the
// first of them, and that first; w <= 0 means all of them.
func mostWithin(ts []time.Time, w time.Duration) (int, time.Time) {
	best, from := 0, time.Time{}
	for i := range ts {
		j := i
		for j < len(ts) && (w <= 0 || ts[j].Sub(ts[i]) <= w) {
			j++
		}
		if j-i > best {
			best, from = j-i, ts[i]
		}
	}
	return best, from
}

// fmtWindow writes a window in days when it is whole days ("30d").
func fmtWindow(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// histories builds the history of every identified part that failed or
// had a remedy of its own, by ID.
func (f *fleet) histories(drains []*Drain) []*History {
	type key struct {
		run       int
		check, id string
	}
	drainOf := map[key]*Drain{}
	for _, d := range drains {
		if d.Component != "" {
			drainOf[key{d.run, d.Check, d.Component}] = d
		}
	}
	var out []*History
	for id, runs := range f.byPart {
		h := &History{ID: id, Component: f.parts[id]}
		own := false
		for _, j := range runs {
			r := f.runs[j]
			own = f.record(h, r, func(check string) *Drain { return drainOf[key{j, check, id}] }) || own
		}
		if own {
			f.episodes(h)
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// record adds what run r says of h's part to its history: a sighting or
// a move, its failures (drainOf gives the drain a failed check made), and
// a remedy. It reports whether the run failed on the part or remedied it
// alone, which earns the part a history of its own.
func (f *fleet) record(h *History, r *fleetRun, drainOf func(check string) *Drain) bool {
	rep, names := r.rep, r.namesOf(h.ID)
	if len(names) == 0 {
		return false
	}
	ev := Event{At: rep.Start, Node: rep.Node, Name: names[0]}
	if slices.Contains(r.seen, h.ID) {
		switch from := r.from[h.ID]; {
		case len(h.Nodes) == 0:
			h.add(withKind(ev, EventSeen, ""))
		case from != "":
			h.add(withKind(ev, EventMoved, from))
		}
	}
	if len(h.Nodes) == 0 || h.Nodes[len(h.Nodes)-1] != rep.Node {
		h.Nodes = append(h.Nodes, rep.Node)
	}
	own := false
	for _, res := range rep.Results {
		if !overlaps(failedNames(res), names) {
			continue
		}
		e := withKind(ev, EventFail, "")
		e.Check, e.Reason, e.Mode, e.Drain = res.Check, res.Reason, rep.Mode, drainOf(res.Check)
		if e.Drain != nil {
			h.Drains++
		}
		h.add(e)
		own = true
	}
	if m := remedyOn(rep, names); m != "" {
		h.add(withKind(ev, EventRemedy, m))
		h.Remedies++
		own = own || rep.Action.Remedy.Device != ""
	}
	return own
}

// episodes counts h's failed runs, the nodes it failed in and its failure
// episodes (LemonRule), over the runs in which its part is known.
func (f *fleet) episodes(h *History) {
	in := false
	failedOn := map[string]bool{}
	for _, j := range f.byPart[h.ID] {
		r := f.runs[j]
		names := r.namesOf(h.ID)
		if r.from[h.ID] != "" {
			in = false // moved: what fails there starts anew
		}
		failed, passed := false, false
		for _, res := range r.rep.Results {
			switch statusOn(res, names) {
			case benchmarks.StatusFail:
				failed = true
			case benchmarks.StatusPass:
				passed = passed || named(res, names)
			}
		}
		switch {
		case failed:
			if !in {
				h.Episodes = append(h.Episodes, r.rep.Start)
			}
			in = true
			h.FailedRuns++
			failedOn[r.rep.Node] = true
		case passed:
			in = false
		}
		if remedyOn(r.rep, names) != "" {
			in = false
		}
	}
	for n := range failedOn {
		h.FailedOn = append(h.FailedOn, n)
	}
	sort.Strings(h.FailedOn)
}

// named reports whether res has a value of the device called by one of names.
func named(res benchmarks.Result, names []string) bool {
	for _, v := range res.Values {
		if v.Device != "" && slices.Contains(names, v.Device) {
			return true
		}
	}
	return false
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

func withKind(e Event, kind, detail string) Event {
	e.Kind, e.Detail = kind, detail
	return e
}

// add appends e to h's events (runs come in time order).
func (h *History) add(e Event) { h.Events = append(h.Events, e) }
