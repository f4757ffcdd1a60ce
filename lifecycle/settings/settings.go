package settings

import (
	"path/filepath"

	"github.com/vigil-hpc/vigil/config"
)

// Overridable lists the [prolog] keys that the environment and
// command-line flags can override: the keys of config.PrologOverrides,
// the one table of their variables, flags and parsers.
var Overridable = overridableKeys()

func overridableKeys() []string {
	var keys []string
	for _, k := range config.PrologOverrides().Keys {
		keys = append(keys, k.Key)
	}
	return keys
}

// ErrOverride is wrapped by errors about a bad environment or flag value.
var ErrOverride = config.ErrOverride

// OverridesHelp is the OVERRIDES part of vigil-prolog's and
// vigil-epilog's --help, generated from the table.
func OverridesHelp() string {
	return config.Help(config.PrologOverrides(), config.RepairOverrides())
}

// applyOverrides sets the [prolog] keys in vals (from the environment or
// the flags) on p, the deprecated textfile included, and marks them
// explicit.
func applyOverrides(p *config.Prolog, vals config.Values, from config.Source, explicit map[string]bool) []error {
	err := config.PrologOverrides().Apply(p, vals, from)
	_, file := vals["textfile"]
	_, dir := vals["textfile_dir"]
	deprecatedTextfile(p, file, dir)
	for k := range vals {
		if explicit != nil {
			explicit[k] = true
		}
	}
	return config.SplitErrors(err)
}

// deprecatedTextfile makes a [prolog] textfile (the one file all modes
// shared before each had its own) that a level of the settings set
// without textfile_dir stand for its directory, at that level.
func deprecatedTextfile(p *config.Prolog, textfile, textfileDir bool) {
	if textfile && !textfileDir {
		p.TextfileDir = TextfileDirOf(p.Textfile)
	}
}

// TextfileDirOf is the textfile directory that the deprecated [prolog]
// textfile stands for: its directory, or "" (no textfiles) for "".
func TextfileDirOf(textfile string) string {
	if textfile == "" {
		return ""
	}
	return filepath.Dir(textfile)
}

// TextfileExplicit reports whether a flag or the environment says where
// the textfiles go (textfile_dir, or the deprecated textfile).
func (s *Settings) TextfileExplicit() bool {
	return s.Explicit["textfile_dir"] || s.Explicit["textfile"]
}

// splitErrors undoes errors.Join.
func splitErrors(err error) []error { return config.SplitErrors(err) }
