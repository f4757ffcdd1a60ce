package decide

import (
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/slurm"
)

// The records the decision reads: vigil's failed drains and its remedies
// (kept in the state directory by the lifecycle).

// SlurmPrologError is the reason Slurm drains a node with when its prolog
// fails.
const SlurmPrologError = "Prolog error"

// FailedDrain is one drain vigil could not make.
type FailedDrain struct {
	// Time is when the drain failed.
	Time time.Time `json:"time"`
	// Reason is the reason vigil wanted to set.
	Reason string `json:"reason"`
	// Job is the job whose prolog failed ("" outside a prolog).
	Job string `json:"job,omitempty"`
	// Error is why the drain failed.
	Error string `json:"error"`
}

// liftsPrologError reports whether n is drained by Slurm for the failed
// prolog vigil could not drain itself: reason exactly SlurmPrologError,
// set no earlier than a minute before vigil's recorded failed drain.
func liftsPrologError(n slurm.Node, fd FailedDrain, ok bool) bool {
	if !ok || !n.Drained() || n.Reason != SlurmPrologError || n.ForeignState() != "" {
		return false
	}
	return n.ReasonTime.IsZero() || !n.ReasonTime.Before(fd.Time.Add(-time.Minute))
}

// MayLiftPrologError reports whether the decision may lift Slurm's
// "Prolog error" on the node: the run passed inside its budget and the
// node is drained (or down) by someone other than vigil. Only then is
// vigil's failed-drain record read.
func (in Inputs) MayLiftPrologError() bool {
	n := in.Slurm.Node
	if n == nil || in.BudgetExpired || benchmarks.Verdict(in.Results) != benchmarks.StatusPass {
		return false
	}
	foreign := n.ForeignState() != ""
	return (n.Drained() || foreign) && (!n.OwnedByVigil() || foreign)
}

// RemedyRecord is one remedy vigil made on a node.
type RemedyRecord struct {
	// At is when it was made.
	At time.Time `json:"at"`
	// Kind is "reset" or "reboot".
	Kind string `json:"kind"`
	// Check and Reason are the failure it was for.
	Check  string `json:"check"`
	Reason string `json:"reason,omitempty"`
	// Device is the component ("gpu3"), "" for the node.
	Device string `json:"device,omitempty"`
	// ID is the component's stable id when the check reported one.
	ID string `json:"id,omitempty"`
	// Job is the job whose prolog or epilog made it, "" outside one.
	Job string `json:"job,omitempty"`
}
