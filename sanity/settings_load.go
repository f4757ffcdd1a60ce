package sanity

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
)

// Settings is the effective configuration of a run: the file, then the
// environment, then flags.
type Settings struct {
	// File is the parsed config (empty when the default file is missing).
	File *config.File
	// Path is the config file's path.
	Path string
	// Found is false when the default file did not exist.
	Found bool
	// Prolog is the effective [prolog] section.
	Prolog config.Prolog
	// Epilog is the effective [epilog] section.
	Epilog config.Epilog
	// Explicit holds the [prolog] keys set by flag or environment.
	Explicit map[string]bool
}

// OtherSections are the config sections vigil-prolog leaves to other
// programs (the watcher, the SPANK policy).
var OtherSections = []string{"watch", "policy"}

// LoadSettings reads path (a missing file is an error only when explicit),
// applies the environment's and the flags' overrides and validates
// everything strictly: [prolog], [epilog], every registered check's
// [checks.NAME] that publishes its settings, and keys nobody claims. It
// returns usable settings (defaults where the file was unusable) and every
// error found; any error makes the config invalid.
func LoadSettings(path string, explicit bool, lookup func(string) (string, bool), flags map[string]string) (*Settings, []error) {
	s := &Settings{Path: path, Found: true, Prolog: config.DefaultProlog(), Epilog: config.DefaultEpilog(), Explicit: map[string]bool{}}
	var errs []error
	f, err := config.Load(path)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist) && !explicit:
		s.Found = false
		f = config.Empty(path)
	default:
		errs = append(errs, err)
		s.Found = !errors.Is(err, fs.ErrNotExist)
		f = config.Empty(path)
	}
	s.File = f
	if err := f.Decode("prolog", &s.Prolog); err != nil {
		errs = append(errs, err)
		salvagePaths(f, &s.Prolog)
	}
	if err := f.Decode("epilog", &s.Epilog); err != nil {
		errs = append(errs, err)
	}
	for _, sec := range OtherSections {
		f.Claim(sec)
	}
	env := EnvOverrides(lookup)
	if err := ApplyOverrides(&s.Prolog, env, "environment"); err != nil {
		errs = append(errs, err)
	}
	if err := ApplyOverrides(&s.Prolog, flags, "flag"); err != nil {
		errs = append(errs, err)
	}
	for k := range env {
		s.Explicit[k] = true
	}
	for k := range flags {
		s.Explicit[k] = true
	}
	if err := s.Prolog.Validate(f); err != nil {
		errs = append(errs, err)
	}
	if err := s.Epilog.Validate(f); err != nil {
		errs = append(errs, err)
	}
	if _, err := benchmarks.Select(s.Prolog.Checks, s.Prolog.Skip, false); err != nil {
		errs = append(errs, f.Errorf("prolog.checks", "%v (registered: %v)", err, benchmarks.Names()))
	}
	for name := range s.Prolog.Timeouts {
		if _, ok := benchmarks.Lookup(name); !ok {
			errs = append(errs, f.Errorf("prolog.timeouts."+name, "%v %q", benchmarks.ErrUnknownCheck, name))
		}
	}
	for _, name := range benchmarks.Names() {
		c, _ := benchmarks.Lookup(name)
		if d, ok := c.(benchmarks.Defaulter); ok {
			if err := f.Decode("checks."+name, d.Defaults()); err != nil {
				errs = append(errs, err)
			}
		} else {
			f.Claim("checks." + name) // the check validates its own settings when it runs
		}
	}
	for _, e := range f.Unused() {
		errs = append(errs, fmt.Errorf("%w (known sections: prolog, epilog, %s, and checks.NAME for the checks %s)",
			e, strings.Join(OtherSections, ", "), strings.Join(benchmarks.Names(), ", ")))
	}
	return s, errs
}

// salvagePaths reads the record paths of [prolog] from a section that did
// not decode (a bad value elsewhere stops the decoder), so that the report
// of an invalid config still goes where the admin asked for it.
func salvagePaths(f *config.File, p *config.Prolog) {
	var raw map[string]any
	if f.Decode("prolog", &raw) != nil {
		return
	}
	for key, dst := range map[string]*string{"report_dir": &p.ReportDir, "textfile": &p.Textfile, "run_dir": &p.RunDir} {
		if v, ok := raw[key].(string); ok {
			*dst = v
		}
	}
}
