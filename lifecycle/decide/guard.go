package decide

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// The guard against fleet-wide mistakes. A check that fails on many nodes
// at once is more likely wrong (a threshold set for another SKU, a shared
// dependency) than the hardware. The nodes' runs are independent, so the
// controller is the shared state: one `scontrol show node -o` shows every
// node's reason and when it was set. When the nodes vigil drained for a
// check within [guard] window, this node counted as if it were drained,
// are more than [guard] min_nodes and more than max_share of the cluster,
// this node is not drained for that check (other failed checks still
// drain it). A guarded check counts as "could not tell" for the drain rule,
// so it never lifts an existing drain either. One alert per check per
// window goes out through [notify]; the node that sends it marks its own
// node comment ("vigil-guard: gemm@2026-12-01T02:00:00Z"), and the next
// guarded node sees the mark. Two nodes guarded within the same scontrol
// round trip may both send the alert.

// ReasonGuarded is the reason a guarded check's result carries for the
// drain rule.
const ReasonGuarded = "Guarded"

// guardVerdict is the guard's decision for one failed check.
type guardVerdict struct {
	// Active is set when the node must not be drained for the check.
	Active bool
	// Alert is set when this node sends the check's guard alert.
	Alert bool
}

// guardFor decides for one failed check: drained is the number of nodes
// vigil drained for it within g.Window, this node included as if it were;
// nodes is the size of the cluster; lastAlert is the newest guard alert
// mark for the check (zero when none).
func guardFor(g config.Guard, drained, nodes int, lastAlert, now time.Time) guardVerdict {
	if g.MaxShare <= 0 || nodes <= 0 || drained <= g.MinNodes {
		return guardVerdict{}
	}
	if float64(drained) <= g.MaxShare*float64(nodes) {
		return guardVerdict{}
	}
	due := lastAlert.IsZero() || now.Sub(lastAlert) >= g.Window
	return guardVerdict{Active: true, Alert: due}
}

// DrainedFor lists the nodes other than self whose vigil reason names
// check and was set within window before now, sorted.
func DrainedFor(fleet []slurm.Node, check, self string, now time.Time, window time.Duration) []string {
	var out []string
	for _, n := range fleet {
		if n.Name == self || !n.Drained() || !n.OwnedByVigil() || n.ReasonTime.IsZero() || now.Sub(n.ReasonTime) > window {
			continue
		}
		entries, _ := benchmarks.ParseDrain(n.Reason)
		if slices.ContainsFunc(entries, func(e benchmarks.DrainEntry) bool { return e.Check == check }) {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out
}

// guardMarkPrefix starts the node comment that records guard alerts.
const guardMarkPrefix = "vigil-guard:"

// GuardMarks parses a node comment "vigil-guard: gemm@T disk@T" into the
// time of each check's alert; nil for any other comment.
func GuardMarks(comment string) map[string]time.Time {
	rest, ok := strings.CutPrefix(comment, guardMarkPrefix)
	if !ok {
		return nil
	}
	m := map[string]time.Time{}
	for _, f := range strings.Fields(rest) {
		check, ts, ok := strings.Cut(f, "@")
		if t, err := time.Parse(time.RFC3339, ts); ok && err == nil {
			m[check] = t
		}
	}
	return m
}

// FormatGuardMarks writes marks as a node comment, checks sorted.
func FormatGuardMarks(m map[string]time.Time) string {
	var parts []string
	for c, t := range m {
		parts = append(parts, c+"@"+t.UTC().Format(time.RFC3339))
	}
	slices.Sort(parts)
	return guardMarkPrefix + " " + strings.Join(parts, " ")
}

// lastGuardAlert is the newest guard alert mark for check in the fleet.
func lastGuardAlert(fleet []slurm.Node, check string) time.Time {
	var last time.Time
	for _, n := range fleet {
		if t, ok := GuardMarks(n.Comment())[check]; ok && t.After(last) {
			last = t
		}
	}
	return last
}

// withJob adds to drained (other nodes drained for a check) the job's
// nodes that fail it now, but self; sorted, each once. The prologs of one
// job start together, so none of them sees the others' drains yet: the
// cross-node phase counted them.
func withJob(drained, job []string, self string) []string {
	for _, n := range job {
		if n != self && !slices.Contains(drained, n) {
			drained = append(drained, n)
		}
	}
	slices.Sort(drained)
	return drained
}

// guardMessage says what the guard did, with the numbers and what to do;
// inJob is how many of the job's nodes fail the check now (0: not known).
func guardMessage(g config.Guard, check, node string, drained, nodes, inJob int) string {
	job := ""
	if inJob > 1 {
		job = fmt.Sprintf(" (%d of them failing it in this job now)", inJob)
	}
	return fmt.Sprintf("guarded: %s: %d of %d nodes (%.0f%%) drained by vigil for %s within %v%s, above [guard] max_share %.0f%%: not draining %s for %s; check its thresholds ([checks.%s]), then resume the drained nodes (sinfo -R)",
		check, drained, nodes, 100*float64(drained)/float64(nodes), check, g.Window, job, 100*g.MaxShare, node, check, check)
}

// GuardedCheck is a failed check the guard keeps from draining the node.
type GuardedCheck struct {
	report.Guarded
	// Alert is set when this node sends the check's guard alert.
	Alert bool
}

// guardPlan applies the guard to the run's failed checks before the drain
// rule sees them. It returns the guarded checks and the results the drain
// rule should use: those of guarded checks turned into unknown
// (ReasonGuarded), so that they neither drain the node nor lift a drain.
// Without the fleet (a dry run, scontrol failed) the guard does not act.
func guardPlan(in Inputs) ([]GuardedCheck, []benchmarks.Result) {
	g := in.Rules.Guard
	failed := FailedChecks(in.Results)
	if len(failed) == 0 || in.Slurm.Fleet == nil || g.MaxShare <= 0 {
		return nil, in.Results
	}
	fleet := in.Slurm.Fleet
	var guarded []GuardedCheck
	out := slices.Clone(in.Results)
	for _, check := range failed {
		job := in.JobFailing[check]
		drained := len(withJob(DrainedFor(fleet, check, in.Node, in.Now, g.Window), job, in.Node)) + 1
		v := guardFor(g, drained, len(fleet), lastGuardAlert(fleet, check), in.Now)
		if !v.Active {
			continue
		}
		// The job's nodes are guarded together: the first of those that
		// failed the check sends the one alert.
		if len(job) > 0 && slices.Min(job) != in.Node {
			v.Alert = false
		}
		msg := guardMessage(g, check, in.Node, drained, len(fleet), len(job))
		guarded = append(guarded, GuardedCheck{Guarded: report.Guarded{Check: check, Drained: drained, Nodes: len(fleet),
			MaxShare: g.MaxShare, Message: msg}, Alert: v.Alert})
		for i := range out {
			if out[i].Check == check && out[i].Status == benchmarks.StatusFail {
				out[i].Status, out[i].Reason = benchmarks.StatusUnknown, ReasonGuarded
			}
		}
	}
	return guarded, out
}

// FailedChecks lists the checks that failed in results, in order.
func FailedChecks(results []benchmarks.Result) []string {
	var out []string
	for _, res := range results {
		if res.Status == benchmarks.StatusFail && !slices.Contains(out, res.Check) {
			out = append(out, res.Check)
		}
	}
	return out
}
