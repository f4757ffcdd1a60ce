package baseline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// CommandName is the program that runs Command (vigil-baseline: a program
// of its own, so that the prolog, run before every job, does not load the
// plotting library).
const CommandName = "vigil-baseline"

// Exit codes of Command.
const (
	ExitOK    = 0 // statistics and proposal printed
	ExitError = 1 // a directory could not be read, no metric found, or the HTML not written
	ExitUsage = 2 // bad command line
)

const commandUsage = `usage: vigil-baseline [--model MODEL] [--html FILE] [MODEL=]REPORT_DIR...
       vigil-baseline fleet [--model MODEL] [--lemon-...] [MODEL=]REPORT_DIR...  (see vigil-baseline fleet --help)

Reads the JSON reports in each REPORT_DIR (the newest report per node and
check that recorded values) and prints, per device model and metric,
count, median, MAD, percentiles, the outlier devices, and proposed limits
as TOML for [checks.NAME.thresholds."MODEL"] (and [checks.disk]): only the
keys the checks compare values with, so that the TOML loads in
vigil-prolog --check-config. The per-link values of net-connect and
net-bandwidth are left out (named on stderr). Reports do not name the
device model: give it per directory (H100=/srv/reports/h100) or for all
plain directories with --model.

  --model MODEL  device model of the plain REPORT_DIRs (default none)
  --html FILE    also write a self-contained HTML page with one plot per metric
`

// Command runs `vigil-baseline` with args (after the program's name) and
// returns the exit code; a first argument "fleet" runs Fleet (a directory
// named fleet is ./fleet).
func Command(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == FleetName {
		return Fleet(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet(CommandName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	model := fs.String("model", "", "device model of plain directories")
	html := fs.String("html", "", "HTML file to write")
	dirs, code, ok := parseInterleaved(fs, args, stdout, stderr, commandUsage, "vigil-baseline")
	if !ok {
		return code
	}
	if len(dirs) == 0 {
		fmt.Fprintln(stderr, "vigil-baseline: no REPORT_DIR given (see vigil-baseline --help)")
		return ExitUsage
	}
	var sources []Source
	for _, d := range dirs {
		sources = append(sources, ParseSource(d, *model))
	}
	return run(sources, *html, stdout, stderr)
}

func run(sources []Source, html string, stdout, stderr io.Writer) int {
	groups, notes, err := Read(sources)
	if err != nil {
		fmt.Fprintf(stderr, "vigil-baseline: %v\n", err)
		return ExitError
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "vigil-baseline: skipped %s\n", n)
	}
	if len(groups) == 0 {
		fmt.Fprintln(stderr, "vigil-baseline: no performance values in the reports")
		return ExitError
	}
	Analyze(groups)
	if err := WriteTable(stdout, groups); err != nil {
		fmt.Fprintf(stderr, "vigil-baseline: %v\n", err)
		return ExitError
	}
	fmt.Fprintln(stdout)
	if err := WriteTOML(stdout, groups); err != nil {
		fmt.Fprintf(stderr, "vigil-baseline: %v\n", err)
		return ExitError
	}
	if html != "" {
		if err := writeHTMLFile(html, groups); err != nil {
			fmt.Fprintf(stderr, "vigil-baseline: %v\n", err)
			return ExitError
		}
	}
	return ExitOK
}

// writeHTMLFile writes the HTML page to path.
func writeHTMLFile(path string, groups []*Group) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	if err := WriteHTML(f, groups); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// parseInterleaved parses args with fs, flags and directories in any
// order, and returns the directories. On --help it prints usage and
// returns ExitOK, on a bad flag an error naming cmd and ExitUsage, with
// ok false in both cases.
func parseInterleaved(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, usage, cmd string) (dirs []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, usage)
				return nil, ExitOK, false
			}
			fmt.Fprintf(stderr, "%s: %v (see %s --help)\n", cmd, err, cmd)
			return nil, ExitUsage, false
		}
		if fs.NArg() == 0 {
			return dirs, 0, true
		}
		dirs, args = append(dirs, fs.Arg(0)), fs.Args()[1:]
	}
}
