// Command vigil-prolog is vigil's node sanity suite for Slurm: run as the
// Prolog (with PrologFlags=Alloc) it checks the node before each job,
// drains a broken node with a "vigil:" reason and fails so Slurm requeues
// the job; run with --health (HealthCheckProgram) it resumes nodes vigil
// drained once they pass again.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/vigil-hpc/vigil/benchmarks"
	_ "github.com/vigil-hpc/vigil/benchmarks/all"
	"github.com/vigil-hpc/vigil/lifecycle"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/idle"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
	"github.com/vigil-hpc/vigil/policy"
)

var usage = `NAME
    vigil-prolog - check a Slurm node before a job; drain it when it is broken

SYNOPSIS
    vigil-prolog [--config FILE] [--dry-run] [--health] [--node NAME] [OVERRIDES]
    vigil-prolog validate [--config FILE] [--dry-run] [--node NAME] [OVERRIDES]
    vigil-prolog idle-sweep [--config FILE] [--dry-run]
    vigil-prolog --check-config [--config FILE] [OVERRIDES]
    vigil-prolog --list-checks[=names]
    vigil-prolog --print-example-config
    vigil-prolog policy-check [--config FILE] [--checks LIST] [--timing WHEN]
                 [--hang-time DURATION] [--hang-action ACTION]
    vigil-prolog multinode-selftest [--config FILE] [--nodes K] [--timeout D]

DESCRIPTION
    Runs vigil's node sanity suite: accelerator health facts (device count,
    ECC, row remapping, XID errors, NVLink, PCIe link, throttling, leftover
    processes), the local disk check, and, with suite = "full", performance
    probes. Each check ends pass, fail or unknown. Checks that call vendor
    libraries run in a child process that is killed at its deadline; a check
    that hangs fails (CheckTimedOut), one that crashes is unknown.

    Any fail drains the node with the reason "vigil: <check> <Reason> [<device>]"
    (see sinfo -R; further failed checks follow as "+check:Reason@device")
    and exits 1, so Slurm requeues the job. Unknown never drains. Drains,
    down and maintenance states set by anyone else are never touched.
    Slurm holds a batch job whose prolog failed ("launch failed requeued
    held"); once vigil has drained its own node, the prolog requeues the job
    itself, unheld, so that it runs on healthy nodes, while the job's restart
    count is below [prolog] max_requeues (default 3; 0 keeps Slurm's hold).

    When scontrol cannot reach slurmctld ("Unable to contact slurm
    controller", or no answer within [prolog] slurm_timeout), the run says
    so, tries no further scontrol call, and remembers the drain it could not
    make in the state directory (failed-drains.json). Slurm then drains the
    node itself with "Prolog error"; the node's next run that passes every
    check lifts that drain, and no "Prolog error" that vigil has no record of.

    A vigil drain is lifted only by a run in which every check its reason
    names ran and passed (on the device it names, when the run was limited
    to the job's devices). A run that did not run such a check (the epilog
    and --health run the health facts only; a job may choose its checks; a
    check may have left the config) or that got unknown from it leaves the
    drain and says why ("n2 stays drained: disk not run by the epilog").
    To re-test a drained node:  vigil-prolog --node n2 --checks disk
    The cross-node checks (net-connect, net-bandwidth, rdma-peers, the
    multi-node collectives) are tested only by the prolog of a job on the
    node and its peers: once their cause is fixed, resume the node by hand;
    the next multi-node job on it checks it again.

    The fleet guard ([guard]) also counts a failed check across the nodes of
    the job before any of them drains (their prologs meet in the cross-node
    phase, with PrologFlags=Alloc): a check that fails on the whole
    allocation of one big job drains nobody for it and alerts once.

    Slurm setup (slurm.conf), as make install prints it:
        Prolog=/usr/local/bin/vigil-prolog
        PrologFlags=Alloc,Contain
        Epilog=/usr/local/bin/vigil-epilog
        HealthCheckProgram=/usr/local/bin/vigil-health
        HealthCheckInterval=300
    (Slurm passes no arguments to these programs. vigil-health is a link to
    vigil-prolog, made by make install; started under that name it runs as
    vigil-prolog --health. Alloc starts every node's prolog when the job is
    allocated; Contain gives the extern step that the SPANK plugin's
    watch=auto needs to start vigil-watch.)

OPTIONS
    --config FILE      config file (env VIGIL_CONFIG; default /etc/vigil/vigil.toml).
                       A missing default file means the shipped defaults; a missing
                       file given explicitly is a config error.
    --dry-run          run every check, report what would be done, change nothing:
                       no drain, resume or hold, no Slurm queries, no files written
                       unless --report-dir/--textfile-dir are given (env VIGIL_DRY_RUN=1).
    --health           health-facts-only run outside a job (HealthCheckProgram mode).
    validate           the deep suite of [idle] (checks, skip, budget, check_timeout),
                       run by the validation jobs that idle-sweep submits; drains
                       and resumes like --health and records its outcome in
                       [idle] state_dir for the sweep (docs/operations.md).
    idle-sweep         submit validation jobs to the idle nodes that are due, in
                       the partition, QOS or reservation of [idle], where users'
                       jobs preempt them (see idle-sweep --help).
    --node NAME        node name (default SLURMD_NODENAME, else the host name).
    --check-config     validate every section of the config ([prolog], [epilog],
                       [checks.NAME], [watch], [policy], [idle]) with the code that uses it
                       and print the effective configuration; errors name the file,
                       line, key and what is allowed (exit 3).
    --list-checks      list the registered checks: name, kind (health or perf),
                       vendor (nvidia, ascend, none), whether it is in the default
                       suite, and what it does, with the reason tokens each can
                       give below it and, last, those any check can give. A
                       vendor's checks run by default only on nodes that show
                       that vendor's devices (a PCI function of its vendor id,
                       /dev/nvidiaN or /dev/davinciN); elsewhere they are
                       reported as not applicable. gpu-count also runs on nodes
                       without any accelerator.
    --list-checks=names
                       the check names only, one a line (for scripts).
    --print-example-config
                       print an example config: every key with its shipped
                       default, commented out (make install puts it in
                       /etc/vigil/vigil.toml.example).
    --log-level LEVEL  debug, info, warn, error (default info; warn on a terminal).
    --log-format FMT   text or json (default text); logs go to stderr.

OVERRIDES (flags override environment, environment overrides the file)
` + settings.OverridesHelp() + `
EXIT STATUS
    0  the node passed, or nothing may be done: unknown results, an invalid
       config (each error logged on stderr at error level, recorded in the
       report and the vigil_config_valid metric at the paths of the last valid
       config, or nowhere; the node is never drained for it), a held job, a
       skipped run, or failures only of checks the fleet guard holds back
       ([guard]: more than max_share of the nodes drained by vigil for that
       check within the window; the report's "guarded" says why)
    1  the node is drained by vigil after this run: a check failed (or the
       budget ran out with on_budget_expiry = "fail"), or an earlier vigil
       drain stays because this run did not clear it (with --dry-run: would
       be drained). As the Prolog, a failure exits 1 even when someone else
       holds the node, so that Slurm requeues the job.
    2  bad command line
    3  invalid config, with --check-config or --dry-run only
    4  --health and validate only: a check failed but vigil drained nothing, because
       someone else holds the node (drain, down, maintenance) or scontrol
       failed; the log says which

NOTIFICATIONS
    [notify] webhook_url and mail tell the admins of each drain (node, check,
    reason, device, value against threshold, job): one message each for the
    first burst (5) drains of a check within the window (1h), then one
    summary, then nothing until the window passes. A job's user hears of its
    failed prolog when the job chose --vigil-notify (SPANK, within [policy]).
    Counting uses the controller's drain reasons (scontrol show node -o); see
    docs/notify.md.

FILES
    /etc/vigil/vigil.toml                          config
    /var/lib/vigil/reports/*.json                  one JSON report per run
    /var/lib/prometheus/node-exporter/vigil-MODE.prom
                                                   metrics for node_exporter, one file per
                                                   mode (vigil-prolog.prom, vigil-epilog.prom,
                                                   vigil-health.prom)
    /run/vigil/jobs/JOBID/                         per-job files, removed by vigil-epilog
    /var/lib/vigil/record-paths.json               where the last valid config sent the
                                                   records (env VIGIL_STATE_DIR changes the
                                                   directory); a broken config writes there only
    /var/lib/vigil/failed-drains.json              drains vigil could not make (slurmctld
                                                   down, scontrol failing), whose Slurm
                                                   "Prolog error" a passing run lifts

EXAMPLES
    vigil-prolog --dry-run
        What would happen on this node now; changes nothing.
    vigil-prolog --check-config --config /etc/vigil/vigil.toml
        Validate a config and print the effective settings.
    vigil-prolog --dry-run --suite health --checks gpu-count,disk
        Only two health facts.
    vigil-prolog --node n12 --checks disk
        Re-test the check a vigil drain names; the node is resumed if it passes.
    vigil-prolog multinode-selftest --nodes 2 --timeout 2m
        Validation tool for one GPU machine, no Slurm needed: its GPUs as
        2 simulated nodes of one NCCL communicator, the cross-node path of
        nccl-allreduce-multinode; prints each node's busbw and a verdict
        (exit 0 pass, 1 fail, 3 unknown; see multinode-selftest --help).
    vigil-baseline --html fleet.html H100=/srv/reports/h100 H200=/srv/reports/h200
        Fleet statistics and proposed limits from many nodes' reports: a
        program of its own (see vigil-baseline --help, docs/baseline.md).
    scontrol update NodeName=n12 State=RESUME
        Resume a node by hand (vigil resumes its own drains only when every
        check their reason names passes again).
`

