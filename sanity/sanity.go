// Package sanity is the verdict and drain lifecycle shared by vigil-prolog
// (also run as Slurm's HealthCheckProgram) and vigil-epilog: load the
// config, run the suite, decide, drain a failing node or resume one vigil
// drained earlier, record the run, and say which exit code the program
// should return.
package sanity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// Mode is what a run is for.
type Mode string

const (
	// ModeProlog runs before a job (Slurm Prolog with PrologFlags=Alloc).
	ModeProlog Mode = "prolog"
	// ModeEpilog runs after a job: kill leftovers, re-check health facts
	// (the full suite on a node vigil-watch named as a culprit).
	ModeEpilog Mode = "epilog"
	// ModeHealth runs outside jobs (Slurm HealthCheckProgram, cron, by hand).
	ModeHealth Mode = "health"
)

// Exit codes of vigil-prolog and vigil-epilog.
const (
	// ExitOK: the node passed, or nothing may be done (unknown results, an
	// invalid config under Slurm, a held job, a skipped run).
	ExitOK = 0
	// ExitFail: the node is drained by vigil after this run (a check failed
	// or the budget ran out with on_budget_expiry = "fail", or an earlier
	// vigil drain stays because this run did not clear it). The prolog's
	// non-zero exit makes Slurm requeue the job; the epilog never exits
	// with it (Slurm would replace vigil's reason with "Epilog error").
	// In a dry run: the node would be drained.
	ExitFail = 1
	// ExitUsage: bad command line.
	ExitUsage = 2
	// ExitConfig: the config is invalid (only for --check-config and
	// --dry-run; under Slurm an invalid config exits ExitOK).
	ExitConfig = 3
	// ExitNotDrained: health mode found a failure but did not drain the
	// node: another party holds it (drain, down, maintenance), or scontrol
	// failed. The log says which.
	ExitNotDrained = 4
)

// Slurm is the part of slurm.Client the lifecycle uses.
type Slurm interface {
	Node(ctx context.Context, name string) (slurm.Node, error)
	Drain(ctx context.Context, node, reason string) error
	Resume(ctx context.Context, node string) (bool, error)
	Requeue(ctx context.Context, id string, hold bool) error
	NodeGresGPUs(ctx context.Context, node string) (int, error)
}

// Options configure one run.
type Options struct {
	// Program is the binary's name for reports ("vigil-prolog").
	Program string
	// Mode is prolog, epilog or health.
	Mode Mode
	// ConfigPath is the config file; "" means config.DefaultPath.
	ConfigPath string
	// ConfigExplicit is set when the path was given (--config or
	// VIGIL_CONFIG): then a missing file is a config error.
	ConfigExplicit bool
	// DryRun runs every check and reports what vigil would do, changing
	// nothing: no drain, resume, hold or kill, no Slurm queries, and no
	// files unless report_dir/textfile were set by flag or environment.
	DryRun bool
	// Node overrides the node name (else SLURMD_NODENAME, else the host name).
	Node string
	// Lookup reads the environment; nil means os.LookupEnv.
	Lookup func(string) (string, bool)
	// Flags are [prolog] overrides from the command line (see Overridable).
	Flags map[string]string
	// Slurm is the Slurm client; nil means a slurm.Client built from [prolog].
	Slurm Slurm
	// Exe is the binary re-executed for isolated checks; "" means this one.
	Exe string
	// Root is the file system root for device probing and /proc; "" means "/".
	Root string
	// Out receives the readable report; nil means none.
	Out io.Writer
	// Progress receives live progress (a terminal); nil means none.
	Progress io.Writer
	// Log receives structured logs; nil means logrus's standard logger.
	Log logrus.FieldLogger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Holders finds processes holding the job's devices (epilog); nil means ProcFS at Root.
	Holders DeviceHolders
	// Signaler kills them; nil means OSSignaler.
	Signaler Signaler
	// Sleep waits between SIGTERM and SIGKILL; nil means time.Sleep.
	Sleep func(time.Duration)
	// StateDir holds the record paths of the last valid config (see
	// RecordPaths); "" means VIGIL_STATE_DIR, else DefaultStateDir.
	StateDir string
}

