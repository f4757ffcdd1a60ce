package lifecycle

import (
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/policy"
	"github.com/vigil-hpc/vigil/report"
)

// PolicyRegistry is what [policy] needs of the check registry: the
// registered checks, and the test-only fault injection that users may
// choose only where [policy] checks names it. The policy package takes it
// as a parameter, so that vigil-watch, which links the policy, does not
// link the checks.
func PolicyRegistry() policy.Registry {
	return policy.Registry{Names: benchmarks.Names(), TestOnly: []string{benchmarks.FaultCheckName}}
}

// applyJobChoices applies the job's own choices (--vigil-checks and
// --vigil-timing of vigil's SPANK plugin, which arrive as SPANK_VIGIL_*) to
// [prolog], within [policy]. A choice outside the policy is ignored with a
// warning; the budget never grows. It returns true when the run ends here
// because the job skipped the checks.
func (r *run) applyJobChoices() (int, bool) {
	s := r.s
	pp := s.Policy.ForProlog(r.o.Lookup, PolicyRegistry(), s.Prolog.Budget)
	for _, w := range pp.Warnings {
		r.note("policy: %s", w)
		r.log.Warn("policy: " + w)
	}
	r.user.choice = pp.Notify
	if pp.Skip {
		r.rep.Skipped = "the job skipped the checks (--vigil-checks=none, allowed by [policy] allow_skip)"
		r.log.Info(r.rep.Skipped)
		return ExitOK, true
	}
	for _, d := range pp.Dropped {
		r.drop(d.Check, d.Reason)
	}
	// The admin's [prolog] skip holds over the job's choice too.
	var chosen []string
	for _, c := range pp.Checks {
		if slices.Contains(s.Prolog.Skip, c) {
			r.drop(c, "removed by [prolog] skip")
		} else {
			chosen = append(chosen, c)
		}
	}
	switch {
	case len(chosen) > 0:
		s.Prolog.Checks = chosen
		r.jobChecks = true
		r.note("checks chosen by the job (--vigil-checks): %s", strings.Join(chosen, ", "))
	case pp.Checks != nil:
		// As when the policy allows none of them: the node is still
		// checked, with what the admin configured.
		r.note("none of the checks the job asked for may run here: running the configured checks")
		r.log.Warn("none of the checks the job asked for may run here: running the configured checks")
	}
	if pp.Timing != "" {
		s.Prolog.Timing = pp.Timing
	}
	if pp.Budget < s.Prolog.Budget {
		s.Prolog.Budget = pp.Budget
		r.deadline = r.rep.Start.Add(pp.Budget)
	}
	return ExitOK, false
}

// drop records a check the job asked for that does not run, in the
// report's dropped list and the log.
func (r *run) drop(check, reason string) {
	r.rep.Dropped = append(r.rep.Dropped, report.Dropped{Check: check, Reason: reason})
	r.log.WithFields(logrus.Fields{"check": check, "reason": reason}).Warn("dropped a check the job asked for (--vigil-checks)")
}