func main() {
	if benchmarks.IsChild(os.Args) {
		os.Exit(benchmarks.ChildMain(os.Args, os.Stdin, os.NewFile(3, "result"), os.Stderr))
	}
	args := os.Args[1:]
	// Slurm runs HealthCheckProgram without arguments: installed under the
	// name vigil-health (a link to this binary), it runs in health mode.
	if filepath.Base(os.Args[0]) == "vigil-health" {
		args = append([]string{"--health"}, args...)
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if code, ok := subcommand(args, stdout, stderr); ok {
		return code
	}
	validate := len(args) > 0 && args[0] == "validate"
	if validate {
		args = args[1:]
	}
	fs := flag.NewFlagSet("vigil-prolog", flag.ContinueOnError)
	// Parse errors are reported in one line below, not with the manual;
	// --help prints the manual on stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	configPath := fs.String("config", "", "config file")
	dryRun := fs.Bool("dry-run", false, "change nothing")
	health := fs.Bool("health", false, "HealthCheckProgram mode")
	node := fs.String("node", "", "node name")
	checkConfig := fs.Bool("check-config", false, "validate and print the config")
	var listChecks listFlag
	fs.Var(&listChecks, "list-checks", "list checks (=names: names only)")
	printExample := fs.Bool("print-example-config", false, "print an example config")
	logLevel := fs.String("log-level", "info", "log level")
	logFormat := fs.String("log-format", "text", "log format")
	overrides := settings.OverrideFlags(fs)
	if help, err := settings.ParseArgs(fs, args, overrides); help {
		fmt.Fprint(stdout, usage)
		return decide.ExitOK
	} else if err != nil {
		return usageError(stderr, err)
	}
	// On a terminal the table and progress tell the story; logs only warn
	// unless asked for. Under slurmd (no terminal) every result is logged.
	if !flagSet(fs, "log-level") && isTerminal(os.Stderr) && isTerminal(os.Stdout) {
		*logLevel = "warn"
	}
	if err := settings.SetupLog(stderr, *logLevel, *logFormat); err != nil {
		return usageError(stderr, err)
	}
	path, explicit := settings.ConfigPathFrom(*configPath, os.LookupEnv)
	switch listChecks {
	case listNames:
		for _, n := range benchmarks.Names() {
			fmt.Fprintln(stdout, n)
		}
		return decide.ExitOK
	case listTable:
		fmt.Fprint(stdout, benchmarks.ListTable(benchmarks.Infos()))
		return decide.ExitOK
	}
	if *printExample {
		if err := settings.ExampleConfig(stdout); err != nil {
			fmt.Fprintf(stderr, "vigil-prolog: %v\n", err)
			return decide.ExitConfig
		}
		return decide.ExitOK
	}
	if *checkConfig {
		return settings.CheckConfig(stdout, path, explicit, os.LookupEnv, overrides())
	}
	if v := os.Getenv("VIGIL_DRY_RUN"); v == "1" || v == "true" {
		*dryRun = true
	}
	mode, err := modeOf(validate, *health)
	if err != nil {
		return usageError(stderr, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	opts := lifecycle.Options{
		Program: "vigil-prolog", Mode: mode, ConfigPath: path, ConfigExplicit: explicit,
		DryRun: *dryRun, Node: *node, Flags: overrides(), Out: stdout,
	}
	if isTerminal(os.Stdout) {
		opts.Progress = stdout
	}
	return lifecycle.Run(ctx, opts).ExitCode
}

// modeOf is the run's mode: validate (the first argument), --health, or
// the prolog.
func modeOf(validate, health bool) (decide.Mode, error) {
	switch {
	case validate && health:
		return "", fmt.Errorf("validate and --health are two modes: give one")
	case validate:
		return decide.ModeValidate, nil
	case health:
		return decide.ModeHealth, nil
	}
	return decide.ModeProlog, nil
}

// subcommand runs the subcommand args[0] names, if it names one.
func subcommand(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case policy.CommandName:
		return policy.CheckCommand(args[1:], stdout, stderr, lifecycle.PolicyRegistry()), true
	case idle.CommandName:
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return idle.Command(ctx, args[1:], stdout, stderr), true
	}
	if run, ok := benchmarks.LookupCommand(args[0]); ok { // a check package's own (multinode-selftest)
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return run(ctx, args[1:], stdout, stderr), true
	}
	return 0, false
}

// listFlag is --list-checks: given alone it lists the checks as a table,
// as --list-checks=names by name only.
type listFlag string

const (
	listTable listFlag = "table"
	listNames listFlag = "names"
)

func (l *listFlag) String() string { return string(*l) }

// IsBoolFlag lets --list-checks stand without a value.
func (l *listFlag) IsBoolFlag() bool { return true }

func (l *listFlag) Set(v string) error {
	switch v {
	case "true", "table":
		*l = listTable
	case "names":
		*l = listNames
	case "false":
		*l = ""
	default:
		return fmt.Errorf("%q: want names or table", v)
	}
	return nil
}

// flagSet reports whether the named flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// usageError reports a bad command line, one line per problem with a
// pointer to --help, and returns the exit code for it.
func usageError(stderr io.Writer, err error) int {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(stderr, "vigil-prolog: %s (see vigil-prolog --help)\n", line)
	}
	return decide.ExitUsage
}
