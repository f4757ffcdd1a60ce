package settings

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/policy"
)

// section is one table of vigil.toml as vigil-prolog knows it. The
// sections are one list (sections): LoadSettings loads each once (decoded
// over its shipped defaults and validated by the code that uses it),
// --check-config prints each from the loaded Settings, and
// --print-example-config shows each with its defaults. A new section is
// one entry; a new key is a field of its struct (see config.Prolog).
type section struct {
	// name is the section's dotted name ("prolog", "checks.gemm").
	name string
	// defaults returns the section's shipped settings.
	defaults func() any
	// load decodes the section of f over its defaults and validates it,
	// into s; it returns every error, each naming the key and line.
	load func(f *config.File, s *Settings) []error
	// effective returns what --check-config prints of the loaded s.
	effective func(s *Settings) any
}

// sections returns the sections in the order the example config and
// --check-config print them: [prolog], [epilog], [notify], [guard],
// [repair], [watch], [policy], [idle], [vendor.NAME] for every vendor whose libraries are
// configurable, then [checks.NAME] for every check that publishes its
// settings.
func sections() []section {
	out := []section{
		{name: "prolog", defaults: func() any { return config.DefaultProlog() }, load: loadProlog,
			effective: func(s *Settings) any {
				p := s.Prolog
				p.Textfile = "" // deprecated: its effect is textfile_dir, printed; both would be invalid
				return p
			}},
		plain("epilog", config.DefaultEpilog, func(s *Settings) *config.Epilog { return &s.Epilog }),
		{name: "notify", defaults: func() any { return config.DefaultNotify() },
			load: func(f *config.File, s *Settings) []error {
				n, err := config.LoadNotify(f)
				s.Notify = n
				return withValidKeys(err, "notify", n)
			},
			effective: func(s *Settings) any { return s.Notify.Redacted() }},
		plain("guard", config.DefaultGuard, func(s *Settings) *config.Guard { return &s.Guard }),
		{name: "repair", defaults: func() any { return config.DefaultRepair() }, load: loadRepair,
			effective: func(s *Settings) any { return s.Repair }},
		{name: watchcfg.Section, defaults: func() any { return watchcfg.Default() },
			load: func(f *config.File, s *Settings) []error {
				s.Watch = watchcfg.Default()
				if err := s.Watch.Load(f); err != nil {
					return []error{err}
				}
				return splitErrors(s.Watch.Final().Validate(f))
			},
			effective: func(s *Settings) any { return s.Watch.Final() }},
		{name: policy.Section, defaults: func() any { return policy.Default() },
			load: func(f *config.File, s *Settings) []error {
				p, err := policy.Load(f, benchmarks.Names())
				s.Policy = p
				return splitErrors(err)
			},
			effective: func(s *Settings) any { return s.Policy }},
		{name: "idle", defaults: func() any { return config.DefaultIdle() }, load: loadIdle,
			effective: func(s *Settings) any { return s.Idle }},
	}
	for _, v := range benchmarks.LibraryVendors() {
		name := benchmarks.VendorSection + "." + string(v)
		out = append(out, section{name: name,
			defaults: func() any { d, _ := benchmarks.LibraryDefaults(v); return d },
			load: func(f *config.File, s *Settings) []error {
				d, err := VendorLibraries(f, v)
				s.Vendors[v] = d
				return withValidKeys(err, name, d)
			},
			effective: func(s *Settings) any { return s.Vendors[v] }})
	}
	for _, name := range benchmarks.Names() {
		c, _ := benchmarks.Lookup(name)
		d := benchmarks.Describe(c)
		if d.Settings == nil {
			continue // claimed by checkNames, listed as silent
		}
		out = append(out, section{name: "checks." + name, defaults: func() any { return d.Settings() },
			load: func(f *config.File, s *Settings) []error {
				v, err := CheckSettings(f, name)
				s.Checks[name] = v
				return splitErrors(err)
			},
			effective: func(s *Settings) any { return s.Checks[name] }})
	}
	return out
}

// loadIdle loads [idle] over its defaults, validates it and the checks it
// names.
func loadIdle(f *config.File, s *Settings) []error {
	s.Idle = config.DefaultIdle()
	if err := f.Decode("idle", &s.Idle); err != nil {
		return withValidKeys(err, "idle", s.Idle)
	}
	errs := splitErrors(s.Idle.Validate(f))
	if _, err := benchmarks.Select(s.Idle.Checks, s.Idle.Skip, false); err != nil {
		errs = append(errs, f.Errorf("idle.checks", "%v (registered: %v)", err, benchmarks.Names()))
	}
	return errs
}

// plain is a section whose struct has its own Validate and nothing else to it.
func plain[T interface{ Validate(*config.File) error }](name string, def func() T, field func(*Settings) *T) section {
	return section{name: name, defaults: func() any { return def() },
		load: func(f *config.File, s *Settings) []error {
			p := field(s)
			*p = def()
			if err := f.Decode(name, p); err != nil {
				return withValidKeys(err, name, *p)
			}
			return splitErrors((*p).Validate(f))
		},
		effective: func(s *Settings) any { return *field(s) }}
}

// silentChecks are the registered checks that publish no settings: their
// [checks.NAME] is theirs to read.
func silentChecks() []string {
	var out []string
	for _, name := range benchmarks.Names() {
		c, _ := benchmarks.Lookup(name)
		if benchmarks.Describe(c).Settings == nil {
			out = append(out, name)
		}
	}
	return out
}
