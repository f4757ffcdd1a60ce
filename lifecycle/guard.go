package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

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

// drainedFor lists the nodes other than self whose vigil reason names
// check and was set within window before now, sorted.
func drainedFor(fleet []slurm.Node, check, self string, now time.Time, window time.Duration) []string {
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

// guardMarks parses a node comment "vigil-guard: gemm@T disk@T" into the
// time of each check's alert; nil for any other comment.
func guardMarks(comment string) map[string]time.Time {
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

// formatGuardMarks writes marks as a node comment, checks sorted.
func formatGuardMarks(m map[string]time.Time) string {
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
		if t, ok := guardMarks(n.Comment())[check]; ok && t.After(last) {
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

// guard applies the guard to the run's failed checks before the drain rule
// sees them. It returns the results the drain rule should use: those of
// guarded checks turned into unknown (ReasonGuarded), so that they neither
// drain the node nor lift a drain. It reads the fleet once, for the guard
// and for the notifications' rate limit.
func (r *run) guard(ctx context.Context, results []benchmarks.Result) []benchmarks.Result {
	failed := failedChecks(results)
	if len(failed) == 0 || (r.s.Guard.MaxShare <= 0 && !r.s.Notify.Enabled()) {
		return results
	}
	fleet := r.readFleet(ctx)
	if fleet == nil || r.s.Guard.MaxShare <= 0 {
		return results
	}
	out := slices.Clone(results)
	now := r.o.Now()
	for _, check := range failed {
		job := r.jobFailing[check]
		drained := len(withJob(drainedFor(fleet, check, r.rep.Node, now, r.s.Guard.Window), job, r.rep.Node)) + 1
		v := guardFor(r.s.Guard, drained, len(fleet), lastGuardAlert(fleet, check), now)
		if !v.Active {
			continue
		}
		// The job's nodes are guarded together: the first of those that
		// failed the check sends the one alert.
		if len(job) > 0 && slices.Min(job) != r.rep.Node {
			v.Alert = false
		}
		msg := guardMessage(r.s.Guard, check, r.rep.Node, drained, len(fleet), len(job))
		r.rep.Guarded = append(r.rep.Guarded, report.Guarded{Check: check, Drained: drained, Nodes: len(fleet),
			MaxShare: r.s.Guard.MaxShare, Message: msg})
		r.note("%s", msg)
		r.log.WithFields(logrus.Fields{"check": check, "drained": drained, "nodes": len(fleet)}).Error(msg)
		for i := range out {
			if out[i].Check == check && out[i].Status == benchmarks.StatusFail {
				out[i].Status, out[i].Reason = benchmarks.StatusUnknown, ReasonGuarded
			}
		}
		if v.Alert {
			r.guardAlert(ctx, check, msg, drained, len(fleet))
		}
	}
	return out
}

// failedChecks lists the checks that failed in results, in order.
func failedChecks(results []benchmarks.Result) []string {
	var out []string
	for _, res := range results {
		if res.Status == benchmarks.StatusFail && !slices.Contains(out, res.Check) {
			out = append(out, res.Check)
		}
	}
	return out
}

// readFleet reads every node once per run (nil in a dry run, without the
// scontrol calls, or when scontrol failed: then the guard does not act and
// notifications are not rate limited).
func (r *run) readFleet(ctx context.Context) []slurm.Node {
	if r.admin.fleetRead {
		return r.admin.fleet
	}
	r.admin.fleetRead = true
	cli := r.fleetClient()
	if cli == nil {
		if r.o.DryRun && r.s.Guard.MaxShare > 0 {
			r.note("the guard ([guard]) was not consulted: dry runs do not query Slurm")
		}
		return nil
	}
	cctx, cancel := r.actionCtx(ctx)
	defer cancel()
	fleet, err := cli.Nodes(cctx)
	if err != nil {
		r.note("reading the cluster's nodes: %v: the guard did not act and notifications are not rate limited", err)
		hint := "check [prolog] slurm_bin_dir and slurm_conf"
		if slurm.ControllerDown(err) {
			hint = "slurmctld cannot be reached"
		}
		r.log.WithError(err).Error("reading the cluster's nodes with scontrol: the guard ([guard]) cannot act this run; " + hint)
		return nil
	}
	r.admin.fleet = fleet
	return fleet
}

// guardAlert marks this node's comment and sends the check's guard alert.
func (r *run) guardAlert(ctx context.Context, check, msg string, drained, nodes int) {
	if !r.s.Notify.Enabled() {
		return
	}
	r.markGuardAlert(ctx, check)
	fields := map[string]any{"event": "guard", "node": r.rep.Node, "job": r.rep.Job, "check": check,
		"drained": drained, "nodes": nodes, "max_share": r.s.Guard.MaxShare, "window": r.s.Guard.Window.String()}
	r.sendNotice(ctx, "guard", []string{check}, "vigil stopped draining for "+check+": "+msg, fields)
}

// markGuardAlert records on the node's comment that this node sent the
// guard alert for check now, unless the comment is someone else's.
func (r *run) markGuardAlert(ctx context.Context, check string) {
	cli := r.fleetClient()
	i := slices.IndexFunc(r.admin.fleet, func(n slurm.Node) bool { return n.Name == r.rep.Node })
	if cli == nil || i < 0 {
		return
	}
	comment := r.admin.fleet[i].Comment()
	marks := guardMarks(comment)
	if marks == nil && comment != "" {
		r.note("node comment %q is not vigil's: the guard alert for %s is not recorded, so the next guarded node sends it again", comment, check)
		return
	}
	if marks == nil {
		marks = map[string]time.Time{}
	}
	marks[check] = r.o.Now()
	cctx, cancel := r.actionCtx(ctx)
	defer cancel()
	if err := cli.SetNodeComment(cctx, r.rep.Node, formatGuardMarks(marks)); err != nil {
		r.log.WithError(err).Error("recording the guard alert on the node's comment: the next guarded node will alert again")
	}
}
