package policy

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/internal/cmdline"
)

// CommandName is the vigil-prolog subcommand the SPANK plugin runs on the
// submit host.
const CommandName = "policy-check"

const commandUsage = `usage: vigil-prolog policy-check [--config FILE] [--checks LIST] [--timing WHEN]
                                [--hang-time DURATION] [--hang-action ACTION]
                                [--notify LIST] [--webhook URL]

Checks a job's --vigil-* values against the [policy] section of the config
(default /etc/vigil/vigil.toml; a missing file means the shipped policy).
vigil's SPANK plugin runs it on the submit host. Exit status: 0 allowed,
1 refused (the reasons on standard output), 2 bad usage, 3 bad config.
`

// Exit codes of the policy-check command, as its usage tells them.
const (
	// ExitAllowed: every value given is within the policy.
	ExitAllowed = 0
	// ExitRefused: a value is malformed or outside the policy; the reasons
	// are printed one per line. The plugin refuses the job with them.
	ExitRefused = 1
	// ExitUsage: bad command line.
	ExitUsage = 2
	// ExitConfig: the config file is unreadable or invalid. The plugin
	// lets the job through; the nodes apply the policy at run time.
	ExitConfig = 3
)

// CheckCommand runs `vigil-prolog policy-check`: it checks the values
// given as flags against the policy of the config file, given the
// registered checks (reg), prints why a value is refused, and returns the
// exit code. It parses every value with the code the nodes run, so the
// SPANK plugin leaves all parsing to it. A malformed value is refused
// even where the config cannot be read: syntax needs no policy.
func CheckCommand(args []string, stdout, stderr io.Writer, reg Registry) int {
	cmd := cmdline.New("vigil-prolog", CommandName, commandUsage)
	fset := cmd.Flags
	path := fset.String("config", config.DefaultPath, "config file")
	vals := map[string]*string{}
	for _, o := range Options {
		vals[o] = fset.String(o, "", "--vigil-"+o+" value")
	}
	switch err := cmd.Parse(args, stdout, stderr, nil); {
	case errors.Is(err, flag.ErrHelp):
		return ExitAllowed
	case err != nil:
		return ExitUsage
	}
	var r Request
	var problems []string
	fset.Visit(func(f *flag.Flag) {
		if v, ok := vals[f.Name]; ok {
			if err := r.Set(f.Name, *v); err != nil {
				problems = append(problems, strings.TrimPrefix(err.Error(), ErrSyntax.Error()+": "))
			}
		}
	})
	refused := func() int {
		fmt.Fprintln(stdout, strings.Join(problems, "\n"))
		return ExitRefused
	}
	f, err := config.Load(*path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f = nil
	case err != nil && len(problems) > 0:
		return refused()
	case err != nil:
		fmt.Fprintf(stdout, "%v\n", err)
		return ExitConfig
	}
	p, err := Load(f, reg.Names)
	if err == nil {
		reg, err = withProlog(f, reg)
	}
	switch {
	case err != nil && len(problems) > 0:
		return refused()
	case err != nil:
		fmt.Fprintf(stdout, "%s is invalid: %v\n", *path, err)
		return ExitConfig
	}
	for _, e := range p.Check(r, reg) {
		problems = append(problems, strings.TrimPrefix(e.Error(), ErrRefused.Error()+": "))
	}
	if len(problems) > 0 {
		return refused()
	}
	return ExitAllowed
}

// withProlog is reg with the checks the [prolog] of f runs (nil f: the
// shipped [prolog]), which bound what a job may choose when [policy]
// checks is empty.
func withProlog(f *config.File, reg Registry) (Registry, error) {
	pr := config.DefaultProlog()
	if f != nil {
		if err := f.Decode("prolog", &pr); err != nil {
			return reg, err
		}
	}
	return reg.WithProlog(pr.Checks, pr.Skip), nil
}
