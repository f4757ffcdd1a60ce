package benchmarks

import (
	"slices"
	"time"
)

// Scope says where a check runs: on one node by the runner, or across the
// job's nodes in the prolog's cross-node phase.
type Scope int

const (
	// ScopeNode is a check of this node alone, run by the runner.
	ScopeNode Scope = iota
	// ScopeCrossNode is a check across the job's nodes, run by the
	// prolog's cross-node phase (benchmarks/crossnet), not by the runner.
	ScopeCrossNode
)

// String returns "node" or "cross-node".
func (s Scope) String() string {
	if s == ScopeCrossNode {
		return "cross-node"
	}
	return "node"
}

// Descriptor is a check's face: everything the prolog, the config loader
// and --list-checks need to know about a check without running it.
type Descriptor struct {
	// Name is the check's stable name, used in config, flags, reports and
	// drain reasons ("gemm", "ecc", "disk").
	Name string
	// Kind says whether failures are retried.
	Kind Kind
	// Vendor is the vendor whose devices the check is about; VendorNone
	// for a vendor-neutral check.
	Vendor Vendor
	// Scope says whether the runner or the cross-node phase runs it.
	Scope Scope
	// Isolated is set when the check calls into vendor libraries and so
	// runs in a child process that can be killed when it hangs.
	Isolated bool
	// Default is set when the check runs with [prolog] checks empty (on a
	// node that shows its vendor's devices).
	Default bool
	// ChecksGres is set for a vendor check that compares the devices
	// Slurm's Gres promises with those present (gpu-count): it stays in
	// the default suite on a node that shows no accelerator at all.
	ChecksGres bool
	// Description is one line saying what the check reads or measures.
	Description string
	// Settings returns a pointer to a new settings struct holding the
	// check's shipped defaults ([checks.NAME]); nil when it has none.
	Settings func() any
	// Reasons are the reason tokens its results can carry beyond
	// RunnerReasons, each spelled as in the source ("GEMMBelowThreshold");
	// a numbered family is written as its pattern ("XID<code>").
	Reasons []string
}

// Describe returns c's descriptor as the prolog reads it: the vendor
// VendorNone when the check names none, and the reasons each once and none
// of RunnerReasons.
func Describe(c Check) Descriptor {
	d := c.Spec()
	if d.Vendor == "" {
		d.Vendor = VendorNone
	}
	var reasons []string
	for _, t := range d.Reasons {
		if !slices.Contains(reasons, t) && !slices.Contains(RunnerReasons(), t) {
			reasons = append(reasons, t)
		}
	}
	d.Reasons = reasons
	return d
}

// ConfigNoter is implemented by a check's settings that have more to say
// under vigil-prolog --check-config than their values: what a run would
// use on this node (the model checks: which Python interpreter).
type ConfigNoter interface {
	ConfigNote() string
}

// Budgeter is implemented by a check's settings that hold a budget of
// their own, start to end (the model check's): a budget longer than the
// check's timeout is cut short by it (settings.Settings.BudgetWarnings).
type Budgeter interface {
	CheckBudget() time.Duration
}

// ConfigWarner is implemented by a check's settings that can be valid and
// still put the node at a user's mercy (a port any user can bind first):
// vigil-prolog --check-config prints each warning on a line of its own.
type ConfigWarner interface {
	ConfigWarnings() []string
}
