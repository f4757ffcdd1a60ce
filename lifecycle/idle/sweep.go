package idle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/lifecycle"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/session"
)

// Slurm is what the sweep asks of Slurm (slurm.Client does all of it).
type Slurm interface {
	Nodes(ctx context.Context) ([]slurm.Node, error)
	OwnJobs(ctx context.Context) ([]slurm.QueuedJob, error)
	ReservationNodes(ctx context.Context, name string) ([]string, error)
	Submit(ctx context.Context, j slurm.BatchJob) (string, error)
}

// Options configure one sweep.
type Options struct {
	// ConfigPath is the config file; ConfigExplicit is set when it was
	// given (--config, VIGIL_CONFIG): the jobs then run with it too.
	ConfigPath     string
	ConfigExplicit bool
	// DryRun plans and prints the sbatch command lines without running
	// them or writing anything.
	DryRun bool
	// Lookup reads the environment; nil means os.LookupEnv.
	Lookup func(string) (string, bool)
	// Slurm is the Slurm client; nil means a slurm.Client from [prolog]
	// (slurm_bin_dir, slurm_conf, slurm_timeout).
	Slurm Slurm
	// Exe is this program, what the jobs run when [idle] program is "".
	Exe string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Out receives the sweep's table; nil means none.
	Out io.Writer
	// Log receives structured logs; nil means logrus's standard logger.
	Log logrus.FieldLogger
}

// Result is what a sweep did.
type Result struct {
	// Decisions are the plan, one per node looked at.
	Decisions []Decision
	// Submitted are the jobs submitted, by node.
	Submitted map[string]string
	// ExitCode is what the program exits with: decide.ExitOK,
	// ExitFail when Slurm could not be read or a submission failed,
	// ExitConfig for an invalid or incomplete config.
	ExitCode int
}

// Sweep runs one idle sweep: it reads the nodes, its own jobs, the
// validation records and its ledger, plans (Plan), submits one
// validation job per node that is due and records the submissions.
func Sweep(ctx context.Context, o Options) Result {
	o.defaults()
	log := o.Log.WithField("mode", "idle-sweep")
	s, errs := settings.LoadSettings(o.ConfigPath, o.ConfigExplicit, o.Lookup, nil)
	if len(errs) > 0 {
		for _, e := range errs {
			log.WithField("config", o.ConfigPath).Error("INVALID CONFIG, nothing submitted: " + e.Error())
		}
		return Result{ExitCode: decide.ExitConfig}
	}
	if !s.Idle.Configured() {
		log.WithField("config", o.ConfigPath).Error("[idle] names no partition and no qos: set the partition (or QOS) whose jobs users' jobs preempt (docs/operations.md); nothing submitted")
		return Result{ExitCode: decide.ExitConfig}
	}
	if !o.DryRun {
		unlock, err := lock(s.Idle.StateDir)
		if err != nil {
			log.WithError(err).Error("not sweeping")
			return Result{ExitCode: decide.ExitFail}
		}
		defer unlock()
	}
	cli := o.Slurm
	if cli == nil {
		cli = session.NewClient(s.Prolog, o.Lookup)
	}
	in, err := readInputs(ctx, cli, s, o.Now(), o.DryRun, log)
	if err != nil {
		log.WithError(err).Error("reading Slurm: nothing submitted")
		return Result{ExitCode: decide.ExitFail}
	}
	res := Result{Decisions: Plan(in), Submitted: map[string]string{}}
	sub := submitter{o: o, s: s, cli: cli, log: log, ledger: in.Submissions}
	res.ExitCode = sub.submitAll(ctx, &res)
	if o.Out != nil {
		printTable(o.Out, s, res, o.DryRun)
	}
	return res
}

func (o *Options) defaults() {
	if o.Lookup == nil {
		o.Lookup = os.LookupEnv
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = logrus.StandardLogger()
	}
	if o.ConfigPath == "" {
		o.ConfigPath = settings.DefaultConfigPath
	}
	if o.Exe == "" {
		o.Exe, _ = os.Executable()
	}
}