// Outcome is what a run decided.
type Outcome struct {
	// Report is the run's report (also written to disk when configured).
	Report *report.Report
	// ReportPath is where the JSON report went, "" when none was written.
	ReportPath string
	// ExitCode is what the program should exit with.
	ExitCode int
}

type run struct {
	o   Options
	s   *Settings
	rep *report.Report
	log logrus.FieldLogger
	job *slurm.Job
	cli Slurm
	// deadline is when the whole run must be over (the budget).
	deadline time.Time
	// jobChecks is set when the job chose its own checks (--vigil-checks):
	// a node vigil drained for a check the job did not run stays drained.
	jobChecks bool
}

// Run runs the suite once and acts on the verdict. It returns inside the
// configured budget (plus the time to kill a hung child), never panics on a
// check's behalf and never drains on an invalid config.
func Run(ctx context.Context, o Options) Outcome {
	if o.Lookup == nil {
		o.Lookup = os.LookupEnv
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Root == "" {
		o.Root = "/"
	}
	if o.ConfigPath == "" {
		o.ConfigPath = DefaultConfigPath
	}
	if o.Program == "" {
		o.Program = "vigil"
	}
	r := &run{o: o, log: o.Log}
	if r.log == nil {
		r.log = logrus.StandardLogger()
	}
	start := o.Now()
	r.rep = &report.Report{V: report.Version, Program: o.Program, Mode: string(o.Mode), Start: start,
		DryRun: o.DryRun, Verdict: benchmarks.StatusPass, Action: report.Action{Kind: report.ActionNone}}
	r.rep.Node = r.nodeName()
	r.log = r.log.WithFields(logrus.Fields{"node": r.rep.Node, "mode": string(o.Mode)})

	code := r.do(ctx)
	r.rep.ExitCode = code
	r.rep.Duration = o.Now().Sub(start)
	path := r.record()
	if o.Out != nil {
		report.Table(o.Out, r.rep)
		if path != "" {
			fmt.Fprintf(o.Out, "report:       %s\n", path)
		}
	}
	return Outcome{Report: r.rep, ReportPath: path, ExitCode: code}
}

// DefaultConfigPath is where the config is read from unless told otherwise.
const DefaultConfigPath = config.DefaultPath

func (r *run) nodeName() string {
	if r.o.Node != "" {
		return r.o.Node
	}
	if v, ok := r.o.Lookup("SLURMD_NODENAME"); ok && v != "" {
		return v
	}
	h, _ := os.Hostname()
	if i := strings.IndexByte(h, '.'); i > 0 {
		h = h[:i]
	}
	return h
}

func (r *run) note(format string, args ...any) {
	r.rep.Notes = append(r.rep.Notes, fmt.Sprintf(format, args...))
}

func (r *run) do(ctx context.Context) int {
	o := r.o
	s, errs := LoadSettings(o.ConfigPath, o.ConfigExplicit, o.Lookup, o.Flags)
	r.s = s
	r.rep.Config = report.ConfigInfo{Path: s.Path, Found: s.Found, Valid: len(errs) == 0}
	if len(errs) == 0 {
		r.rememberRecordPaths()
	} else {
		r.useLastRecordPaths()
	}
	r.deadline = o.Now().Add(s.Prolog.Budget)
	if s.Prolog.Budget <= 0 {
		r.deadline = o.Now().Add(benchmarks.DefaultBudget)
	}
	r.rep.Accelerators = ProbeAccelerators(o.Root)

	if v, ok := o.Lookup("SLURM_JOB_ID"); ok && v != "" && o.Mode != ModeHealth {
		job, err := slurm.JobFromEnv(o.Lookup)
		if err != nil {
			r.note("job environment: %v", err)
			r.log.WithError(err).Warn("reading the job environment")
			job = &slurm.Job{ID: v, UID: -1, GID: -1}
		}
		r.job = job
		r.rep.Job = job.ID
		r.log = r.log.WithField("job", job.ID)
	}

	if len(errs) > 0 {
		for _, e := range errs {
			for _, line := range strings.Split(e.Error(), "\n") {
				r.rep.Config.Errors = append(r.rep.Config.Errors, line)
				r.log.WithField("config", s.Path).Error("INVALID CONFIG, vigil changes nothing: " + line)
			}
		}
		r.rep.Verdict = benchmarks.StatusUnknown
		r.rep.Skipped = "the config is invalid: no checks ran and the node is left alone"
		if o.DryRun {
			return ExitConfig
		}
		return ExitOK
	}
	if r.rep.Accelerators.NVIDIA == 0 && r.rep.Accelerators.Ascend == 0 {
		r.log.Info("no NVIDIA or Ascend devices found on this host")
	}

	if o.Mode == ModeProlog && r.job != nil {
		if code, done := r.applyJobChoices(); done {
			return code
		}
	}

	if o.Mode == ModeProlog && s.Prolog.Timing == config.TimingAfterRequeue && (r.job == nil || r.job.RestartCount == 0) {
		r.rep.Skipped = "timing = after-requeue and the job was not requeued (SLURM_RESTART_COUNT = 0)"
		r.log.Info(r.rep.Skipped)
		return ExitOK
	}

	if o.Mode == ModeEpilog {
		r.killLeftovers()
		if !s.Epilog.Recheck {
			r.rep.Skipped = "epilog.recheck = false"
			r.cleanJobFiles()
			return ExitOK
		}
	}

	healthOnly := s.Prolog.Suite == config.SuiteHealth || o.Mode != ModeProlog
	if o.Mode == ModeEpilog && r.culpritRecheck() {
		// Named as a culprit: the suite the prolog runs, in the epilog's budget.
		healthOnly = s.Prolog.Suite == config.SuiteHealth
		if healthOnly {
			r.note("recheck: [prolog] suite = %q, so the full suite is the health facts", config.SuiteHealth)
		}
	}
	hw := benchmarks.Hardware{NVIDIA: r.rep.Accelerators.NVIDIA, Ascend: r.rep.Accelerators.Ascend}
	checks, na, err := benchmarks.SelectFor(s.Prolog.Checks, s.Prolog.Skip, healthOnly, hw)
	if err != nil { // validated above; kept for safety
		r.note("selecting checks: %v", err)
	}
	r.rep.NotApplicable = na
	out := r.runChecks(ctx, checks)
	r.rep.Results = out.Results
	r.rep.BudgetExpired = out.BudgetExpired
	r.rep.CheckerMaxRSSKiB = out.ChildMaxRSSKiB
	r.rep.Verdict = benchmarks.Verdict(out.Results)
	code := r.act(ctx)
	if o.Mode == ModeEpilog {
		r.cleanJobFiles()
	}
	return code
}

// stateDir is where the record paths of the last valid config are kept.
func (r *run) stateDir() string {
	if r.o.StateDir != "" {
		return r.o.StateDir
	}
	if v, ok := r.o.Lookup(EnvStateDir); ok && v != "" {
		return v
	}
	return DefaultStateDir
}

// rememberRecordPaths notes where this valid config sends the records, for
// runs with a broken config later. Dry runs change nothing.
func (r *run) rememberRecordPaths() {
	if r.o.DryRun {
		return
	}
	p := r.s.Prolog
	if _, err := RememberRecordPaths(r.stateDir(), r.s.Path, RecordPaths{ReportDir: p.ReportDir, Textfile: p.Textfile, RunDir: p.RunDir}, r.o.Now()); err != nil {
		r.log.WithError(err).Warn("remembering where the records go (used when the config is broken)")
	}
}

// useLastRecordPaths points a run with a broken config at the record paths
// of the last valid one (a flag or environment override still wins), or,
// without one, at nothing: then the errors are on stderr only. A broken
// file never sends records anywhere else, not even to the defaults.
func (r *run) useLastRecordPaths() {
	p := &r.s.Prolog
	last, err := LastRecordPaths(r.stateDir(), r.s.Path)
	for key, dst := range map[string]*string{"report_dir": &p.ReportDir, "textfile": &p.Textfile, "run_dir": &p.RunDir} {
		if r.s.Explicit[key] {
			continue // set by flag or environment, not by the broken file
		}
		switch key {
		case "report_dir":
			*dst = last.ReportDir
		case "textfile":
			*dst = last.Textfile
		case "run_dir":
			*dst = last.RunDir
		}
	}
	if err != nil {
		r.note("config invalid and %v: no report or textfile written", err)
		r.log.WithField("config", r.s.Path).WithError(err).Error("INVALID CONFIG: no valid config was seen before, so vigil writes no report or textfile; the errors are on stderr only")
		return
	}
	r.note("config invalid: records go where the valid config of %s said (%s)", last.Since.Format(time.RFC3339), filepath.Join(r.stateDir(), StateFileName))
	r.log.WithFields(logrus.Fields{"config": r.s.Path, "report_dir": p.ReportDir, "textfile": p.Textfile}).
		Error("INVALID CONFIG: recording where the last valid config said")
}

// runBudget is the part of the budget checks may use; the rest is kept
// for draining and writing the report.
func runBudget(total time.Duration) time.Duration {
	reserve := min(total/5, 15*time.Second)
	return total - reserve
}

func (r *run) runChecks(ctx context.Context, checks []benchmarks.Check) benchmarks.Outcome {
	s := r.s
	env := &benchmarks.Env{Node: r.rep.Node, DryRun: r.o.DryRun}
	if r.job != nil {
		env.JobID = r.job.ID
		env.Devices = r.job.GPUs
	}
	if !r.o.DryRun {
		if cli := r.client(); cli != nil {
			cctx, cancel := r.actionCtx(ctx)
			n, err := cli.NodeGresGPUs(cctx, r.rep.Node)
			cancel()
			if err != nil {
				r.log.WithError(err).Debug("reading the node's GPU gres")
				r.note("GPU gres of %s unknown: %v", r.rep.Node, err)
			} else {
				env.GresGPUs = n
			}
		}
	}
	configPath := ""
	if s.Found {
		configPath = s.Path
	}
	runner := &benchmarks.Runner{
		Exe:        r.o.Exe,
		ConfigPath: configPath,
		Config:     s.File,
		Env:        env,
		Timeout: func(name string) time.Duration {
			if d, ok := s.Prolog.Timeouts[name]; ok {
				return d
			}
			return s.Prolog.CheckTimeout
		},
		Budget:  runBudget(time.Until(r.deadline)),
		Retries: s.Prolog.Retries,
		Now:     r.o.Now,
		OnDone: func(res benchmarks.Result) {
			e := r.log.WithFields(logrus.Fields{"check": res.Check, "status": string(res.Status),
				"reason": res.Reason, "device": res.Device, "attempts": res.Attempts, "duration": res.Duration.String()})
			switch res.Status {
			case benchmarks.StatusFail:
				e.Warn(res.Message)
			default:
				e.Info(res.Message)
			}
		},
	}
	if r.o.Progress != nil {
		p := &report.Progress{W: r.o.Progress}
		runner.OnStart = p.Start
		done := runner.OnDone
		runner.OnDone = func(res benchmarks.Result) { p.Done(res); done(res) }
	}
	return runner.Run(ctx, checks)
}

// client returns the Slurm client, nil in a dry run.
func (r *run) client() Slurm {
	if r.o.DryRun {
		return nil
	}
	if r.cli == nil {
		cli := r.o.Slurm
		if cli == nil {
			cli = NewSlurmClient(r.s.Prolog, r.o.Lookup)
			r.checkSlurmConf()
		}
		conf, _ := SlurmConf(r.s.Prolog, r.o.Lookup)
		r.cli = loggedSlurm{Slurm: cli, log: r.log, conf: conf}
	}
	return r.cli
}

// actionCtx bounds a Slurm call by the configured timeout and the budget.
func (r *run) actionCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	d := r.s.Prolog.SlurmTimeout
	if left := time.Until(r.deadline); left < d {
		d = max(left, time.Second)
	}
	return context.WithTimeout(ctx, d)
}

