package lifecycle

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/config"
)

// Overridable lists the [prolog] keys that the environment (VIGIL_<KEY>,
// upper case) and command-line flags (--<key with dashes>) can override.
var Overridable = []string{
	"suite", "checks", "skip", "check_timeout", "budget", "retries", "on_budget_expiry",
	"timing", "report_dir", "textfile", "textfile_dir", "run_dir", "slurm_bin_dir",
}

// EnvName is the environment variable that overrides [prolog] key.
func EnvName(key string) string { return "VIGIL_" + strings.ToUpper(key) }

// FlagName is the flag that overrides [prolog] key.
func FlagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// ErrOverride is wrapped by errors about a bad environment or flag value.
var ErrOverride = errors.New("bad override")

// EnvOverrides returns the overrides set in the environment.
func EnvOverrides(lookup func(string) (string, bool)) map[string]string {
	o := map[string]string{}
	for _, k := range Overridable {
		if v, ok := lookup(EnvName(k)); ok && v != "" {
			o[k] = v
		}
	}
	return o
}

// ApplyOverrides sets [prolog] keys from string values (comma-separated
// lists, durations as "90s"); from names where they came from ("environment"
// or "flag") for errors.
func ApplyOverrides(p *config.Prolog, o map[string]string, from string) error {
	var errs []error
	for _, k := range Overridable {
		v, ok := o[k]
		if !ok {
			continue
		}
		name := from + " " + k
		switch from {
		case "flag":
			name = "flag --" + FlagName(k)
		case "environment":
			name = "environment " + EnvName(k)
		}
		bad := func(err error) { errs = append(errs, fmt.Errorf("%s=%q: %w: %v", name, v, ErrOverride, err)) }
		switch k {
		case "suite":
			p.Suite = v
		case "checks":
			p.Checks = splitList(v)
		case "skip":
			p.Skip = splitList(v)
		case "check_timeout", "budget":
			d, err := time.ParseDuration(v)
			if err != nil {
				bad(err)
				continue
			}
			if k == "budget" {
				p.Budget = d
			} else {
				p.CheckTimeout = d
			}
		case "retries":
			n, err := strconv.Atoi(v)
			if err != nil {
				bad(err)
				continue
			}
			p.Retries = n
		case "on_budget_expiry":
			p.OnBudgetExpiry = v
		case "timing":
			p.Timing = v
		case "report_dir":
			p.ReportDir = v
		case "textfile":
			p.Textfile, p.TextfileDir = v, textfileDirOf(v)
		case "textfile_dir":
			p.TextfileDir = v
		case "run_dir":
			p.RunDir = v
		case "slurm_bin_dir":
			p.SlurmBinDir = v
		}
	}
	return errors.Join(errs...)
}

// textfileDirOf is the textfile directory that the deprecated [prolog]
// textfile (the file all modes shared before each had its own) stands for:
// its directory, or "" (no textfiles) for "".
func textfileDirOf(textfile string) string {
	if textfile == "" {
		return ""
	}
	return filepath.Dir(textfile)
}

// textfileExplicit reports whether a flag or the environment says where
// the textfiles go (textfile_dir, or the deprecated textfile).
func (s *Settings) textfileExplicit() bool {
	return s.Explicit["textfile_dir"] || s.Explicit["textfile"]
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
