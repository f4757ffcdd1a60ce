package idle

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"

	"github.com/vigil-hpc/vigil/internal/cmdline"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
)

// CommandName is the subcommand of vigil-prolog that runs a sweep.
const CommandName = "idle-sweep"

const usage = `NAME
    vigil-prolog idle-sweep - submit vigil's deep validation jobs to idle nodes

SYNOPSIS
    vigil-prolog idle-sweep [--config FILE] [--dry-run] [--log-level LEVEL] [--log-format FMT]

DESCRIPTION
    One run submits what is due, then exits: run it from cron, a systemd
    timer or scrontab (every 15 minutes to an hour), as root or Slurm's
    SlurmUser on a host with the Slurm clients.

    For every node of [idle] partition (or reservation) that is idle (not
    drained, down, allocated or planned for a job), has no validation job
    pending or running, and was last validated at least [idle] interval
    ago, it submits one job, JOB_NAME-NODE, to that partition, QOS or
    reservation: the node whole, with its GPUs, running
        srun --ntasks=1 --mpi=none vigil-prolog validate [--config FILE]
    which runs the deep suite of [idle] (checks, skip, budget,
    check_timeout) on the node and drains or resumes it like
    vigil-prolog --health, with the usual "vigil: <check> <Reason>" drain
    reason. At most [idle] max_nodes_per_run jobs per run, the nodes
    longest without a validation first.

    Users' jobs must preempt these jobs (slurm.conf PreemptType=
    preempt/partition_prio with a lower PriorityTier for the partition, or
    preempt/qos; PreemptMode=CANCEL or REQUEUE): see docs/operations.md.

    Each validation run writes its outcome to [idle] state_dir/nodes/NODE.json
    and the sweep its submissions to [idle] state_dir/sweep.json. A node
    counts as validated from its last completed run, or from its last
    submission unless that job was preempted or cancelled; a run that was
    preempted records "interrupted" and the node is due again.

OPTIONS
    --config FILE      config file (env VIGIL_CONFIG; default /etc/vigil/vigil.toml);
                       the jobs run vigil-prolog validate with it.
    --dry-run          print the plan and the sbatch command lines; submit and
                       write nothing.
    --log-level LEVEL  debug, info, warn, error (default info).
    --log-format FMT   text or json (default text); logs go to stderr.

EXIT STATUS
    0  the sweep ran (whether or not anything was due)
    1  Slurm could not be read, a submission failed, or another sweep holds
       [idle] state_dir/lock/sweep.lock
    2  bad command line
    3  invalid config, or [idle] names neither partition nor qos

EXAMPLES
    vigil-prolog idle-sweep --dry-run
        Which nodes are due, and the sbatch command line of each.
    */30 * * * * root /usr/local/bin/vigil-prolog idle-sweep
        An /etc/cron.d line: a sweep every 30 minutes.
`

// Command runs `vigil-prolog idle-sweep ARGS` and returns its exit code.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := cmdline.New("vigil-prolog", CommandName, usage)
	configPath := cmd.Flags.String("config", "", "config file")
	dryRun := cmd.Flags.Bool("dry-run", false, "submit nothing")
	logLevel := cmd.Flags.String("log-level", "info", "log level")
	logFormat := cmd.Flags.String("log-format", "text", "log format")
	err := cmd.Parse(args, stdout, stderr, func() error { return settings.SetupLog(stderr, *logLevel, *logFormat) })
	switch {
	case errors.Is(err, flag.ErrHelp):
		return decide.ExitOK
	case err != nil:
		return decide.ExitUsage
	}
	path, explicit := settings.ConfigPathFrom(*configPath, os.LookupEnv)
	return Sweep(ctx, Options{ConfigPath: path, ConfigExplicit: explicit, DryRun: *dryRun, Out: stdout}).ExitCode
}
