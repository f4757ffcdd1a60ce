package lifecycle

import (
	"context"
	"errors"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/notice"
	"github.com/vigil-hpc/vigil/lifecycle/record"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// act decides what the verdict means for the node and the job, and does
// it: it reads what the decision needs (inputs.go), decides (Decide) and
// carries the plan out (apply). It returns the exit code.
func (r *run) act(ctx context.Context) int {
	p := decide.Decide(r.inputs(ctx))
	return r.apply(ctx, p)
}

// apply carries out a Plan: the guard's records and alerts first, then
// the step, in the order the side effects must happen (the job's comment
// before the drain, the admins and the job after it). Slurm's answers
// change the report's action and, for a drain that could not be made, the
// exit code; they never turn into a drain on a doubt.
func (r *run) apply(ctx context.Context, p decide.Plan) int {
	r.rep.Verdict = p.Verdict
	r.admins.Guarded(ctx, p.Guarded)
	switch p.Step {
	case decide.StepHold:
		r.hold(ctx, p)
	case decide.StepDrain:
		return r.drain(ctx, p)
	case decide.StepBlind:
		r.notes.add("%s", p.Note)
		r.log.WithError(p.Cause).Error("reading the node's state with scontrol: vigil cannot resume or keep its drain this run")
	case decide.StepKeep:
		if p.LiftPrologError != nil {
			st := failedDrains(stateDir(r.o), r.notes)
			if a, ok := liftPrologError(ctx, r.sl, st, r.rep.Node, *p.LiftPrologError, r.log); ok {
				r.rep.Action = a
				return p.Exit
			}
		}
		r.rep.Action = p.Action
	case decide.StepStay:
		r.stay(ctx, p)
	case decide.StepResume:
		r.resume(ctx, p)
	default:
		if p.Action.Kind != "" {
			r.rep.Action = p.Action
		}
		if p.Note != "" {
			r.notes.add("%s", p.Note)
		}
	}
	return p.Exit
}

// hold requeues the job held: the budget ran out with on_budget_expiry = hold.
func (r *run) hold(ctx context.Context, p decide.Plan) {
	r.rep.Action = p.Action
	cli := r.sl.Client()
	if cli == nil {
		return
	}
	cctx, cancel := r.sl.Bound(ctx)
	defer cancel()
	if err := cli.Requeue(cctx, r.job.ID, true); err != nil {
		r.rep.Action.Error = err.Error()
		r.log.WithError(err).Error("holding the job")
		return
	}
	r.rep.Action.Done = true
	r.log.Warn("budget expired: job held, node left alone")
}

// drain writes the node's failure in the job's comment, drains the node
// for the plan's reason (a node back DOWN from vigil's reboot that is
// rebooted again is left DOWN), and then carries out the repair ladder's
// remedy, tells the admins and requeues the job; the job's user hears of
// it last, whatever Slurm answered.
func (r *run) drain(ctx context.Context, p decide.Plan) int {
	rep := r.rep
	if p.Comment != "" {
		r.cw.Failed(ctx, p.Comment)
	}
	if p.NotifyUser {
		defer func() {
			notice.NotifyUser(ctx, r.user, r.rep, r.job, record.ResultDir(r.s.Prolog, r.o.Lookup), r.sl, r.log, r.notes.add)
		}()
	}
	rep.Action = p.Action
	cli := r.sl.Client()
	if cli == nil {
		r.admins.Drained(ctx, p)
		return p.Exit
	}
	cctx, cancel := r.sl.Bound(ctx)
	defer cancel()
	var err error
	if !p.KeepDown {
		err = cli.Drain(cctx, rep.Node, p.Drain.Reason)
	}
	if err != nil && rep.Action.Remedy != nil {
		rep.Action.Remedy.Error = "not tried: the node was not drained"
	}
	switch {
	case errors.Is(err, slurm.ErrNotOurs):
		rep.Action.Kind = report.ActionKeep
		if n, nerr := cli.Node(cctx, rep.Node); nerr == nil {
			rep.Action.Reason = n.Reason
			rep.Action.State = decide.NodeState(n)
		}
		msg := "the node is held by someone else: vigil leaves it as it is"
		if r.o.Mode == decide.ModeProlog {
			msg += "; failing the prolog so that Slurm requeues the job"
		}
		r.log.WithError(err).Warn(msg)
		return p.ExitNotDrained
	case err != nil:
		rep.Action.Error = err.Error()
		r.log.WithError(err).Error("draining the node")
		if p.RememberFailedDrain {
			fd := decide.FailedDrain{Time: r.o.Now().UTC(), Reason: p.Drain.Reason, Error: err.Error()}
			if r.job != nil {
				fd.Job = r.job.ID
			}
			failedDrains(stateDir(r.o), r.notes).remember(rep.Node, fd)
		}
		return p.ExitNotDrained
	}
	rep.Action.Done = true
	if p.KeepDown {
		r.log.WithField("reason", p.Drain.Reason).Warn("node left DOWN: it is back from vigil's reboot and is rebooted again")
	} else {
		r.log.WithField("reason", p.Drain.Reason).Warn("node drained")
	}
	r.remedy(ctx, p)
	r.admins.Drained(ctx, p)
	r.requeueJob(ctx, p.Requeue)
	return p.Exit
}

// requeueJob puts the job whose prolog failed on this (now drained) node
// back in the queue, unheld, so that it runs on healthy nodes: Slurm would
// hold it ("launch failed requeued held") until someone releases it. It
// does so at most [prolog] max_requeues times per job (the job's restart
// count); 0 keeps Slurm's hold. Another failing node of the job may have
// requeued it first: then scontrol refuses, which is fine. A job that
// cannot be requeued (an interactive one) is left to Slurm.
func (r *run) requeueJob(ctx context.Context, q decide.Requeue) {
	if q == decide.RequeueNone {
		return
	}
	log := r.log.WithFields(logrus.Fields{"job": r.job.ID, "restarts": r.job.RestartCount, "max_requeues": r.s.Prolog.MaxRequeues})
	if q == decide.RequeueHeld {
		r.rep.Action.Requeue = "held"
		log.Warn("the job was requeued [prolog] max_requeues times already: Slurm holds it (release it with scontrol release JOBID)")
		return
	}
	cctx, cancel := r.sl.Bound(ctx)
	defer cancel()
	if err := r.sl.Client().Requeue(cctx, r.job.ID, false); err != nil {
		r.rep.Action.Requeue = "not requeued by vigil: " + err.Error()
		log.WithError(err).Info("requeueing the job (another node of the job may have done it, or it is not a batch job): Slurm requeues and holds it")
		return
	}
	r.rep.Action.Requeue = "requeued"
	log.Info("job requeued, unheld: it runs again on healthy nodes after Slurm's requeue delay")
}

// stay keeps vigil's drain because the run did not clear every check its
// reason names, rewriting the reason when some of them were cleared.
func (r *run) stay(ctx context.Context, p decide.Plan) {
	rep := r.rep
	if p.Comment != "" {
		r.cw.Failed(ctx, p.Comment)
	}
	rep.Action = p.Action
	rep.Action.Done = true
	r.notes.add("%s", p.Note)
	kept := decide.KeptSummary(p.Drain.Kept)
	hint := notice.RetestHint(rep.Node, decide.KeptNames(p.Drain.Kept))
	if decide.NeedsService(p.Drain.Reason) {
		hint = "service it, then resume by hand: scontrol update NodeName=" + rep.Node + " State=RESUME"
	}
	r.log.WithFields(logrus.Fields{"reason": p.Drain.Reason, "kept": kept}).
		Warn(rep.Node + " stays drained by vigil: " + kept + " (" + hint + ")")
	if !p.Rewrite {
		return
	}
	cctx, cancel := r.sl.Bound(ctx)
	defer cancel()
	if err := r.sl.Client().Drain(cctx, rep.Node, p.Drain.Reason); err != nil {
		rep.Action.Done = false
		rep.Action.Error = err.Error()
		r.log.WithError(err).Error("rewriting vigil's drain reason")
	}
}

// resume resumes the node: every check its vigil reason named ran and passed.
func (r *run) resume(ctx context.Context, p decide.Plan) {
	rep := r.rep
	rep.Action = p.Action
	cctx, cancel := r.sl.Bound(ctx)
	defer cancel()
	resumed, err := r.sl.Client().Resume(cctx, rep.Node)
	switch {
	case err != nil:
		rep.Action.Error = err.Error()
		r.log.WithError(err).Error("resuming the node")
	case resumed:
		rep.Action.Done = true
		r.log.WithFields(logrus.Fields{"reason": p.Action.Reason, "lifted": strings.Join(p.Drain.Lifted, ",")}).Info("node resumed: every check its vigil reason named ran and passed")
	}
}
