// Package idle is `vigil-prolog idle-sweep`: it submits vigil's own
// validation jobs, one per idle node that is due, to the partition, QOS or
// reservation of [idle], where users' jobs preempt them. Each job runs
// `vigil-prolog validate` on its node (decide.ModeValidate), which
// drains or resumes by the same rule as health mode and records its
// outcome for the next sweep. Plan is the pure decision (which nodes,
// why); Sweep reads Slurm and the records, plans, submits and records the
// submissions. See docs/operations.md.
package idle

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/lifecycle"
	"github.com/vigil-hpc/vigil/slurm"
)

// Submission is the sweep's record of a job it submitted for a node.
type Submission struct {
	// Job is the job's id.
	Job string `json:"job"`
	// At is when it was submitted.
	At time.Time `json:"at"`
}

// Inputs are what a sweep knows before it submits: a pure function of
// them (Plan) says which nodes get a validation job.
type Inputs struct {
	// Now is the sweep's time.
	Now time.Time
	// Idle is the effective [idle] section.
	Idle config.Idle
	// Nodes are the cluster's nodes as scontrol shows them.
	Nodes []slurm.Node
	// Reserved are the nodes of [idle] reservation; nil when none is set.
	Reserved []string
	// Jobs are the sweep's user's jobs as squeue lists them.
	Jobs []slurm.QueuedJob
	// Validations are the nodes' last validation runs, by node.
	Validations map[string]lifecycle.Validation
	// Submissions are the sweep's earlier submissions, by node.
	Submissions map[string]Submission
}

// Decision is what the sweep does with one node of the partition (or
// reservation).
type Decision struct {
	// Node is the node's name.
	Node string
	// Submit is set when the sweep submits a validation job for it.
	Submit bool
	// Why says why, for people: "not validated yet", "allocated",
	// "validated 2026-11-29T10:00:00Z (pass), due ...".
	Why string
	// Last is when the node was last validated (or its job submitted),
	// zero when never.
	Last time.Time
	// Gres is the node's GPUs that the job takes ("gpu:4"), "" for none.
	Gres string
}

// JobName is the name of the validation job for node: [idle] job_name,
// a dash, the node.
func JobName(prefix, node string) string { return prefix + "-" + node }

// Plan decides, for every node of [idle] partition (every node without
// one, only those of [idle] reservation when one is set), whether the
// sweep submits a validation job for it now. A node gets one when it is
// idle and usable (not drained, down, allocated, planned for a job or in
// any other state), has no validation job pending or running, and its
// last validation (or submission) is at least [idle] interval old; the
// nodes longest without one first, at most [idle] max_nodes_per_run.
func Plan(in Inputs) []Decision {
	var out, due []Decision
	for _, n := range in.candidates() {
		d := Decision{Node: n.Name, Gres: slurm.GPUGres(n.Gres)}
		if why := notIdle(n, in.Idle.Reservation != ""); why != "" {
			d.Why = why
			out = append(out, d)
			continue
		}
		if j, ok := in.activeJob(n.Name); ok {
			d.Why = fmt.Sprintf("validation job %s is %s", j.ID, strings.ToLower(j.State))
			out = append(out, d)
			continue
		}
		var what string
		d.Last, what = in.last(n.Name)
		if next := d.Last.Add(time.Duration(in.Idle.Interval)); !d.Last.IsZero() && in.Now.Before(next) {
			d.Why = fmt.Sprintf("%s, due %s", what, stamp(next))
			out = append(out, d)
			continue
		}
		d.Why = "not validated yet"
		if !d.Last.IsZero() {
			d.Why = what + ", due"
		}
		due = append(due, d)
	}
	sort.SliceStable(due, func(i, j int) bool { return due[i].Last.Before(due[j].Last) })
	for i := range due {
		if i < in.Idle.MaxNodesPerRun {
			due[i].Submit = true
		} else {
			due[i].Why += "; beyond max_nodes_per_run"
		}
	}
	out = append(out, due...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// candidates are the nodes the sweep looks at, by name.
func (in Inputs) candidates() []slurm.Node {
	parts := strings.Split(in.Idle.Partition, ",")
	var out []slurm.Node
	for _, n := range in.Nodes {
		if in.Idle.Partition != "" && !slices.ContainsFunc(n.Partitions(), func(p string) bool { return slices.Contains(parts, p) }) {
			continue
		}
		if in.Idle.Reservation != "" && !slices.Contains(in.Reserved, n.Name) {
			continue
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// notIdle says why the node is not one to validate now, "" when it is:
// idle, with no flag but RESERVED (when the jobs run in a reservation).
func notIdle(n slurm.Node, reservation bool) string {
	switch {
	case n.Drained():
		return "drained"
	case n.ForeignState() != "":
		return strings.ToLower(n.ForeignState())
	case n.Is("NOT_RESPONDING"):
		return "not responding"
	case n.State != "IDLE":
		return strings.ToLower(n.State)
	}
	for _, f := range n.Flags {
		if f != "RESERVED" || !reservation {
			return "idle but " + strings.ToLower(f)
		}
	}
	return ""
}

// activeJob is the node's validation job that is still in the queue or
// running.
func (in Inputs) activeJob(node string) (slurm.QueuedJob, bool) {
	name := JobName(in.Idle.JobName, node)
	for _, j := range in.Jobs {
		if j.Name == name && j.Active() {
			return j, true
		}
	}
	return slurm.QueuedJob{}, false
}

// endedUnfinished are the end states of a job that did not run its suite
// to the end.
var endedUnfinished = []string{"PREEMPTED", "CANCELLED", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "TIMEOUT", "OUT_OF_MEMORY", "REVOKED"}

// last is when the node was last validated, and how that is known: its
// last run that went through the suite (from the record the run wrote),
// or the sweep's last submission for it, which counts unless that job is
// known to have been stopped (its record says interrupted, or squeue
// shows it preempted, cancelled, failed with its node, timed out ...).
// Zero when neither.
func (in Inputs) last(node string) (time.Time, string) {
	var t time.Time
	what := ""
	v, hasV := in.Validations[node]
	if hasV && v.Completed() {
		t, what = v.End, fmt.Sprintf("validated %s (%s)", stamp(v.End), v.Outcome)
	}
	s, ok := in.Submissions[node]
	if !ok || !s.At.After(t) {
		return t, what
	}
	if hasV && v.Job == s.Job && !v.Completed() {
		return t, what
	}
	for _, j := range in.Jobs {
		if j.ID == s.Job && slices.Contains(endedUnfinished, j.State) {
			return t, what
		}
	}
	return s.At, fmt.Sprintf("job %s submitted %s", s.Job, stamp(s.At))
}

// stamp writes t for the sweep's lines: UTC, to the second.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
