// Package settings is the configuration of vigil-prolog and vigil-epilog:
// LoadSettings (the file, then the environment, then flags, each section
// loaded once from the table of sections), --check-config, the example
// config of --print-example-config, and the flags and logging the programs
// share.
package settings

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/policy"
)

// Settings is the effective configuration of a run: the file, then the
// environment, then flags. One LoadSettings makes it, loading each section
// once; the run, --check-config and the records use it as it is.
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
	// Watch is the effective [watch] section (the file over the defaults),
	// validated as vigil-watch validates it.
	Watch watchcfg.Settings
	// Policy is the effective [policy] section.
	Policy policy.Policy
	// Notify is the effective [notify] section (admin notifications).
	Notify config.Notify
	// Guard is the effective [guard] section (fleet-wide drain guard).
	Guard config.Guard
	// Idle is the effective [idle] section (the deep suite on idle nodes).
	Idle config.Idle
	// Repair is the effective [repair] section (the remedy ladders).
	Repair config.Repair
	// Vendors holds each vendor's effective [vendor.NAME] library search.
	Vendors map[benchmarks.Vendor]any
	// Checks holds the effective [checks.NAME] settings of every check
	// that publishes them, validated by the check's own Validate.
	Checks map[string]any

	env, flags config.Values // the [prolog] overrides
	repairEnv  config.Values // the [repair] overrides
}

// LoadSettings reads path (a missing file is an error only when explicit),
// applies the environment's and the flags' overrides and validates
// everything strictly: every section of the table (sections) with the code
// that uses it, what names checks, and keys nobody claims. The file is
// parsed once and each section decoded once. It returns usable settings
// (defaults where the file was unusable) and every error found; any error
// makes the config invalid.
func LoadSettings(path string, explicit bool, lookup func(string) (string, bool), flags map[string]string) (*Settings, []error) {
	s := &Settings{Path: path, Found: true, Explicit: map[string]bool{},
		Vendors: map[benchmarks.Vendor]any{}, Checks: map[string]any{},
		env: config.PrologOverrides().Env(lookup), flags: flags, repairEnv: config.RepairOverrides().Env(lookup)}
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
	for _, sec := range sections() {
		errs = append(errs, sec.load(f, s)...)
	}
	return s, append(errs, checkNames(f, s.Prolog)...)
}

// loadProlog loads [prolog]: the file over the defaults, then the
// environment, then the flags, then one validation whose errors name the
// flag or the variable that set a bad value.
func loadProlog(f *config.File, s *Settings) []error {
	s.Prolog = config.DefaultProlog()
	var errs []error
	if err := f.Decode("prolog", &s.Prolog); err != nil {
		errs = append(errs, withValidKeys(err, "prolog", s.Prolog)...)
	}
	deprecatedTextfile(&s.Prolog, f.Has("prolog.textfile"), f.Has("prolog.textfile_dir"))
	errs = append(errs, applyOverrides(&s.Prolog, s.env, config.FromEnv, s.Explicit)...)
	errs = append(errs, applyOverrides(&s.Prolog, s.flags, config.FromFlag, s.Explicit)...)
	var binErr error
	if f.Has("prolog.slurm_bin_dir") || s.Explicit["slurm_bin_dir"] {
		// Only a directory someone named: the default (/usr/bin) on a
		// machine without Slurm must not make a dry run's config invalid.
		binErr = checkSlurmBinDir(f, s.Prolog.SlurmBinDir)
	}
	return append(errs, config.PrologOverrides().Explain(f, errors.Join(s.Prolog.Validate(f), binErr), s.env, s.flags)...)
}

