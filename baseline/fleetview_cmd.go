package baseline

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/report"
)

// FleetName is the subcommand of vigil-baseline that writes the fleet view.
const FleetName = "fleet"

const fleetUsage = `usage: vigil-baseline fleet [--model MODEL] [--lemon-nodes N] [--lemon-episodes N] [--lemon-window D] [MODEL=]REPORT_DIR...

Reads the JSON reports in each REPORT_DIR (all of them, of every node and
time; not recursive: give each node's directory) and follows each GPU, NPU
and HCA port by its stable identity (UUID, serial, GUID) from node to node.
Prints, per check, its drains and what became of them (confirmed: failed
again; likely-false: passed its re-test with no remedy in between;
unresolved) with the measured precision, confirmed / (confirmed +
likely-false), beside the thresholds vigil-baseline proposes for the check
from the same reports; the lemons; every drain; and the history of every
component that failed or had a remedy (docs/operations.md).

  --model MODEL       device model of the plain REPORT_DIRs, for the thresholds (default none)
  --lemon-nodes N     a lemon failed in at least N nodes (default 2; 0: rule off)
  --lemon-episodes N  or had at least N failure episodes within the window (default 3; 0: rule off)
  --lemon-window D    the window, a duration such as 720h or 30d (default 30d; 0: any time)
`

// Fleet runs `vigil-baseline fleet` with args (after the subcommand's
// name) and returns the exit code.
func Fleet(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(CommandName+" "+FleetName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	model := fs.String("model", "", "device model of plain directories")
	rule := DefaultLemonRule
	fs.IntVar(&rule.Nodes, "lemon-nodes", rule.Nodes, "nodes a lemon failed in")
	fs.IntVar(&rule.Episodes, "lemon-episodes", rule.Episodes, "failure episodes of a lemon within the window")
	fs.Func("lemon-window", "the window of the episodes", func(s string) (err error) {
		rule.Window, err = parseWindow(s)
		return err
	})
	dirs, code, ok := parseInterleaved(fs, args, stdout, stderr, fleetUsage, "vigil-baseline fleet")
	if !ok {
		return code
	}
	switch {
	case len(dirs) == 0:
		fmt.Fprintln(stderr, "vigil-baseline fleet: no REPORT_DIR given (see vigil-baseline fleet --help)")
		return ExitUsage
	case rule.Nodes < 0 || rule.Episodes < 0:
		fmt.Fprintln(stderr, "vigil-baseline fleet: --lemon-nodes and --lemon-episodes must be 0 or more")
		return ExitUsage
	}
	var sources []Source
	for _, d := range dirs {
		sources = append(sources, ParseSource(d, *model))
	}
	return runFleet(sources, rule, stdout, stderr)
}

func runFleet(sources []Source, rule LemonRule, stdout, stderr io.Writer) int {
	read, notes, err := readSources(sources)
	if err != nil {
		fmt.Fprintf(stderr, "vigil-baseline fleet: %v\n", err)
		return ExitError
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "vigil-baseline fleet: skipped %s\n", n)
	}
	var reps []*report.Report
	for _, s := range read {
		reps = append(reps, s.Reports...)
	}
	if len(reps) == 0 {
		fmt.Fprintln(stderr, "vigil-baseline fleet: no reports")
		return ExitError
	}
	groups, _ := Groups(read)
	Analyze(groups)
	if err := WriteFleet(stdout, BuildView(reps, rule, Proposals(groups))); err != nil {
		fmt.Fprintf(stderr, "vigil-baseline fleet: %v\n", err)
		return ExitError
	}
	return ExitOK
}

// Proposals returns, per check, the limits proposed for it in groups
// (analysed), each as "MODEL KEY >= 631 (now >= 600)".
func Proposals(groups []*Group) map[string][]string {
	out := map[string][]string{}
	for _, g := range groups {
		if !g.HasProposal {
			continue
		}
		s := g.ConfigKey
		if g.Model != "" {
			s = g.Model + " " + s
		}
		out[g.Check] = append(out[g.Check], fmt.Sprintf("%s %s (now %s)", s, proposedText(g), limitText(g.Current, g.Lower)))
	}
	return out
}

// parseWindow reads a duration, also in whole days ("30d").
func parseWindow(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q: want a duration such as 720h or 30d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	w, err := time.ParseDuration(s)
	if err != nil || w < 0 {
		return 0, fmt.Errorf("%q: want a duration such as 720h or 30d", s)
	}
	return w, nil
}
