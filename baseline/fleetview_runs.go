package baseline

import (
	"slices"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/report"
)

// fleetRun is one report with the parts of its node as they were known then.
type fleetRun struct {
	rep *report.Report
	// parts are the node's parts by name: the report's own components
	// (kind by kind), else those of the node's last report that listed
	// them, less any part seen in another node since.
	parts map[string]benchmarks.Component
	// seen are the identities the report itself lists; from says, for
	// each of them last seen in another node, where ("n03 gpu3").
	seen []string
	from map[string]string
}

// fleet is the reports in time order, indexed by node and by part.
type fleet struct {
	runs []*fleetRun
	// byNode and byPart list the runs of each node and the runs in which
	// each part (by identity) is known, in time order.
	byNode map[string][]int
	byPart map[string][]int
	// parts are the identified parts as last seen.
	parts map[string]benchmarks.Component
}

// place is where a part was last seen: node and name.
type place struct{ node, name string }

// newFleet resolves every report's parts (reps in time order). A report
// without components (a job that chose other checks, a vigil before
// components) keeps the node's last known parts, unless a part has been
// seen in another node since: a GPU that moved is known where it went.
func newFleet(reps []*report.Report) *fleet {
	f := &fleet{byNode: map[string][]int{}, byPart: map[string][]int{}, parts: map[string]benchmarks.Component{}}
	inv := map[string]map[string]benchmarks.Component{}
	where := map[string]place{}
	for i, rep := range reps {
		r := &fleetRun{rep: rep, from: map[string]string{}}
		node := inv[rep.Node]
		if node == nil {
			node = map[string]benchmarks.Component{}
			inv[rep.Node] = node
		}
		f.observe(r, node, where)
		r.parts = map[string]benchmarks.Component{}
		for name, c := range node {
			if id := c.ID(); id == "" || where[id].node == rep.Node {
				r.parts[name] = c
			}
		}
		f.runs = append(f.runs, r)
		f.byNode[rep.Node] = append(f.byNode[rep.Node], i)
		for _, c := range r.parts {
			if id := c.ID(); id != "" {
				f.byPart[id] = append(f.byPart[id], i)
			}
		}
	}
	return f
}

// observe takes r's own components into the node's parts, kind by kind
// (rdma not run leaves the HCAs as they were), and notes where each
// identified part was last seen.
func (f *fleet) observe(r *fleetRun, node map[string]benchmarks.Component, where map[string]place) {
	kinds := map[string]bool{}
	for _, c := range r.rep.Components {
		kinds[c.Kind] = true
	}
	for name, c := range node {
		if kinds[c.Kind] {
			delete(node, name)
		}
	}
	for _, c := range r.rep.Components {
		node[c.Name] = c
		id := c.ID()
		if id == "" {
			continue
		}
		if p, ok := where[id]; ok && p.node != r.rep.Node {
			r.from[id] = p.node + " " + p.name
		}
		where[id] = place{r.rep.Node, c.Name}
		f.parts[id] = c
		r.seen = append(r.seen, id)
	}
}

// resolve returns the part the run's results call name ("gpu3", or its
// PCI address).
func (r *fleetRun) resolve(name string) (benchmarks.Component, bool) {
	if name == "" {
		return benchmarks.Component{}, false
	}
	if c, ok := r.parts[name]; ok {
		return c, true
	}
	for _, c := range r.parts {
		if c.PCI != "" && c.PCI == name {
			return c, true
		}
	}
	return benchmarks.Component{}, false
}

// namesOf returns the names results may give the part id in this run:
// its name and its PCI address.
func (r *fleetRun) namesOf(id string) []string {
	for _, c := range r.parts {
		if c.ID() == id {
			if c.PCI != "" {
				return []string{c.Name, c.PCI}
			}
			return []string{c.Name}
		}
	}
	return nil
}

// statusOn is what res says of the device that results call by one of
// names (none: the node): pass or fail, or "" when it says nothing of it.
// A result that fails on another device passes this one when a value of
// this one passed; a passing result that names no device at all covers
// the node and its devices.
func statusOn(res benchmarks.Result, names []string) benchmarks.Status {
	if res.Status != benchmarks.StatusPass && res.Status != benchmarks.StatusFail {
		return ""
	}
	if len(names) == 0 {
		return res.Status
	}
	if res.Status == benchmarks.StatusFail && slices.Contains(names, res.Device) {
		return benchmarks.StatusFail
	}
	named, passed := false, false
	for _, v := range res.Values {
		if v.Device == "" {
			continue
		}
		named = true
		if slices.Contains(names, v.Device) {
			if v.Status == benchmarks.StatusFail {
				return benchmarks.StatusFail
			}
			passed = passed || v.Status == benchmarks.StatusPass
		}
	}
	if passed || (res.Status == benchmarks.StatusPass && !named) {
		return benchmarks.StatusPass
	}
	return ""
}

// failedNames are the devices a failed result names: its Device and those
// of its failed values.
func failedNames(res benchmarks.Result) []string {
	if res.Status != benchmarks.StatusFail {
		return nil
	}
	var out []string
	if res.Device != "" {
		out = append(out, res.Device)
	}
	for _, v := range res.Values {
		if v.Status == benchmarks.StatusFail && v.Device != "" && !slices.Contains(out, v.Device) {
			out = append(out, v.Device)
		}
	}
	return out
}

// remedyOn returns the kind of the remedy of rep that reaches the device
// called by one of names (none: the node, which every remedy of the node
// reaches), "" when none does. Only a remedy carried out counts: one not
// done (a dry run's, a failed one) or the ladder's end (needs-service)
// repaired nothing.
func remedyOn(rep *report.Report, names []string) string {
	m := rep.Action.Remedy
	if m == nil || !m.Done || m.Error != "" || m.Kind == report.RemedyNeedsService {
		return ""
	}
	if m.Device == "" || len(names) == 0 || slices.Contains(names, m.Device) {
		if m.Kind == "" {
			return "remedy"
		}
		return m.Kind
	}
	return ""
}
