package benchmarks

import (
	"errors"
	"fmt"
)

// ErrUnknownCheck is returned for a check name nothing registered.
var ErrUnknownCheck = errors.New("unknown check")

// OffByDefault is implemented by checks that run only when named in the
// config's [prolog] checks list (the fault-injection check, expensive probes).
type OffByDefault interface {
	OffByDefault() bool
}

// Defaulter is implemented by checks that have settings. Defaults returns a
// pointer to a new settings struct holding the check's shipped defaults
// (thresholds per device model included); vigil-prolog --check-config
// decodes [checks.NAME] into it and prints the result.
type Defaulter interface {
	Defaults() any
}

// Select returns the registered checks to run: the named ones (every check
// not OffByDefault when names is empty), minus skip, and only health facts
// when healthOnly is set. Unknown names are errors wrapping ErrUnknownCheck.
func Select(names, skip []string, healthOnly bool) ([]Check, error) {
	var errs []error
	if len(names) == 0 {
		for _, n := range Names() {
			c, _ := Lookup(n)
			if o, ok := c.(OffByDefault); ok && o.OffByDefault() {
				continue
			}
			names = append(names, n)
		}
	}
	skipped := map[string]bool{}
	for _, s := range skip {
		if _, ok := Lookup(s); !ok {
			errs = append(errs, fmt.Errorf("%w %q in skip", ErrUnknownCheck, s))
		}
		skipped[s] = true
	}
	var out []Check
	seen := map[string]bool{}
	for _, n := range names {
		c, ok := Lookup(n)
		if !ok {
			errs = append(errs, fmt.Errorf("%w %q", ErrUnknownCheck, n))
			continue
		}
		if skipped[n] || seen[n] || (healthOnly && c.Kind() != KindHealth) {
			continue
		}
		seen[n] = true
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}
