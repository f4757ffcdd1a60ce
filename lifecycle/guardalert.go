package lifecycle

import (
	"context"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/slurm"
)

// The guard's side effects: the fleet it reads before the decision, and
// what a guarded check records and sends once Decide guarded it.

// applyGuard records the guarded checks in the report and the log, and
// sends their alerts, in the order Decide guarded them.
func (r *run) applyGuard(ctx context.Context, guarded []guardedCheck) {
	for _, g := range guarded {
		r.rep.Guarded = append(r.rep.Guarded, g.Guarded)
		r.note("%s", g.Message)
		r.log.WithFields(logrus.Fields{"check": g.Check, "drained": g.Drained, "nodes": g.Nodes}).Error(g.Message)
		if g.Alert {
			r.guardAlert(ctx, g.Check, g.Message, g.Drained, g.Nodes)
		}
	}
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
