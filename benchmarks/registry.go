package benchmarks

import (
	"errors"
	"fmt"
)

// ErrUnknownCheck is returned for a check name nothing registered.
var ErrUnknownCheck = errors.New("unknown check")

// Select returns the registered checks to run: the named ones (the default suite,
// Descriptor.Default, when names is empty), minus skip, and only health facts
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
	descs := make(map[string]Descriptor, len(all))
	byDefault := len(names) == 0
	for _, c := range all {
		d := Describe(c)
		byName[d.Name], descs[d.Name] = c, d
		if byDefault && d.Default {
			names = append(names, d.Name)
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
		d := descs[n]
		if skipped[n] || seen[n] || (healthOnly && d.Kind != KindHealth) {
			continue
		}
		seen[n] = true
		if byDefault && hw != nil && !applies(d, *hw) {
			na = append(na, NotApplicable{Check: n, Vendor: d.Vendor, Message: absent(d.Vendor)})
			continue
		}
		out = append(out, c)
	}
	return out, na, errors.Join(errs...)
}

// Validator is implemented by the settings a check's Descriptor.Settings
// returns when their values have ranges. vigil-prolog calls Validate when
// it loads the config, so that --check-config and every run report a bad
// value with its file, line and key; the check calls the same Validate before it runs.
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
