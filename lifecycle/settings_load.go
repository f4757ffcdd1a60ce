package lifecycle

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
	// Watch is the effective [watch] section (the file over the defaults),
	// validated as vigil-watch validates it.
	Watch watchcfg.Settings
	// Policy is the effective [policy] section.
	Policy policy.Policy
	// Notify is the effective [notify] section (admin notifications).
	Notify config.Notify
	// Guard is the effective [guard] section (fleet-wide drain guard).
	Guard config.Guard
}

// OtherSections are the config sections that other programs act on (the
// watcher, the SPANK policy); vigil-prolog validates them with the same
// code those programs use.
var OtherSections = []string{watchcfg.Section, policy.Section}

// LoadSettings reads path (a missing file is an error only when explicit),
// applies the environment's and the flags' overrides and validates
// everything strictly: [prolog], [epilog], every registered check's
// [checks.NAME] that publishes its settings, and keys nobody claims. It
// returns usable settings (defaults where the file was unusable) and every
// error found; any error makes the config invalid.
func LoadSettings(path string, explicit bool, lookup func(string) (string, bool), flags map[string]string) (*Settings, []error) {
	s := &Settings{Path: path, Found: true, Prolog: config.DefaultProlog(), Epilog: config.DefaultEpilog(), Explicit: map[string]bool{},
		Notify: config.DefaultNotify(), Guard: config.DefaultGuard()}
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
		errs = append(errs, withValidKeys(err, "prolog", s.Prolog)...)
	}
	if f.Has("prolog.textfile") && !f.Has("prolog.textfile_dir") {
		s.Prolog.TextfileDir = textfileDirOf(s.Prolog.Textfile) // the deprecated key still works
	}
	if err := f.Decode("epilog", &s.Epilog); err != nil {
		errs = append(errs, withValidKeys(err, "epilog", s.Epilog)...)
	}
	s.Watch = watchcfg.Default()
	if err := s.Watch.Load(f); err != nil {
		errs = append(errs, err)
	} else if err := s.Watch.Final().Validate(f); err != nil {
		errs = append(errs, err)
	}
	p, err := policy.Load(f, benchmarks.Names())
	if err != nil {
		errs = append(errs, err)
	}
	s.Policy = p
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
	var binErr error
	if f.Has("prolog.slurm_bin_dir") || s.Explicit["slurm_bin_dir"] {
		// Only a directory someone named: the default (/usr/bin) on a
		// machine without Slurm must not make a dry run's config invalid.
		binErr = checkSlurmBinDir(f, s.Prolog.SlurmBinDir)
	}
	if err := errors.Join(s.Prolog.Validate(f), binErr); err != nil {
		errs = append(errs, renameOverridden(err, env, flags)...)
	}
	if err := s.Epilog.Validate(f); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, loadAdminSections(f, s)...)
	return s, append(errs, checkSections(f, s.Prolog)...)
}

// checkSections checks what names checks: [prolog] checks, skip and
// timeouts, every vendor's [vendor.NAME], every check's [checks.NAME], and
// the keys nobody claimed.
func checkSections(f *config.File, p config.Prolog) []error {
	var errs []error
	if _, err := benchmarks.Select(p.Checks, p.Skip, false); err != nil {
		errs = append(errs, f.Errorf("prolog.checks", "%v (registered: %v)", err, benchmarks.Names()))
	}
	for name := range p.Timeouts {
		if _, ok := benchmarks.Lookup(name); !ok {
			errs = append(errs, f.Errorf("prolog.timeouts."+name, "%v %q", benchmarks.ErrUnknownCheck, name))
		}
	}
	errs = append(errs, vendorSections(f)...)
	for _, name := range benchmarks.Names() {
		if _, err := CheckSettings(f, name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, e := range f.Unused() {
		errs = append(errs, fmt.Errorf("%w (known sections: prolog, epilog, %s, notify, guard, vendor.NAME for the vendors %s, and checks.NAME for the checks %s)",
			e, strings.Join(OtherSections, ", "), vendorNames(), strings.Join(benchmarks.Names(), ", ")))
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

// renameOverridden splits err into its errors and names the flag or the
// environment variable instead of the file for each [prolog] key that one
// of them set: the value did not come from the file.
func renameOverridden(err error, env, flags map[string]string) []error {
	var out []error
	for _, e := range splitErrors(err) {
		var ke *config.KeyError
		if errors.As(e, &ke) {
			key := strings.TrimPrefix(ke.Key, "prolog.")
			if v, ok := flags[key]; ok {
				e = fmt.Errorf("flag --%s=%q: %w", FlagName(key), v, ke.Err)
			} else if v, ok := env[key]; ok {
				e = fmt.Errorf("environment %s=%q: %w", EnvName(key), v, ke.Err)
			}
		}
		out = append(out, e)
	}
	return out
}

// splitErrors undoes errors.Join.
func splitErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, splitErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// ValidateFlags checks the [prolog] overrides given on the command line
// alone, over the shipped defaults: a bad flag is a usage error, whatever
// the config file says. Each error names the flag.
func ValidateFlags(flags map[string]string) error {
	p := config.DefaultProlog()
	if err := ApplyOverrides(&p, flags, "flag"); err != nil {
		return err
	}
	var errs []error
	for _, e := range renameOverridden(p.Validate(config.Empty("flags")), nil, flags) {
		if !strings.HasPrefix(e.Error(), "flag ") {
			continue // a default the flags did not touch
		}
		errs = append(errs, e)
	}
	if _, err := benchmarks.Select(p.Checks, p.Skip, false); err != nil && (flags["checks"] != "" || flags["skip"] != "") {
		errs = append(errs, fmt.Errorf("flag --checks/--skip: %w (registered: %s)", err, strings.Join(benchmarks.Names(), ", ")))
	}
	return errors.Join(errs...)
}