// act turns the verdict into a drain, resume or hold, and an exit code.
func (r *run) act(ctx context.Context) int {
	rep := r.rep
	p := r.s.Prolog
	failCode := ExitFail
	if r.o.Mode == ModeEpilog {
		// vigil drains the node itself; a failing epilog would make Slurm
		// replace vigil's reason with "Epilog error".
		failCode = ExitOK
	}
	if rep.BudgetExpired && p.OnBudgetExpiry == config.ActionHold {
		rep.Action = report.Action{Kind: report.ActionHold}
		if r.job == nil || r.o.Mode != ModeProlog {
			rep.Action.Kind = report.ActionNone
			r.note("budget expired with on_budget_expiry = hold, but there is no job to hold")
			return ExitOK
		}
		if cli := r.client(); cli != nil {
			cctx, cancel := r.actionCtx(ctx)
			defer cancel()
			if err := cli.Requeue(cctx, r.job.ID, true); err != nil {
				rep.Action.Error = err.Error()
				r.log.WithError(err).Error("holding the job")
			} else {
				rep.Action.Done = true
				r.log.Warn("budget expired: job held, node left alone")
			}
		}
		return ExitOK
	}
	plan, n, readErr := r.plan(ctx)
	if plan.Failed {
		rep.Verdict = benchmarks.StatusFail
		return r.drain(ctx, plan, failCode)
	}
	if readErr != nil {
		r.note("reading %s's state: %v", rep.Node, readErr)
		r.log.WithError(readErr).Error("reading the node's state with scontrol: vigil cannot resume or keep its drain this run")
		return ExitOK
	}
	if n == nil {
		if r.o.DryRun {
			r.note("a run that is not dry would resume %s if vigil had drained it and this run cleared every check its reason names (dry runs do not query Slurm)", rep.Node)
		}
		return ExitOK
	}
	if !n.Drained() && n.ForeignState() == "" && (n.Reason == "" || n.OwnedByVigil()) {
		return ExitOK
	}
	if !n.OwnedByVigil() || n.ForeignState() != "" {
		rep.Action = report.Action{Kind: report.ActionKeep, Reason: n.Reason, State: nodeState(*n)}
		return ExitOK
	}
	if plan.Reason != "" {
		return r.stay(ctx, plan, n.Reason, failCode)
	}
	rep.Action = report.Action{Kind: report.ActionResume, Reason: n.Reason, Lifted: plan.Lifted}
	cctx, cancel := r.actionCtx(ctx)
	defer cancel()
	resumed, err := r.client().Resume(cctx, rep.Node)
	switch {
	case err != nil:
		rep.Action.Error = err.Error()
		r.log.WithError(err).Error("resuming the node")
	case resumed:
		rep.Action.Done = true
		r.log.WithFields(logrus.Fields{"reason": n.Reason, "lifted": strings.Join(plan.Lifted, ",")}).Info("node resumed: every check its vigil reason named ran and passed")
	}
	return ExitOK
}

