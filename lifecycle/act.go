package lifecycle

import (
	"context"
	"errors"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// act turns the verdict into a drain, resume or hold, and an exit code.
func (r *run) act(ctx context.Context) int {
	rep := r.rep
	p := r.s.Prolog
	failCode := ExitFail
	if r.o.Mode == ModeEpilog {
		// vigil drains the node itself; a failing epilog would make Slurm
		// replace vigil's reason with "Epilog error".
		failCode = ExitOK
	}
	if rep.BudgetExpired && p.OnBudgetExpiry == config.ActionHold {
		rep.Action = report.Action{Kind: report.ActionHold}
		if r.job == nil || r.o.Mode != ModeProlog {
			rep.Action.Kind = report.ActionNone
			r.note("budget expired with on_budget_expiry = hold, but there is no job to hold")
			return ExitOK
		}
		if cli := r.client(); cli != nil {
			cctx, cancel := r.actionCtx(ctx)
			defer cancel()
			if err := cli.Requeue(cctx, r.job.ID, true); err != nil {
				rep.Action.Error = err.Error()
				r.log.WithError(err).Error("holding the job")
			} else {
				rep.Action.Done = true
				r.log.Warn("budget expired: job held, node left alone")
			}
		}
		return ExitOK
	}
	plan, n, readErr := r.plan(ctx)
	if plan.Failed {
		rep.Verdict = benchmarks.StatusFail
		return r.drain(ctx, plan, failCode)
	}
	if readErr != nil {
		r.note("reading %s's state: %v", rep.Node, readErr)
		r.log.WithError(readErr).Error("reading the node's state with scontrol: vigil cannot resume or keep its drain this run")
		return ExitOK
	}
	if n == nil {
		if r.o.DryRun {
			r.note("a run that is not dry would resume %s if vigil had drained it and this run cleared every check its reason names (dry runs do not query Slurm)", rep.Node)
		}
		return ExitOK
	}
	if !n.Drained() && n.ForeignState() == "" {
		// Up, perhaps with a leftover reason (Node.StaleReason): nothing to lift.
		return ExitOK
	}
	if !n.OwnedByVigil() || n.ForeignState() != "" {
		if rep.Verdict == benchmarks.StatusPass && r.liftPrologError(ctx, *n) {
			return ExitOK
		}
		rep.Action = report.Action{Kind: report.ActionKeep, Reason: n.Reason, State: nodeState(*n)}
		return ExitOK
	}
	if plan.Reason != "" {
		return r.stay(ctx, plan, n.Reason, failCode)
	}
	rep.Action = report.Action{Kind: report.ActionResume, Reason: n.Reason, Lifted: plan.Lifted}
	cctx, cancel := r.actionCtx(ctx)
	defer cancel()
	resumed, err := r.client().Resume(cctx, rep.Node)
	switch {
	case err != nil:
		rep.Action.Error = err.Error()
		r.log.WithError(err).Error("resuming the node")
	case resumed:
		rep.Action.Done = true
		r.log.WithFields(logrus.Fields{"reason": n.Reason, "lifted": strings.Join(plan.Lifted, ",")}).Info("node resumed: every check its vigil reason named ran and passed")
	}
	return ExitOK
}

// plan reads the node's state (not in a dry run) and applies the drain
// rule to it. n is nil when Slurm was not asked.
func (r *run) plan(ctx context.Context) (drainPlan, *slurm.Node, error) {
	scope := runScope{Results: r.rep.Results, BudgetExpired: r.rep.BudgetExpired, Who: r.who(), Registered: registered}
	if r.job != nil && r.o.Mode == ModeProlog {
		scope.Devices = r.job.GPUs
	}
	scope.Results = r.guard(ctx, scope.Results)
	cli := r.client()
	if cli == nil {
		return planDrain("", scope), nil, nil
	}
	cctx, cancel := r.actionCtx(ctx)
	defer cancel()
	n, err := cli.Node(cctx, r.rep.Node)
	if err != nil {
		return planDrain("", scope), nil, err
	}
	old := ""
	if n.Drained() && n.OwnedByVigil() && n.ForeignState() == "" {
		old = n.Reason
	}
	r.admin.old = old
	return planDrain(old, scope), &n, nil
}

func registered(name string) bool {
	_, ok := benchmarks.Lookup(name)
	return ok
}

// who names this run in messages.
func (r *run) who() string {
	switch {
	case r.o.Mode == ModeEpilog:
		return "the epilog"
	case r.o.Mode == ModeHealth:
		return "this health check"
	case r.jobChecks:
		return "this prolog (the job chose its checks)"
	}
	return "this prolog"
}

// drain drains the node for the plan's reason. The prolog and health mode
// exit ExitFail when the node is drained by vigil afterwards; health mode
// exits ExitNotDrained when it could not drain (another party holds the
// node, or scontrol failed); the epilog always exits ExitOK.
func (r *run) drain(ctx context.Context, plan drainPlan, failCode int) int {
	rep := r.rep
	r.commentFailed(ctx, NodeFailure(rep.Node, rep.Results))
	defer r.notifyUser(ctx)
	rep.Action = report.Action{Kind: report.ActionDrain, Reason: plan.Reason}
	for _, k := range plan.Kept {
		rep.Action.Kept = append(rep.Action.Kept, k.Why)
	}
	cli := r.client()
	if cli == nil {
		r.notifyDrain(ctx, plan)
		return failCode
	}
	notDrained := failCode
	if r.o.Mode == ModeHealth {
		notDrained = ExitNotDrained
	}
	cctx, cancel := r.actionCtx(ctx)
	defer cancel()
	err := cli.Drain(cctx, rep.Node, plan.Reason)
	switch {
	case errors.Is(err, slurm.ErrNotOurs):
		rep.Action.Kind = report.ActionKeep
		if n, nerr := cli.Node(cctx, rep.Node); nerr == nil {
			rep.Action.Reason = n.Reason
			rep.Action.State = nodeState(n)
		}
		msg := "the node is held by someone else: vigil leaves it as it is"
		if r.o.Mode == ModeProlog {
			msg += "; failing the prolog so that Slurm requeues the job"
		}
		r.log.WithError(err).Warn(msg)
		return notDrained
	case err != nil:
		rep.Action.Error = err.Error()
		r.log.WithError(err).Error("draining the node")
		r.rememberFailedDrain(plan.Reason, err)
		return notDrained
	}
	rep.Action.Done = true
	r.log.WithField("reason", plan.Reason).Warn("node drained")
	r.notifyDrain(ctx, plan)
	r.requeueJob(ctx)
	return failCode
}

// requeueJob puts the job whose prolog failed on this (now drained) node
// back in the queue, unheld, so that it runs on healthy nodes: Slurm would
// hold it ("launch failed requeued held") until someone releases it. It
// does so at most [prolog] max_requeues times per job (the job's restart
// count); 0 keeps Slurm's hold. Another failing node of the job may have
// requeued it first: then scontrol refuses, which is fine. A job that
// cannot be requeued (an interactive one) is left to Slurm.
func (r *run) requeueJob(ctx context.Context) {
	if r.o.Mode != ModeProlog || r.job == nil || r.job.ID == "" {
		return
	}
	log := r.log.WithFields(logrus.Fields{"job": r.job.ID, "restarts": r.job.RestartCount, "max_requeues": r.s.Prolog.MaxRequeues})
	if r.job.RestartCount >= r.s.Prolog.MaxRequeues {
		r.rep.Action.Requeue = "held"
		log.Warn("the job was requeued [prolog] max_requeues times already: Slurm holds it (release it with scontrol release JOBID)")
		return
	}
	cctx, cancel := r.actionCtx(ctx)
	defer cancel()
	if err := r.client().Requeue(cctx, r.job.ID, false); err != nil {
		r.rep.Action.Requeue = "not requeued by vigil: " + err.Error()
		log.WithError(err).Info("requeueing the job (another node of the job may have done it, or it is not a batch job): Slurm requeues and holds it")
		return
	}
	r.rep.Action.Requeue = "requeued"
	log.Info("job requeued, unheld: it runs again on healthy nodes after Slurm's requeue delay")
}

// stay keeps vigil's drain because the run did not clear every check its
// reason names, rewriting the reason when some of them were cleared.
func (r *run) stay(ctx context.Context, plan drainPlan, old string, failCode int) int {
	rep := r.rep
	if r.o.Mode == ModeProlog {
		r.commentFailed(ctx, rep.Node+" stays drained for "+keptChecks(plan.Kept))
	}
	rep.Action = report.Action{Kind: report.ActionStay, Reason: plan.Reason, Lifted: plan.Lifted, Done: true}
	for _, k := range plan.Kept {
		rep.Action.Kept = append(rep.Action.Kept, k.Why)
	}
	r.note("%s stays drained: %s", rep.Node, keptSummary(plan.Kept))
	r.log.WithFields(logrus.Fields{"reason": plan.Reason, "kept": keptSummary(plan.Kept)}).
		Warn(rep.Node + " stays drained by vigil: " + keptSummary(plan.Kept) + " (" + retestHint(rep.Node, keptNames(plan.Kept)) + ")")
	if plan.Reason != old {
		cctx, cancel := r.actionCtx(ctx)
		defer cancel()
		if err := r.client().Drain(cctx, rep.Node, plan.Reason); err != nil {
			rep.Action.Done = false
			rep.Action.Error = err.Error()
			r.log.WithError(err).Error("rewriting vigil's drain reason")
		}
	}
	return failCode
}

// keptNames are the kept checks' names, the pseudo-check budget left out.
func keptNames(kept []keptCheck) []string {
	var names []string
	for _, k := range kept {
		if k.Entry.Check != benchmarks.BudgetCheck {
			names = append(names, k.Entry.Check)
		}
	}
	return names
}

// keptChecks lists the kept checks for a --checks flag ("gemm,disk").
func keptChecks(kept []keptCheck) string {
	var names []string
	for _, k := range kept {
		if k.Entry.Check != benchmarks.BudgetCheck {
			names = append(names, k.Entry.Check)
		}
	}
	if len(names) == 0 {
		return "<the suite>"
	}
	return strings.Join(names, ",")
}

// nodeState is the node's state as Slurm prints it ("IDLE+DRAIN").
func nodeState(n slurm.Node) string {
	return strings.Join(append([]string{n.State}, n.Flags...), "+")
}

// retestHint says how to re-test checks on node, for logs and notices: a
// local check with `vigil-prolog --node N --checks ...`; a cross-node
// check (net-connect, net-bandwidth, ...) only in the prolog of a job on
// the node and its peers, so the way is to resume the node once its cause
// is fixed and let the next multi-node job's prolog check it again.
func retestHint(node string, checks []string) string {
	var local, cross []string
	for _, c := range checks {
		if ch, ok := benchmarks.Lookup(c); ok && benchmarks.Describe(ch).Scope == benchmarks.ScopeCrossNode {
			cross = append(cross, c)
		} else {
			local = append(local, c)
		}
	}
	resume := "scontrol update NodeName=" + node + " State=RESUME"
	var parts []string
	if len(local) > 0 {
		parts = append(parts, "re-test with vigil-prolog --node "+node+" --checks "+strings.Join(local, ","))
	}
	if len(cross) > 0 {
		parts = append(parts, strings.Join(cross, ",")+" is tested only by the prolog of a job on "+node+
			" and its peers: once the cause is fixed, resume it ("+resume+"); the next multi-node job checks it again, and a failure drains it again and sends that job back to the queue")
	}
	if len(local) > 0 || len(cross) == 0 {
		parts = append(parts, "or resume by hand: "+resume)
	}
	return strings.Join(parts, "; ")
}
