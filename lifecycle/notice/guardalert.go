package notice

import (
	"context"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/slurm"
)

// The guard's side effects: the fleet it reads before the decision, and
// what a guarded check records and sends once Decide guarded it.

// Guarded records the guarded checks in the report and the log, and sends
// their alerts, in the order Decide guarded them.
func (a *Admins) Guarded(ctx context.Context, guarded []decide.GuardedCheck) {
	for _, g := range guarded {
		a.rep.Guarded = append(a.rep.Guarded, g.Guarded)
		a.note("%s", g.Message)
		a.log.WithFields(logrus.Fields{"check": g.Check, "drained": g.Drained, "nodes": g.Nodes}).Error(g.Message)
		if g.Alert {
			a.guardAlert(ctx, g.Check, g.Message, g.Drained, g.Nodes)
		}
	}
}

// guardAlert marks this node's comment and sends the check's guard alert.
func (a *Admins) guardAlert(ctx context.Context, check, msg string, drained, nodes int) {
	if !a.notify.Enabled() {
		return
	}
	a.markGuardAlert(ctx, check)
	fields := map[string]any{"event": "guard", "node": a.rep.Node, "job": a.rep.Job, "check": check,
		"drained": drained, "nodes": nodes, "max_share": a.guard.MaxShare, "window": a.guard.Window.String()}
	a.Send(ctx, "guard", []string{check}, "vigil stopped draining for "+check+": "+msg, fields)
}

// markGuardAlert records on the node's comment that this node sent the
// guard alert for check now, unless the comment is someone else's.
func (a *Admins) markGuardAlert(ctx context.Context, check string) {
	cli := a.sl.FleetClient()
	fleet := a.sl.FleetRead()
	i := slices.IndexFunc(fleet, func(n slurm.Node) bool { return n.Name == a.rep.Node })
	if cli == nil || i < 0 {
		return
	}
	comment := fleet[i].Comment()
	marks := decide.GuardMarks(comment)
	if marks == nil && comment != "" {
		a.note("node comment %q is not vigil's: the guard alert for %s is not recorded, so the next guarded node sends it again", comment, check)
		return
	}
	if marks == nil {
		marks = map[string]time.Time{}
	}
	marks[check] = a.now()
	cctx, cancel := a.sl.Bound(ctx)
	defer cancel()
	if err := cli.SetNodeComment(cctx, a.rep.Node, decide.FormatGuardMarks(marks)); err != nil {
		a.log.WithError(err).Error("recording the guard alert on the node's comment: the next guarded node will alert again")
	}
}