// plan reads the node's state (not in a dry run) and applies the drain
// rule to it. n is nil when Slurm was not asked.
func (r *run) plan(ctx context.Context) (drainPlan, *slurm.Node, error) {
	scope := runScope{Results: r.rep.Results, BudgetExpired: r.rep.BudgetExpired, Who: r.who(), Registered: registered}
	if r.job != nil && r.o.Mode == ModeProlog {
		scope.Devices = r.job.GPUs
	}
	cli := r.client()
	if cli == nil {
		return planDrain("", scope), nil, nil
	}
	cctx, cancel := r.actionCtx(ctx)
	defer cancel()
	n, err := cli.Node(cctx, r.rep.Node)
	if err != nil {
		return planDrain("", scope), nil, err
	}
	old := ""
	if n.Drained() && n.OwnedByVigil() && n.ForeignState() == "" {
		old = n.Reason
	}
	return planDrain(old, scope), &n, nil
}

func registered(name string) bool {
	_, ok := benchmarks.Lookup(name)
	return ok
}

// who names this run in messages.
func (r *run) who() string {
	switch {
	case r.o.Mode == ModeEpilog:
		return "the epilog"
	case r.o.Mode == ModeHealth:
		return "this health check"
	case r.jobChecks:
		return "this prolog (the job chose its checks)"
	}
	return "this prolog"
}