// readInputs reads what Plan needs: the nodes, the sweep's jobs, the
// reservation's nodes, the nodes' records and the ledger.
func readInputs(ctx context.Context, cli Slurm, s *settings.Settings, now time.Time, dry bool, log logrus.FieldLogger) (Inputs, error) {
	in := Inputs{Now: now, Idle: s.Idle}
	var err error
	if in.Nodes, err = cli.Nodes(ctx); err != nil {
		return in, err
	}
	if in.Jobs, err = cli.OwnJobs(ctx); err != nil {
		return in, err
	}
	if r := s.Idle.Reservation; r != "" {
		if in.Reserved, err = cli.ReservationNodes(ctx, r); err != nil {
			return in, fmt.Errorf("[idle] reservation %s: %w", r, err)
		}
	}
	var verrs []error
	in.Validations, verrs = lifecycle.ReadValidations(s.Idle.StateDir)
	for _, e := range verrs {
		log.WithError(e).Warn("a node's validation record was left out: the node counts by its submissions alone")
	}
	if in.Submissions, err = readLedger(s.Idle.StateDir, now, dry); err != nil {
		if in.Submissions == nil {
			return in, err
		}
		log.WithError(err).Error("the sweep's ledger was corrupt")
	}
	return in, nil
}

// submitter submits the plan's jobs and keeps the ledger.
type submitter struct {
	o      Options
	s      *settings.Settings
	cli    Slurm
	log    logrus.FieldLogger
	ledger map[string]Submission
}

// submitAll submits a job for every decision that says so, in order,
// and writes the ledger; it returns the exit code.
func (u submitter) submitAll(ctx context.Context, res *Result) int {
	code := decide.ExitOK
	for i, d := range res.Decisions {
		if !d.Submit {
			continue
		}
		j := u.job(d)
		l := u.log.WithField("node", d.Node)
		if u.o.DryRun {
			argv, _ := j.SubmitArgv()
			res.Decisions[i].Why += "; would run: sbatch " + slurm.ShellCommand(argv)[len("exec "):]
			continue
		}
		id, err := u.cli.Submit(ctx, j)
		if err != nil {
			res.Decisions[i].Submit = false
			res.Decisions[i].Why += "; submission failed: " + err.Error()
			l.WithError(err).Error("submitting the validation job")
			code = decide.ExitFail
			if slurm.ControllerDown(err) || errors.Is(err, context.Canceled) {
				break
			}
			continue
		}
		res.Submitted[d.Node] = id
		u.ledger[d.Node] = Submission{Job: id, At: u.o.Now().UTC()}
		l.WithField("job", id).WithField("why", d.Why).Info("validation job submitted")
	}
	if u.o.DryRun || len(res.Submitted) == 0 {
		return code
	}
	if err := writeLedger(u.s.Idle.StateDir, u.ledger, u.o.Now(), time.Duration(u.s.Idle.Interval)); err != nil {
		u.log.WithError(err).Error("writing the sweep's ledger: the next sweep may submit these nodes again")
		code = decide.ExitFail
	}
	return code
}

// job is the validation job of decision d: the node whole, its GPUs,
// vigil-prolog validate in one step (srun), so that the step, which
// Slurm signals at once when it preempts the job within a GraceTime,
// stops at once.
func (u submitter) job(d Decision) slurm.BatchJob {
	idle, p := u.s.Idle, u.s.Prolog
	prog := idle.Program
	if prog == "" {
		prog = u.o.Exe
	}
	argv := []string{filepath.Join(p.SlurmBinDir, "srun"), "--ntasks=1", "--mpi=none", prog, "validate"}
	if u.o.ConfigExplicit {
		path, err := filepath.Abs(u.o.ConfigPath)
		if err != nil {
			path = u.o.ConfigPath
		}
		argv = append(argv, "--config", path)
	}
	return slurm.BatchJob{Name: JobName(idle.JobName, d.Node), Node: d.Node, Partition: idle.Partition,
		QOS: idle.QOS, Reservation: idle.Reservation, Account: idle.Account, Gres: d.Gres,
		TimeLimit: idle.TimeLimit, Chdir: "/", Output: idle.Output, Command: argv}
}

// printTable writes the sweep's table: one line per node looked at.
func printTable(w io.Writer, s *settings.Settings, res Result, dry bool) {
	where := []string{}
	for _, kv := range [][2]string{{"partition", s.Idle.Partition}, {"qos", s.Idle.QOS}, {"reservation", s.Idle.Reservation}} {
		if kv[1] != "" {
			where = append(where, kv[0]+" "+kv[1])
		}
	}
	head := "vigil-prolog idle-sweep"
	if dry {
		head += " (dry run: nothing is submitted)"
	}
	fmt.Fprintf(w, "%s: %s, interval %v, at most %d per run\n\n", head, strings.Join(where, ", "), s.Idle.Interval, s.Idle.MaxNodesPerRun)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tACTION\tWHY")
	for _, d := range res.Decisions {
		action := "skip"
		switch {
		case res.Submitted[d.Node] != "":
			action = "submitted job " + res.Submitted[d.Node]
		case d.Submit:
			action = "submit"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Node, action, d.Why)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nsubmitted: %d of %d nodes\n", len(res.Submitted), len(res.Decisions))
}
