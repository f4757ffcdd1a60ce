package settings

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
)

// OverrideFlags registers one flag per overridable [prolog] key
// (config.PrologOverrides) on fs and returns a function that lists the
// flags actually given, by key.
func OverrideFlags(fs *flag.FlagSet) func() map[string]string {
	given := config.PrologOverrides().Flags(fs, nil)
	return func() map[string]string { return given() }
}

// ParseArgs parses the command line of vigil-prolog or vigil-epilog with
// fs, whose override flags OverrideFlags registered (overrides): help says
// --help was asked for; err is a usage error (a bad flag, a positional
// argument, an override value out of range).
func ParseArgs(fs *flag.FlagSet, args []string, overrides func() map[string]string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		return errors.Is(err, flag.ErrHelp), err
	}
	if fs.NArg() > 0 {
		return false, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return false, ValidateFlags(overrides())
}

// DefaultConfigPath is where the config is read from unless told otherwise.
const DefaultConfigPath = config.DefaultPath

// ConfigPathFrom returns the config path from the flag value (when given),
// else VIGIL_CONFIG, else the default, and whether it was given explicitly.
func ConfigPathFrom(flagValue string, lookup func(string) (string, bool)) (string, bool) {
	if flagValue != "" {
		return flagValue, true
	}
	if v, ok := lookup("VIGIL_CONFIG"); ok && v != "" {
		return v, true
	}
	return DefaultConfigPath, false
}

// CheckConfig validates the whole config as a run would ([prolog],
// [epilog], every [vendor.NAME], every [checks.NAME] with the check's own ranges, [watch] as
// vigil-watch reads it, [policy] as the SPANK plugin and the nodes apply it,
// and keys nobody knows) and prints the effective config (file, then
// environment, then flags; every section with its shipped defaults) to w,
// or the errors, each naming the file, line and key. It returns the exit code:
// ExitOK when valid, ExitConfig when not.
func CheckConfig(w io.Writer, path string, explicit bool, lookup func(string) (string, bool), flags map[string]string) int {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	s, errs := LoadSettings(path, explicit, lookup, flags)
	if len(errs) > 0 {
		fmt.Fprintf(w, "# %s is INVALID:\n", path)
		for _, e := range errs {
			for _, line := range strings.Split(e.Error(), "\n") {
				fmt.Fprintf(w, "#   %s\n", line)
			}
		}
		return decide.ExitConfig
	}
	if s.Found {
		fmt.Fprintf(w, "# %s is valid. Effective configuration (file, then environment, then flags):\n", path)
	} else {
		fmt.Fprintf(w, "# %s not found: the shipped defaults apply. Effective configuration:\n", path)
	}
	for _, sec := range sections() {
		if err := writeSection(w, sec.name, durationsAsStrings(sec.effective(s))); err != nil {
			fmt.Fprintf(w, "# cannot print: %v\n", err)
			return decide.ExitConfig
		}
	}
	writeConfigNotes(w, s.Checks)
	writeConfigWarnings(w, s.Checks)
	for _, warning := range s.BudgetWarnings() {
		fmt.Fprintf(w, "# WARNING %s\n", warning)
	}
	silent := silentChecks()
	if len(silent) > 0 {
		fmt.Fprintf(w, "\n# These checks do not publish their settings; see their documentation: %s\n", strings.Join(silent, ", "))
	}
	return decide.ExitOK
}

// writeConfigNotes prints what each check's settings say of this node
// beyond their values (benchmarks.ConfigNoter), one comment line each.
func writeConfigNotes(w io.Writer, checks map[string]any) {
	for _, n := range slices.Sorted(maps.Keys(checks)) {
		if c, ok := checks[n].(benchmarks.ConfigNoter); ok {
			fmt.Fprintf(w, "# [checks.%s] %s\n", n, c.ConfigNote())
		}
	}
}

// writeConfigWarnings prints what each check's settings allow that a user
// could turn against the node (benchmarks.ConfigWarner), one comment line
// each, starting "# WARNING".
func writeConfigWarnings(w io.Writer, checks map[string]any) {
	for _, n := range slices.Sorted(maps.Keys(checks)) {
		if c, ok := checks[n].(benchmarks.ConfigWarner); ok {
			for _, warning := range c.ConfigWarnings() {
				fmt.Fprintf(w, "# WARNING [checks.%s] %s\n", n, warning)
			}
		}
	}
}

// BudgetWarnings are the checks whose own budget (benchmarks.Budgeter) is
// longer than their timeout in the prolog ([prolog] timeouts, else
// check_timeout): the timeout ends such a check first, and it fails with
// "the budget ran out" though its budget did not. One line each, in name
// order, naming both keys.
func (s *Settings) BudgetWarnings() []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(s.Checks)) {
		b, ok := s.Checks[n].(benchmarks.Budgeter)
		if !ok {
			continue
		}
		key := "check_timeout"
		if _, set := s.Prolog.Timeouts[n]; set {
			key = "timeouts." + n
		}
		if budget, timeout := b.CheckBudget(), s.Prolog.TimeoutOf(n); budget > timeout {
			out = append(out, fmt.Sprintf("[checks.%s] budget %v is longer than the check's timeout, [prolog] %s = %v: "+
				"the timeout ends the check first, and it fails with \"the budget ran out\"; raise [prolog] %s or lower the budget",
				n, budget, key, timeout, key))
		}
	}
	return out
}

// SetupLog configures the standard logrus logger: level ("info", "debug"
// ...), format "text" or "json", to w.
func SetupLog(w io.Writer, level, format string) error {
	l := logrus.StandardLogger()
	l.SetOutput(w)
	lv, err := logrus.ParseLevel(level)
	if err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	l.SetLevel(lv)
	switch format {
	case "json":
		l.SetFormatter(&logrus.JSONFormatter{})
	case "text", "":
		l.SetFormatter(&logrus.TextFormatter{DisableColors: true, FullTimestamp: true})
	default:
		return fmt.Errorf("--log-format %q: want text or json", format)
	}
	return nil
}