// drain drains the node for the plan's reason. The prolog and health mode
// exit ExitFail when the node is drained by vigil afterwards; health mode
// exits ExitNotDrained when it could not drain (another party holds the
// node, or scontrol failed); the epilog always exits ExitOK.
func (r *run) drain(ctx context.Context, plan drainPlan, failCode int) int {
	rep := r.rep
	rep.Action = report.Action{Kind: report.ActionDrain, Reason: plan.Reason}
	for _, k := range plan.Kept {
		rep.Action.Kept = append(rep.Action.Kept, k.Why)
	}
	cli := r.client()
	if cli == nil {
		return failCode
	}
	notDrained := failCode
	if r.o.Mode == ModeHealth {
		notDrained = ExitNotDrained
	}
	cctx, cancel := r.actionCtx(ctx)
	defer cancel()
	err := cli.Drain(cctx, rep.Node, plan.Reason)
	switch {
	case errors.Is(err, slurm.ErrNotOurs):
		rep.Action.Kind = report.ActionKeep
		if n, nerr := cli.Node(cctx, rep.Node); nerr == nil {
			rep.Action.Reason = n.Reason
			rep.Action.State = nodeState(n)
		}
		msg := "the node is held by someone else: vigil leaves it as it is"
		if r.o.Mode == ModeProlog {
			msg += "; failing the prolog so that Slurm requeues the job"
		}
		r.log.WithError(err).Warn(msg)
		return notDrained
	case err != nil:
		rep.Action.Error = err.Error()
		r.log.WithError(err).Error("draining the node")
		return notDrained
	}
	rep.Action.Done = true
	r.log.WithField("reason", plan.Reason).Warn("node drained")
	return failCode
}

