package decide

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/slurm"
)

// The drain rule. A vigil drain names every check that put it there
// ("vigil: gemm GEMMBelowThreshold gpu3 +disk"). A run lifts a named check
// only when that check ran in the run and passed, on the device the reason
// names when it names one. Everything else leaves the check on the reason:
//
//   - the run did not run the check (the epilog and health mode run the
//     health facts only; a job chose other checks; the check was removed
//     from the config or from this build);
//   - the check reported unknown (a missing library, a crashed checker):
//     unknown never resumes;
//   - the check ran on the job's devices only, and the device the reason
//     names is not among them.
//
// The node is resumed only when no check is left, and it is drained (or its
// reason rewritten) with the checks that failed in this run first and the
// ones still left after them. The pseudo-check "budget" (a run that ran out
// of its budget) is lifted by any run that finished inside its budget.

// DrainPlan is what one run means for the node's vigil drain.
type DrainPlan struct {
	// Reason is the vigil reason the node should carry; "" means vigil has
	// nothing against the node (resume it if vigil drained it).
	Reason string
	// Failed is set when this run itself found a failure.
	Failed bool
	// Lifted are the checks of the old reason this run ran and passed.
	Lifted []string
	// Kept are the checks of the old reason this run did not clear.
	Kept []keptCheck
}

// keptCheck is a check left on the drain reason, and why.
type keptCheck struct {
	Entry benchmarks.DrainEntry
	// Why is a phrase: "not run by the epilog", "unknown this time (LibraryMissing)".
	Why string
}

// runScope is what the planner needs to know about the run.
type runScope struct {
	// Results are the run's results.
	Results []benchmarks.Result
	// BudgetExpired is set when the run ran out of its budget.
	BudgetExpired bool
	// Devices are the device indices the checks were limited to (the
	// job's); nil means every device of the node.
	Devices []int
	// Who names the run for messages ("the epilog", "this health check",
	// "this prolog (the job chose its checks)").
	Who string
	// Registered reports whether a check exists in this build.
	Registered func(string) bool
}

var deviceIndex = regexp.MustCompile(`^(?:gpu|npu)(\d+)$`)

// covers reports whether a run limited to s.Devices covered the named
// device. Devices that are not an accelerator index ("/scratch") are
// covered by any run of the check.
func (s runScope) covers(device string) bool {
	if device == "" || s.Devices == nil {
		return true
	}
	m := deviceIndex.FindStringSubmatch(device)
	if m == nil {
		return true
	}
	i, err := strconv.Atoi(m[1])
	return err == nil && slices.Contains(s.Devices, i)
}

// planDrain applies the drain rule to the node's current vigil reason (old,
// "" when vigil has not drained it) and one run's outcome.
func planDrain(old string, s runScope) DrainPlan {
	var p DrainPlan
	var next []benchmarks.DrainEntry
	failed := map[string]bool{}
	for _, r := range s.Results {
		if r.Status == benchmarks.StatusFail {
			next = append(next, benchmarks.EntryOf(r))
			failed[r.Check] = true
		}
	}
	if len(next) == 0 && s.BudgetExpired {
		next = append(next, benchmarks.DrainEntry{Check: benchmarks.BudgetCheck, Reason: benchmarks.ReasonBudgetExpired})
		failed[benchmarks.BudgetCheck] = true
	}
	p.Failed = len(next) > 0
	entries, _ := benchmarks.ParseDrain(old)
	for _, e := range entries {
		if failed[e.Check] {
			continue // failed again: named by this run's failure
		}
		if why := s.keepWhy(e); why != "" {
			p.Kept = append(p.Kept, keptCheck{Entry: e, Why: why})
			next = append(next, e)
			continue
		}
		p.Lifted = append(p.Lifted, e.Check)
	}
	p.Reason = benchmarks.FormatDrain(next)
	return p
}

// keepWhy says why the run does not lift entry e, "" when it does.
func (s runScope) keepWhy(e benchmarks.DrainEntry) string {
	if e.Check == benchmarks.BudgetCheck {
		if s.BudgetExpired {
			return "the budget ran out again"
		}
		return ""
	}
	i := slices.IndexFunc(s.Results, func(r benchmarks.Result) bool { return r.Check == e.Check })
	if i < 0 {
		if s.Registered != nil && !s.Registered(e.Check) {
			return fmt.Sprintf("%s is not a check of this vigil build", e.Check)
		}
		return fmt.Sprintf("%s not run by %s", e.Check, s.Who)
	}
	r := s.Results[i]
	switch {
	case r.Status == benchmarks.StatusUnknown:
		return fmt.Sprintf("%s could not tell this time (unknown: %s)", e.Check, r.Reason)
	case r.Status != benchmarks.StatusPass:
		return fmt.Sprintf("%s did not pass (%s)", e.Check, r.Status)
	case !s.covers(e.Device):
		return fmt.Sprintf("%s ran on the job's devices %v only, not on %s", e.Check, s.Devices, e.Device)
	}
	return ""
}

// KeptSummary is the kept checks in one line: "disk not run by the
// epilog; gemm could not tell this time (unknown: LibraryMissing)".
func KeptSummary(kept []keptCheck) string {
	s := ""
	for i, k := range kept {
		if i > 0 {
			s += "; "
		}
		s += k.Why
	}
	return s
}

// KeptNames are the kept checks' names, the pseudo-check budget left out.
func KeptNames(kept []keptCheck) []string {
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

// NodeState is the node's state as Slurm prints it ("IDLE+DRAIN").
func NodeState(n slurm.Node) string {
	return strings.Join(append([]string{n.State}, n.Flags...), "+")
}
