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

// Validator is implemented by the settings a Defaulter returns when their
// values have ranges. vigil-prolog calls Validate when it loads the config,
// so that --check-config and every run report a bad value with its file,
// line and key; the check calls the same Validate before it runs.
type Validator interface {
	Validate() error
}

// SettingError is an error about one key of a check's settings; Validate
// returns it (through BadSetting) so that the config loader can point at
// the key's line.
type SettingError struct {
	// Key is the key in [checks.NAME] ("size_mib").
	Key string
	// Msg says what is wrong and what is allowed ("0: want 1 to 1024").
	Msg string
}

func (e *SettingError) Error() string { return e.Key + " = " + e.Msg }

// BadSetting returns a *SettingError about key.
func BadSetting(key, format string, args ...any) error {
	return &SettingError{Key: key, Msg: fmt.Sprintf(format, args...)}
}
