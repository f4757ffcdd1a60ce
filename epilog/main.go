// Command vigil-epilog runs after each job on every node of the job (Slurm
// Epilog): it kills the job's processes left on its accelerators, re-runs
// the fast health facts (noting, and running nothing more for, a
// vigil-watch hang report that names the node), drains the node with a "vigil:"
// reason when one fails (or resumes a node vigil drained once it passes),
// and removes vigil's per-job files.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/vigil-hpc/vigil/benchmarks"
	_ "github.com/vigil-hpc/vigil/benchmarks/all"
	"github.com/vigil-hpc/vigil/lifecycle"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
)

const usage = `NAME
    vigil-epilog - clean up and re-check a Slurm node after a job

SYNOPSIS
    vigil-epilog [--config FILE] [--dry-run] [--node NAME] [OVERRIDES]

DESCRIPTION
    Runs as Slurm's Epilog, as root, once per node after each job:
      1. kills the job's processes still holding its accelerators (open
         file descriptors on /dev/nvidiaN or /dev/davinciN for the GPUs in
         SLURM_JOB_GPUS): SIGTERM, then SIGKILL after [epilog] kill_grace.
         A holder is the job's when it is in the job's cgroup, or runs
         wholly as the job's user (not root) in no other job's cgroup;
         other jobs sharing the GPU and root's device daemons are left;
      2. re-runs the health facts. On a node that vigil-watch named as a
         culprit of this job's hang (a "hung" report vigil-hang-JOB-*.json
         in the [watch] report_dir, by default the job's working directory
         SLURM_JOB_WORK_DIR, that lists this node among its culprits, or is
         about this node when it lists none) it notes "recheck: named as
         culprit by vigil-watch in FILE" in its report and runs nothing
         more: vigil-watch runs as the job's user, so its reports are the
         user's files and may be forged; the next prolog's suite measures
         performance. A missing directory or an unreadable report is logged
         and changes nothing;
      3. on a fail, drains the node with "vigil: <check> <Reason> [<device>]";
         on a pass, resumes the node if vigil drained it; drains set by
         anyone else are never touched;
      4. removes vigil's per-job files ([prolog] run_dir/jobs/JOBID).
    It exits 0 even when it drains the node: a failing Epilog would make
    Slurm replace vigil's reason with "Epilog error".

    Slurm setup (slurm.conf):
        Epilog=/usr/local/bin/vigil-epilog

OPTIONS
    --config FILE      config file (env VIGIL_CONFIG; default /etc/vigil/vigil.toml);
                       [prolog] and [epilog] apply, and [watch] report_dir.
                       A missing default file means defaults.
    --dry-run          report what would be killed, drained or resumed; change nothing
                       (env VIGIL_DRY_RUN=1).
    --node NAME        node name (default SLURMD_NODENAME, else the host name).
    --log-level LEVEL  debug, info, warn, error (default info).
    --log-format FMT   text or json (default text); logs go to stderr.
    OVERRIDES          the [prolog] overrides of vigil-prolog (--checks, --skip,
                       --check-timeout, --budget, --report-dir, --textfile-dir, --run-dir ...),
                       flags over environment (VIGIL_<KEY>) over file.

EXIT STATUS
    0  done (including when the node was drained, or the config is invalid: an
       invalid config is logged loudly and recorded, and changes nothing)
    2  bad command line
    3  invalid config with --dry-run

EXAMPLES
    SLURM_JOB_ID=42 SLURM_JOB_GPUS=0,1 vigil-epilog --dry-run
        Which processes would be killed on GPUs 0 and 1, and the health verdict.
    SLURM_JOB_ID=42 SLURM_JOB_WORK_DIR=$PWD vigil-epilog --dry-run --node gpu07
        Whether vigil-watch named gpu07 as a culprit of job 42 (hang reports
        in the current directory), and the verdict of the suite that runs.
`

func main() {
	if benchmarks.IsChild(os.Args) {
		os.Exit(benchmarks.ChildMain(os.Args, os.Stdin, os.NewFile(3, "result"), os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vigil-epilog", flag.ContinueOnError)
	// Parse errors are reported in one line below, not with the manual;
	// --help prints the manual on stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	configPath := fs.String("config", "", "config file")
	dryRun := fs.Bool("dry-run", false, "change nothing")
	node := fs.String("node", "", "node name")
	logLevel := fs.String("log-level", "info", "log level")
	logFormat := fs.String("log-format", "text", "log format")
	overrides := settings.OverrideFlags(fs)
	if help, err := settings.ParseArgs(fs, args, overrides); help {
		fmt.Fprint(stdout, usage)
		return decide.ExitOK
	} else if err != nil {
		return usageError(stderr, err)
	}
	if err := settings.SetupLog(stderr, *logLevel, *logFormat); err != nil {
		return usageError(stderr, err)
	}
	if v := os.Getenv("VIGIL_DRY_RUN"); v == "1" || v == "true" {
		*dryRun = true
	}
	path, explicit := settings.ConfigPathFrom(*configPath, os.LookupEnv)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return lifecycle.Run(ctx, lifecycle.Options{
		Program: "vigil-epilog", Mode: decide.ModeEpilog, ConfigPath: path, ConfigExplicit: explicit,
		DryRun: *dryRun, Node: *node, Flags: overrides(), Out: stdout,
	}).ExitCode
}

// usageError reports a bad command line, one line per problem with a
// pointer to --help, and returns the exit code for it.
func usageError(stderr io.Writer, err error) int {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(stderr, "vigil-epilog: %s (see vigil-epilog --help)\n", line)
	}
	return decide.ExitUsage
}
