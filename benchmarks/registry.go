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
// It ignores the node's hardware; SelectFor chooses the default suite by vendor.
func Select(names, skip []string, healthOnly bool) ([]Check, error) {
	checks, _, err := selectChecks(registered(), names, skip, healthOnly, nil)
	return checks, err
}

// selectChecks is Select and SelectFor over the checks in all (sorted by
// name). hw nil means every vendor applies.
func selectChecks(all []Check, names, skip []string, healthOnly bool, hw *Hardware) ([]Check, []NotApplicable, error) {
	var errs []error
	byName := make(map[string]Check, len(all))
	for _, c := range all {
		byName[c.Name()] = c
	}
	byDefault := len(names) == 0
	if byDefault {
		for _, c := range all {
			if InDefaultSuite(c) {
				names = append(names, c.Name())
			}
		}
	}
	skipped := map[string]bool{}
	for _, s := range skip {
		if _, ok := byName[s]; !ok {
			errs = append(errs, fmt.Errorf("%w %q in skip", ErrUnknownCheck, s))
		}
		skipped[s] = true
	}
	var out []Check
	var na []NotApplicable
	seen := map[string]bool{}
	for _, n := range names {
		c, ok := byName[n]
		if !ok {
			errs = append(errs, fmt.Errorf("%w %q", ErrUnknownCheck, n))
			continue
		}
		if skipped[n] || seen[n] || (healthOnly && c.Kind() != KindHealth) {
			continue
		}
		seen[n] = true
		if byDefault && hw != nil && !applies(c, *hw) {
			v := VendorOf(c)
			na = append(na, NotApplicable{Check: n, Vendor: v, Message: absent(v)})
			continue
		}
		out = append(out, c)
	}
	return out, na, errors.Join(errs...)
}