// stay keeps vigil's drain because the run did not clear every check its
// reason names, rewriting the reason when some of them were cleared.
func (r *run) stay(ctx context.Context, plan drainPlan, old string, failCode int) int {
	rep := r.rep
	rep.Action = report.Action{Kind: report.ActionStay, Reason: plan.Reason, Lifted: plan.Lifted, Done: true}
	for _, k := range plan.Kept {
		rep.Action.Kept = append(rep.Action.Kept, k.Why)
	}
	r.note("%s stays drained: %s", rep.Node, keptSummary(plan.Kept))
	r.log.WithFields(logrus.Fields{"reason": plan.Reason, "kept": keptSummary(plan.Kept)}).
		Warn(rep.Node + " stays drained by vigil: " + keptSummary(plan.Kept) +
			" (re-test with vigil-prolog --node " + rep.Node + " --checks " + keptChecks(plan.Kept) +
			", or resume by hand: scontrol update NodeName=" + rep.Node + " State=RESUME)")
	if plan.Reason != old {
		cctx, cancel := r.actionCtx(ctx)
		defer cancel()
		if err := r.client().Drain(cctx, rep.Node, plan.Reason); err != nil {
			rep.Action.Done = false
			rep.Action.Error = err.Error()
			r.log.WithError(err).Error("rewriting vigil's drain reason")
		}
	}
	return failCode
}

