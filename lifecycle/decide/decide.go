// Package decide is the lifecycle's decision: what a run does to the node
// and the job once its checks ran (Decide(Inputs) Plan), as a pure
// function: no I/O, no clock, no Slurm. The guard (guard.go), the drain
// rule (drain.go) and the repair ladder's remedy (repair.go) are parts of
// it; package lifecycle reads the Inputs and carries the Plan out.
package decide

import (
	"fmt"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// A run decides, then acts. Decide is the whole decision of what a run
// does to the node and the job once its checks ran: a pure function of
// what the run knows (Inputs: the results, the node's state as Slurm
// showed it, the settings that matter, the clock's time), with no I/O, no
// clock and no Slurm. The lifecycle's apply (lifecycle/apply.go) carries
// the Plan out over the Slurm client and the notifiers, in the order the
// side effects must happen.

// Inputs are what a run knows once its checks ran.
type Inputs struct {
	// Mode is prolog, epilog, health or validate.
	Mode Mode
	// Node is this node's name.
	Node string
	// Job is the job the run is for; nil outside a job and in health mode.
	Job *JobFacts
	// JobChecks is set when the job chose its own checks (--vigil-checks).
	JobChecks bool
	// DryRun is set when the run changes nothing.
	DryRun bool
	// Now is the time the decision is made at.
	Now time.Time
	// Components are the parts the run's checks identified (the
	// report's), so that a remedy names its part's stable id.
	Components []benchmarks.Component
	// Results are the run's results, the cross-node ones included.
	Results []benchmarks.Result
	// BudgetExpired is set when the run ran out of its budget.
	BudgetExpired bool
	// Rules are the settings the decision reads.
	Rules Rules
	// Node state, as Slurm showed it before the run acts.
	Slurm SlurmView
	// Repair is what the repair ladder reads (history, RebootProgram,
	// idle devices); read only with [repair] on and a failure.
	Repair RepairView
	// JobFailing is, per check, the job's nodes that failed it, as the
	// cross-node phase counted them (nil without one): the guard counts
	// them as drained.
	JobFailing map[string][]string
	// Registered reports whether a check exists in this build; nil means
	// every check does.
	Registered func(string) bool
}

// JobFacts are what the decision reads of the job.
type JobFacts struct {
	// ID is the job id.
	ID string
	// RestartCount is how many times the job was requeued.
	RestartCount int
	// Devices are the job's device indices, nil when not known.
	Devices []int
}

// Rules are the settings that matter to the decision.
type Rules struct {
	// OnBudgetExpiry is [prolog] on_budget_expiry.
	OnBudgetExpiry string
	// MaxRequeues is [prolog] max_requeues.
	MaxRequeues int
	// JobComment is set when the prolog writes the job's comment
	// ([prolog] job_comment, with a valid config).
	JobComment bool
	// Guard is [guard].
	Guard config.Guard
	// Notify is set when [notify] tells the admins of anything.
	Notify bool
	// UserNotify is set when the job chose to hear of a failure
	// (--vigil-notify within [policy]).
	UserNotify bool
	// Repair is [repair].
	Repair config.Repair
}

// SlurmView is what Slurm said before the run acts.
type SlurmView struct {
	// Node is the node's state; nil when Slurm was not asked (a dry run)
	// or could not answer (NodeErr).
	Node *slurm.Node
	// NodeErr is why the node's state could not be read.
	NodeErr error
	// Fleet is every node of the cluster, nil when not read (the guard
	// then does not act).
	Fleet []slurm.Node
	// FailedDrain is vigil's record of a drain it could not make on this
	// node (faileddrain.go), nil when there is none.
	FailedDrain *FailedDrain
}

// Step is what a plan does to the node or the job.
type Step int

const (
	// StepNone changes nothing.
	StepNone Step = iota
	// StepBlind changes nothing because the node's state could not be read.
	StepBlind
	// StepHold requeues the job held and leaves the node alone.
	StepHold
	// StepDrain drains the node (and requeues the job in the prolog).
	StepDrain
	// StepStay keeps vigil's drain, its reason rewritten when it changed.
	StepStay
	// StepResume resumes the node vigil drained.
	StepResume
	// StepKeep leaves someone else's drain or state in place.
	StepKeep
)

// Requeue is what a prolog that drained its node does with the job.
type Requeue int

const (
	// RequeueNone leaves the job alone (no job, not a prolog).
	RequeueNone Requeue = iota
	// RequeueJob puts the job back in the queue, unheld.
	RequeueJob
	// RequeueHeld leaves Slurm's hold: [prolog] max_requeues is reached.
	RequeueHeld
)

// Plan is what a run does once its checks ran.
type Plan struct {
	// Step is what is done to the node or the job.
	Step Step
	// Verdict is the run's verdict: the results', or fail when the drain
	// rule found a failure the results do not show (the budget ran out).
	Verdict benchmarks.Status
	// Action is the report's action as planned; apply sets Done, Error
	// and what Slurm answered. Kind "" leaves the report's action as it
	// is (the epilog's killed processes in it).
	Action report.Action
	// Exit is the exit code once the step is done.
	Exit int
	// ExitNotDrained is the exit code when a drain could not be made.
	ExitNotDrained int
	// Drain is the drain rule's answer.
	Drain DrainPlan
	// Old is vigil's drain reason on the node before the run ("" for none).
	Old string
	// Rewrite is set when vigil's drain stays with another reason.
	Rewrite bool
	// Guarded are the failed checks the guard keeps from draining the node.
	Guarded []GuardedCheck
	// Comment is this node's failure for the job's comment, "" for none.
	Comment string
	// Requeue is what a done drain does with the job.
	Requeue Requeue
	// Notify are the checks the admins hear of once the drain is done
	// (those vigil's reason did not name before); nil for none.
	Notify []string
	// NotifyUser is set when the job's user hears of the failure.
	NotifyUser bool
	// RememberFailedDrain is set when a drain that fails is recorded, so
	// that a later passing run lifts Slurm's "Prolog error".
	RememberFailedDrain bool
	// LiftPrologError is the failed drain whose "Prolog error" a
	// StepKeep lifts first; nil for none.
	LiftPrologError *FailedDrain
	// Remedy is the repair ladder's remedy once the drain is done; nil
	// for none (repair.go).
	Remedy *RemedyPlan
	// KeepDown is set when the node is back DOWN from vigil's reboot and
	// the remedy reboots it again: it is not drained first (a drain would
	// make it DOWN+DRAIN, no longer vigil's).
	KeepDown bool
	// Note is the step's note for the report, "" for none.
	Note string
	// Cause is why the step is StepBlind.
	Cause error
}

// Decide applies the guard and the drain rule to what the run knows and
// says what to do.
func Decide(in Inputs) Plan {
	p := Plan{Verdict: benchmarks.Verdict(in.Results), Exit: ExitOK}
	failCode := ExitFail
	if in.Mode == ModeEpilog {
		// vigil drains the node itself; a failing epilog would make Slurm
		// replace vigil's reason with "Epilog error".
		failCode = ExitOK
	}
	if in.HoldsJob() {
		if in.Job == nil || in.Mode != ModeProlog {
			p.Action = report.Action{Kind: report.ActionNone}
			p.Note = "budget expired with on_budget_expiry = hold, but there is no job to hold"
			return p
		}
		p.Step, p.Action = StepHold, report.Action{Kind: report.ActionHold}
		return p
	}
	var results []benchmarks.Result
	p.Guarded, results = guardPlan(in)
	n := in.Slurm.Node
	held := n != nil && (n.Drained() && n.OwnedByVigil() && n.ForeignState() == "" || n.RebootedDown())
	if held {
		p.Old = n.Reason
	}
	if NeedsService(p.Old) {
		return in.serviceStays(p, failCode)
	}
	p.Drain = planDrain(p.Old, in.scope(results))
	switch {
	case p.Drain.Failed:
		return in.drain(p, failCode, results)
	case in.Slurm.NodeErr != nil:
		p.Step, p.Cause = StepBlind, in.Slurm.NodeErr
		p.Note = fmt.Sprintf("reading %s's state: %v", in.Node, in.Slurm.NodeErr)
	case n == nil:
		if in.DryRun {
			p.Note = fmt.Sprintf("a run that is not dry would resume %s if vigil had drained it and this run cleared every check its reason names (dry runs do not query Slurm)", in.Node)
		}
	case !held && !n.Drained() && n.ForeignState() == "":
		// Up, perhaps with a leftover reason (Node.StaleReason): nothing to lift.
	case !held:
		p.Step, p.Action = StepKeep, report.Action{Kind: report.ActionKeep, Reason: n.Reason, State: NodeState(*n)}
		if fd := in.Slurm.FailedDrain; p.Verdict == benchmarks.StatusPass && fd != nil && liftsPrologError(*n, *fd, true) {
			p.LiftPrologError = fd
		}
	case p.Drain.Reason != "":
		// Back DOWN from vigil's reboot, a rewrite would drain it DOWN+DRAIN.
		p.Step, p.Exit, p.Rewrite = StepStay, failCode, p.Drain.Reason != p.Old && !n.RebootedDown()
		p.Action = report.Action{Kind: report.ActionStay, Reason: p.Drain.Reason, Lifted: p.Drain.Lifted, Kept: keptWhys(p.Drain.Kept)}
		p.Note = fmt.Sprintf("%s stays drained: %s", in.Node, KeptSummary(p.Drain.Kept))
		if in.comments() {
			p.Comment = in.Node + " stays drained for " + keptChecks(p.Drain.Kept)
		}
	default:
		p.Step = StepResume
		p.Action = report.Action{Kind: report.ActionResume, Reason: n.Reason, Lifted: p.Drain.Lifted}
	}
	return p
}

// drain is the plan of a run that found a failure: drain the node for it.
// The prolog, health and validate modes exit ExitFail when the node is
// drained by vigil afterwards; health and validate modes exit
// ExitNotDrained when they could not drain (another party holds the node,
// or scontrol failed); the epilog always exits ExitOK. With [repair] on,
// the plan holds the remedy for the failure (results are the guard's).
func (in Inputs) drain(p Plan, failCode int, results []benchmarks.Result) Plan {
	p.Step, p.Verdict, p.Exit, p.ExitNotDrained = StepDrain, benchmarks.StatusFail, failCode, failCode
	if in.Mode == ModeHealth || in.Mode == ModeValidate {
		p.ExitNotDrained = ExitNotDrained
	}
	p.Action = report.Action{Kind: report.ActionDrain, Reason: p.Drain.Reason, Kept: keptWhys(p.Drain.Kept)}
	if in.comments() {
		p.Comment = NodeFailure(in.Node, in.Results)
	}
	if in.Rules.Notify {
		p.Notify = newlyDrained(p.Old, p.Guarded, in.Results, in.BudgetExpired)
	}
	p.NotifyUser = in.actsOnJob() && in.Rules.UserNotify
	p.RememberFailedDrain = !in.DryRun && in.Mode != ModeEpilog
	if in.actsOnJob() && in.Job.ID != "" {
		p.Requeue = RequeueJob
		if in.Job.RestartCount >= in.Rules.MaxRequeues {
			p.Requeue = RequeueHeld
		}
	}
	if in.Rules.Repair.Enabled {
		p = in.repair(p, results)
	}
	return p
}

// HoldsJob reports whether the run ran out of its budget with
// on_budget_expiry = hold: then it holds the job (when there is one) and
// neither drains nor resumes, so Slurm is not asked about the node.
func (in Inputs) HoldsJob() bool {
	return in.BudgetExpired && in.Rules.OnBudgetExpiry == config.ActionHold
}

// actsOnJob reports whether the run is a prolog with a job that changes
// things: the one that writes the job's comment and tells the job's user.
func (in Inputs) actsOnJob() bool {
	return in.Mode == ModeProlog && in.Job != nil && !in.DryRun
}

// comments reports whether the run writes the job's comment.
func (in Inputs) comments() bool { return in.actsOnJob() && in.Rules.JobComment }

// scope is what the drain rule needs of the run, with the results the
// guard left.
func (in Inputs) scope(results []benchmarks.Result) runScope {
	s := runScope{Results: results, BudgetExpired: in.BudgetExpired, Who: who(in.Mode, in.JobChecks), Registered: in.Registered}
	if in.Job != nil && in.Mode == ModeProlog {
		s.Devices = in.Job.Devices
	}
	return s
}

// who names a run in messages.
func who(mode Mode, jobChecks bool) string {
	switch {
	case mode == ModeEpilog:
		return "the epilog"
	case mode == ModeHealth:
		return "this health check"
	case mode == ModeValidate:
		return validateWho
	case jobChecks:
		return "this prolog (the job chose its checks)"
	}
	return "this prolog"
}

// keptWhys are the phrases of the kept checks, for the report.
func keptWhys(kept []keptCheck) []string {
	var out []string
	for _, k := range kept {
		out = append(out, k.Why)
	}
	return out
}
