package lifecycle

import (
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
	"github.com/vigil-hpc/vigil/policy"
	"github.com/vigil-hpc/vigil/report"
)

// PolicyRegistry is what [policy] needs of the check registry: the
// registered checks, and the test-only fault injection that users may
// choose only where [policy] checks names it. The policy package takes it
// as a parameter, so that vigil-watch, which links the policy, does not
// link the checks. The checks a job may choose by default are those the
// admin's [prolog] runs (Registry.WithProlog).
func PolicyRegistry() policy.Registry {
	var defaults []string
	for _, c := range benchmarks.Infos() {
		if c.Default {
			defaults = append(defaults, c.Name)
		}
	}
	return policy.Registry{Names: benchmarks.Names(), TestOnly: []string{benchmarks.FaultCheckName}, Defaults: defaults}
}

// jobChoices are what the job's own choices set beyond [prolog].
type jobChoices struct {
	// Skip is set when the job skipped the checks: the run ends here.
	Skip bool
	// JobChecks is set when the job's checks replace the configured ones.
	JobChecks bool
	// Notify is the job's --vigil-notify and --vigil-webhook within [policy].
	Notify policy.Notify
	// Shorter is set when the job chose a shorter budget (now s.Prolog.Budget).
	Shorter bool
}

// applyJobChoices applies the job's own choices (--vigil-checks and
// --vigil-timing of vigil's SPANK plugin, which arrive as SPANK_VIGIL_*) to
// s.Prolog, within [policy]. A choice outside the policy is ignored with a
// warning; the budget never grows. The report gets the checks dropped and,
// when the job skipped the checks, why none ran.
func applyJobChoices(s *settings.Settings, lookup func(string) (string, bool), rep *report.Report, log logrus.FieldLogger, n notes) jobChoices {
	pp := s.Policy.ForProlog(lookup, PolicyRegistry().WithProlog(s.Prolog.Checks, s.Prolog.Skip), s.Prolog.Budget)
	for _, w := range pp.Warnings {
		n.add("policy: %s", w)
		log.Warn("policy: " + w)
	}
	jc := jobChoices{Notify: pp.Notify}
	if pp.Skip {
		rep.Skipped = "the job skipped the checks (--vigil-checks=none, allowed by [policy] allow_skip)"
		log.Info(rep.Skipped)
		jc.Skip = true
		return jc
	}
	for _, d := range pp.Dropped {
		drop(rep, log, d.Check, d.Reason)
	}
	// The admin's [prolog] skip holds over the job's choice too.
	var chosen []string
	for _, c := range pp.Checks {
		if slices.Contains(s.Prolog.Skip, c) {
			drop(rep, log, c, "removed by [prolog] skip")
		} else {
			chosen = append(chosen, c)
		}
	}
	switch {
	case len(chosen) > 0:
		s.Prolog.Checks = chosen
		jc.JobChecks = true
		n.add("checks chosen by the job (--vigil-checks): %s", strings.Join(chosen, ", "))
	case pp.Checks != nil:
		// As when the policy allows none of them: the node is still
		// checked, with what the admin configured.
		n.add("none of the checks the job asked for may run here: running the configured checks")
		log.Warn("none of the checks the job asked for may run here: running the configured checks")
	}
	if pp.Timing != "" {
		s.Prolog.Timing = pp.Timing
	}
	if pp.Budget < s.Prolog.Budget {
		s.Prolog.Budget = pp.Budget
		jc.Shorter = true
	}
	return jc
}

// drop records a check the job asked for that does not run, in the
// report's dropped list and the log.
func drop(rep *report.Report, log logrus.FieldLogger, check, reason string) {
	rep.Dropped = append(rep.Dropped, report.Dropped{Check: check, Reason: reason})
	log.WithFields(logrus.Fields{"check": check, "reason": reason}).Warn("dropped a check the job asked for (--vigil-checks)")
}