// keptChecks lists the kept checks for a --checks flag ("gemm,disk").
func keptChecks(kept []keptCheck) string {
	var names []string
	for _, k := range kept {
		if k.Entry.Check != benchmarks.BudgetCheck {
			names = append(names, k.Entry.Check)
		}
	}
	if len(names) == 0 {
		return "<the suite>"
	}
	return strings.Join(names, ",")
}

// nodeState is the node's state as Slurm prints it ("IDLE+DRAIN").
func nodeState(n slurm.Node) string {
	return strings.Join(append([]string{n.State}, n.Flags...), "+")
}

// killLeftovers kills what still holds the job's devices (epilog).
func (r *run) killLeftovers() {
	if !r.s.Epilog.KillProcesses || r.job == nil || len(r.job.GPUs) == 0 {
		return
	}
	h := r.o.Holders
	if h == nil {
		h = ProcFS{Root: r.o.Root}
	}
	pids, err := h.Holders(JobDevices(r.job.GPUs))
	if err != nil {
		r.note("finding processes on the job's devices: %v", err)
		return
	}
	if len(pids) == 0 {
		return
	}
	if r.o.DryRun {
		r.note("would kill processes still holding the job's devices: %v", pids)
		return
	}
	sig := r.o.Signaler
	if sig == nil {
		sig = OSSignaler{}
	}
	sleep := r.o.Sleep
	if sleep == nil {
		sleep = time.Sleep
	}
	killed, err := KillHolders(sig, pids, r.s.Epilog.KillGrace, sleep)
	r.rep.Action.Killed = killed
	if err != nil {
		r.note("killing leftover processes: %v", err)
	}
	r.log.WithField("pids", fmt.Sprint(killed)).Warn("killed processes left on the job's devices")
}

// jobDir is vigil's per-job directory.
func (r *run) jobDir() string {
	if r.job == nil || r.s.Prolog.RunDir == "" {
		return ""
	}
	return filepath.Join(r.s.Prolog.RunDir, "jobs", filepath.Base(r.job.ID))
}

func (r *run) cleanJobFiles() {
	dir := r.jobDir()
	if dir == "" || r.o.DryRun {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		r.note("removing %s: %v", dir, err)
	}
}

// record writes the JSON report, the textfile and the per-job copy.
// Failures are logged and noted, never fatal.
func (r *run) record() string {
	p := r.s.Prolog
	dry := r.o.DryRun
	var path string
	if p.ReportDir != "" && (!dry || r.s.Explicit["report_dir"]) {
		var err error
		if path, err = report.WriteJSON(p.ReportDir, r.rep); err != nil {
			r.log.WithError(err).Error("writing the report")
			r.note("report not written: %v", err)
			path = ""
		} else if err := report.Prune(p.ReportDir, p.KeepReports); err != nil {
			r.log.WithError(err).Warn("pruning old reports")
		}
	}
	if p.Textfile != "" && (!dry || r.s.Explicit["textfile"]) {
		if err := report.WriteTextfile(p.Textfile, r.rep); err != nil {
			r.log.WithError(err).Error("writing the Prometheus textfile")
		}
	}
	if dir := r.jobDir(); dir != "" && !dry && r.o.Mode == ModeProlog {
		b, err := r.rep.JSON()
		if err == nil {
			if err = os.MkdirAll(dir, 0o755); err == nil {
				err = report.WriteAtomic(filepath.Join(dir, "prolog.json"), b, 0o644)
			}
		}
		if err != nil {
			r.log.WithError(err).Warn("writing the per-job report")
		}
	}
	return path
}
