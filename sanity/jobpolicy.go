package sanity

import (
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/policy"
)

// applyJobChoices applies the job's own choices (--vigil-checks and
// --vigil-timing of vigil's SPANK plugin, which arrive as SPANK_VIGIL_*) to
// [prolog], within [policy]. A choice outside the policy is ignored with a
// warning; the budget never grows. It returns true when the run ends here
// because the job skipped the checks.
func (r *run) applyJobChoices() (int, bool) {
	s := r.s
	pp := policy.ForProlog(s.File, r.o.Lookup, benchmarks.Names(), s.Prolog.Budget)
	for _, w := range pp.Warnings {
		r.note("policy: %s", w)
		r.log.Warn("policy: " + w)
	}
	if pp.Skip {
		r.rep.Skipped = "the job skipped the checks (--vigil-checks=none, allowed by [policy] allow_skip)"
		r.log.Info(r.rep.Skipped)
		return ExitOK, true
	}
	if pp.Checks != nil {
		s.Prolog.Checks = pp.Checks
		r.jobChecks = true
		r.note("checks chosen by the job (--vigil-checks): %s", strings.Join(pp.Checks, ", "))
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

// ranCheck reports whether results hold a result of the named check.
func ranCheck(results []benchmarks.Result, check string) bool {
	for _, res := range results {
		if res.Check == check {
			return true
		}
	}
	return false
}
