package settings

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
)

// loadRepair loads [repair]: the file over the defaults, then the
// environment (VIGIL_REPAIR), then one validation, and checks that each
// ladder names a check of this build or a reason token a check declares.
func loadRepair(f *config.File, s *Settings) []error {
	s.Repair = config.DefaultRepair()
	var errs []error
	if err := f.Decode("repair", &s.Repair); err != nil {
		errs = append(errs, withValidKeys(err, "repair", s.Repair)...)
	}
	errs = append(errs, config.SplitErrors(config.RepairOverrides().Apply(&s.Repair, s.repairEnv, config.FromEnv))...)
	errs = append(errs, config.RepairOverrides().Explain(f, s.Repair.Validate(f), s.repairEnv, nil)...)
	keys := slices.Sorted(maps.Keys(s.Repair.Ladders))
	for _, key := range keys {
		if !f.Has("repair.ladders." + key) {
			continue // a shipped ladder: its token is the catalogue's
		}
		if !ladderKey(key) {
			errs = append(errs, f.Errorf("repair.ladders."+key,
				"%q is neither a check of this build nor a reason token a check gives (vigil-prolog --list-checks lists both)", key))
		}
	}
	return errs
}

// ladderKey reports whether key names a registered check, a reason token
// that a check declares (a numbered family such as XID<code> by any of its
// numbers) or one that any check can give.
func ladderKey(key string) bool {
	if _, ok := benchmarks.Lookup(key); ok || slices.Contains(benchmarks.RunnerReasons(), key) {
		return true
	}
	for _, name := range benchmarks.Names() {
		c, _ := benchmarks.Lookup(name)
		for _, t := range benchmarks.Describe(c).Reasons {
			if t == key || numberedToken(t, key) {
				return true
			}
		}
	}
	return false
}

// numberedToken reports whether key is a member of the numbered family
// pattern ("XID<code>" holds "XID79").
func numberedToken(pattern, key string) bool {
	i := strings.IndexByte(pattern, '<')
	if i < 0 || !strings.HasSuffix(pattern, ">") {
		return false
	}
	return regexp.MustCompile(`^` + regexp.QuoteMeta(pattern[:i]) + `[0-9]+$`).MatchString(key)
}