// checkNames checks what names checks ([prolog] checks, skip and
// timeouts), claims the [checks.NAME] of the checks that read their own,
// and reports the keys nobody claimed.
func checkNames(f *config.File, p config.Prolog) []error {
	var errs []error
	if _, err := benchmarks.Select(p.Checks, p.Skip, false); err != nil {
		errs = append(errs, f.Errorf("prolog.checks", "%v (registered: %v)", err, benchmarks.Names()))
	}
	for name := range p.Timeouts {
		if _, ok := benchmarks.Lookup(name); !ok {
			errs = append(errs, f.Errorf("prolog.timeouts."+name, "%v %q", benchmarks.ErrUnknownCheck, name))
		}
	}
	for _, name := range silentChecks() {
		f.Claim("checks." + name)
	}
	var known []string
	for _, sec := range sections() {
		if !strings.Contains(sec.name, ".") {
			known = append(known, sec.name)
		}
	}
	for _, e := range f.Unused() {
		errs = append(errs, fmt.Errorf("%w (known sections: %s, vendor.NAME for the vendors %s, and checks.NAME for the checks %s)",
			e, strings.Join(known, ", "), vendorNames(), strings.Join(benchmarks.Names(), ", ")))
	}
	return errs
}

// CheckSettings decodes the [checks.NAME] section of f over the check's
// shipped defaults and validates it with the check's own Validate, the
// code the check runs before it measures. It returns the settings (nil for
// a check that publishes none: its section is then claimed and left to the
// check) and an error naming the file, line and key of each bad value.
func CheckSettings(f *config.File, name string) (any, error) {
	section := "checks." + name
	c, ok := benchmarks.Lookup(name)
	if !ok {
		return nil, f.Errorf(section, "%v %q", benchmarks.ErrUnknownCheck, name)
	}
	d := benchmarks.Describe(c)
	if d.Settings == nil {
		f.Claim(section)
		return nil, nil
	}
	v := d.Settings()
	if err := f.Decode(section, v); err != nil {
		return v, movedLibraryKeys(err, name)
	}
	val, ok := v.(benchmarks.Validator)
	if !ok {
		return v, nil
	}
	err := val.Validate()
	if err == nil {
		return v, nil
	}
	var se *benchmarks.SettingError
	if errors.As(err, &se) {
		return v, f.Errorf(section+"."+se.Key, "%s", se.Msg)
	}
	return v, f.Errorf(section, "%v", err)
}

// withValidKeys splits err, a Decode error of section into v, and adds
// the section's valid keys to each unknown-key error, so that a typo
// ("bugdet") comes with the right spelling.
func withValidKeys(err error, section string, v any) []error {
	var out []error
	for _, e := range splitErrors(err) {
		if errors.Is(e, config.ErrUnknownKey) {
			e = fmt.Errorf("%w (keys of [%s]: %s)", e, section, strings.Join(config.Keys(v), ", "))
		}
		out = append(out, e)
	}
	return out
}

// checkSlurmBinDir reports a [prolog] slurm_bin_dir (named in the file,
// the environment or a flag) that holds no executable scontrol:
// vigil could then neither read a node's state nor drain it. It names the
// key and line like every other config error.
func checkSlurmBinDir(f *config.File, dir string) error {
	const key = "prolog.slurm_bin_dir"
	if !filepath.IsAbs(dir) {
		return f.Errorf(key, "%q: want an absolute path (the prolog runs without PATH)", dir)
	}
	scontrol := filepath.Join(dir, "scontrol")
	fi, err := os.Stat(scontrol)
	switch {
	case err != nil:
		return f.Errorf(key, "%q: no scontrol there (%v); set it to the directory of Slurm's client programs", dir, err)
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		return f.Errorf(key, "%q: %s is not an executable program", dir, scontrol)
	}
	return nil
}

// ValidateFlags checks the [prolog] overrides given on the command line
// alone, over the shipped defaults: a bad flag is a usage error, whatever
// the config file says. Each error names the flag.
func ValidateFlags(flags map[string]string) error {
	p := config.DefaultProlog()
	errs := applyOverrides(&p, flags, config.FromFlag, nil)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, e := range config.PrologOverrides().Explain(nil, p.Validate(config.Empty("flags")), nil, flags) {
		var oe *config.OverrideError
		if errors.As(e, &oe) && oe.From == config.FromFlag {
			errs = append(errs, e) // not a default the flags did not touch
		}
	}
	if _, err := benchmarks.Select(p.Checks, p.Skip, false); err != nil && (flags["checks"] != "" || flags["skip"] != "") {
		errs = append(errs, fmt.Errorf("flag --checks/--skip: %w (registered: %s)", err, strings.Join(benchmarks.Names(), ", ")))
	}
	return errors.Join(errs...)
}
