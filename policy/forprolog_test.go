package policy

import (
	"fmt"
	"time"

	"github.com/vigil-hpc/vigil/config"
)

// ForProlog (the tests' way in) returns what vigil-prolog runs for the job whose SPANK_VIGIL_*
// variables lookup reads: the [policy] of f applied to the job's request,
// given the registered checks (reg) and the configured [prolog] budget.
// It never fails: a malformed value, or an invalid [policy] section, makes
// the job's choices ignored with a warning, and the configured checks run.
func ForProlog(f *config.File, lookup func(string) (string, bool), reg Registry, budget time.Duration) Prolog {
	if r, _ := FromSpankEnv(lookup); r.Empty() {
		return Default().ForProlog(lookup, reg, budget) // nothing asked: [policy] is not read
	}
	p, err := Load(f, reg.Names)
	if err != nil {
		_, errs := FromSpankEnv(lookup)
		return Prolog{Budget: budget, Warnings: append(ignoring(errs),
			fmt.Sprintf("the job's --vigil-* choices are ignored: [policy] is invalid: %v", err))}
	}
	return p.ForProlog(lookup, reg, budget)
}
