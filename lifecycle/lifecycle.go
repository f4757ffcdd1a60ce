// Package lifecycle is the node lifecycle (run the checks, decide, drain or
// resume, record) and the verdict and drain rules shared by vigil-prolog
// (also run as Slurm's HealthCheckProgram) and vigil-epilog: load the
// config, run the suite, decide, drain a failing node or resume one vigil
// drained earlier, record the run, and say which exit code the program
// should return.
package lifecycle

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/internal/vendors"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/leftovers"
	"github.com/vigil-hpc/vigil/lifecycle/notice"
	"github.com/vigil-hpc/vigil/lifecycle/record"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/session"
)

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
		o.ConfigPath = settings.DefaultConfigPath
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
	r.rep.Node = nodeName(o)
	r.notes = notes{&r.rep.Notes}
	r.log = r.log.WithFields(logrus.Fields{"node": r.rep.Node, "mode": string(o.Mode)})

	code := r.do(ctx)
	r.rep.ExitCode = code
	r.rep.Duration = o.Now().Sub(start)
	if !o.DryRun && o.Mode == decide.ModeProlog && r.job != nil && r.s != nil && r.rep.Config.Valid {
		record.WriteRunResult(r.rep, r.job, record.ResultDir(r.s.Prolog, o.Lookup), r.s.Prolog.ResultDir == config.ResultDirWorkdir, r.log, r.notes.add)
	}
	if o.Mode == decide.ModeValidate && !o.DryRun && r.s != nil && r.rep.Config.Valid {
		r.writeValidation(ctx)
	}
	path := record.Write(r.rep, r.s, r.job, o.DryRun, r.log, r.notes.add)
	// After the report: a failing node may look at the comment again.
	if r.rep.Skipped == "" {
		r.cw.Result(ctx, notice.RunEnd{Code: code, Passed: r.rep.Verdict == benchmarks.StatusPass, Took: o.Now().Sub(start), BadLinks: r.badLinks})
	}
	if o.Out != nil {
		report.Table(o.Out, r.rep)
		if path != "" {
			fmt.Fprintf(o.Out, "report:       %s\n", path)
		}
	}
	return Outcome{Report: r.rep, ReportPath: path, ExitCode: code}
}

// nodeName is Options.Node, else SLURMD_NODENAME, else the short host name.
func nodeName(o Options) string {
	if o.Node != "" {
		return o.Node
	}
	if v, ok := o.Lookup("SLURMD_NODENAME"); ok && v != "" {
		return v
	}
	h, _ := os.Hostname()
	if i := strings.IndexByte(h, '.'); i > 0 {
		h = h[:i]
	}
	return h
}

func (r *run) do(ctx context.Context) int {
	o := r.o
	s, errs := settings.LoadSettings(o.ConfigPath, o.ConfigExplicit, o.Lookup, o.Flags)
	r.s = s
	r.rep.Config = report.ConfigInfo{Path: s.Path, Found: s.Found, Valid: len(errs) == 0}
	switch {
	case len(errs) > 0:
		record.UseLastRecordPaths(s, stateDir(o), r.rep.Mode, r.log, r.notes.add)
	case !o.DryRun: // dry runs change nothing
		record.RememberSettings(s, stateDir(o), o.Now(), r.log, r.notes.add)
	}
	r.deadline = o.Now().Add(runBudgetOf(o.Mode, s))
	if runBudgetOf(o.Mode, s) <= 0 {
		r.deadline = o.Now().Add(benchmarks.DefaultBudget)
	}
	r.rep.Accelerators = ProbeAccelerators(o.Root)

	r.readJob()
	if len(errs) > 0 {
		return r.invalidConfig(errs)
	}
	warnAll(r.log, s.BudgetWarnings())
	if r.rep.Accelerators.Count.None() {
		r.log.Info(vendors.NoneFound())
	}

	if o.Mode == decide.ModeProlog && r.job != nil {
		jc := applyJobChoices(s, o.Lookup, r.rep, r.log, r.notes)
		r.user.Choice = jc.Notify
		if jc.Skip {
			return decide.ExitOK
		}
		r.jobChecks = jc.JobChecks
		if jc.Shorter {
			r.deadline = r.rep.Start.Add(s.Prolog.Budget)
		}
	}
	r.sl = session.New(s.Prolog, o.Lookup, o.Slurm, o.DryRun, r.deadline, r.log, r.notes.add)
	r.admins = notice.NewAdmins(s.Notify, s.Guard, r.sl, r.rep, o.Program, o.Now, r.log, r.notes.add)

	if o.Mode == decide.ModeProlog && s.Prolog.Timing == config.TimingAfterRequeue && (r.job == nil || r.job.RestartCount == 0) {
		r.rep.Skipped = "timing = after-requeue and the job was not requeued (SLURM_RESTART_COUNT = 0)"
		r.log.Info(r.rep.Skipped)
		return decide.ExitOK
	}

	if o.Mode == decide.ModeEpilog {
		leftovers.Kill(r.job, s.Epilog, leftovers.Env{Root: o.Root, Holders: o.Holders, Signaler: o.Signaler, Sleep: o.Sleep, DryRun: o.DryRun},
			&r.rep.Action, r.log, r.notes.add)
		if !s.Epilog.Recheck {
			r.rep.Skipped = "epilog.recheck = false"
			record.CleanJobFiles(s.Prolog.RunDir, r.job, o.DryRun, r.notes.add)
			return decide.ExitOK
		}
	}

	if o.Mode == decide.ModeProlog && r.job != nil && s.Prolog.JobComment {
		r.cw = notice.NewCommentWriter(r.sl, r.job, r.rep.Node, o.Sleep, r.user.SawComment, r.log, r.notes.add)
	}
	r.cw.Checking(ctx)
	local, cross, na := splitCrossNode(r.selectChecks(), o.Mode, r.job, o.DryRun)
	r.rep.NotApplicable = append(r.rep.NotApplicable, na...)
	out := r.runChecks(ctx, local)
	cr := crossPhase{s: s, job: r.job, node: r.rep.Node, deadline: r.deadline, sl: r.sl, admins: r.admins, log: r.log}.
		run(ctx, cross, decide.FailedChecks(out.Results))
	r.jobFailing, r.badLinks = cr.JobFailing, cr.BadLinkNames
	r.rep.BadLinks = append(r.rep.BadLinks, cr.BadLinks...)
	out.Results = append(out.Results, cr.Results...)
	r.rep.Components = report.TakeComponents(out.Results)
	r.rep.Results = out.Results
	r.rep.BudgetExpired = out.BudgetExpired
	r.rep.CheckerMaxRSSKiB = out.ChildMaxRSSKiB
	r.rep.Verdict = benchmarks.Verdict(out.Results)
	code := r.act(ctx)
	if o.Mode == decide.ModeEpilog {
		record.CleanJobFiles(s.Prolog.RunDir, r.job, o.DryRun, r.notes.add)
	}
	return code
}

// warnAll logs each of warnings at level warn.
func warnAll(log logrus.FieldLogger, warnings []string) {
	for _, w := range warnings {
		log.Warn(w)
	}
}

// readJob reads the job from Slurm's environment (not in health mode).
func (r *run) readJob() {
	o := r.o
	v, ok := o.Lookup("SLURM_JOB_ID")
	if !ok || v == "" || o.Mode == decide.ModeHealth {
		return
	}
	if o.Mode == decide.ModeValidate {
		// vigil's own validation job: named in the report, not a job
		// the run acts on.
		r.rep.Job = v
		r.log = r.log.WithField("job", v)
		return
	}
	job, err := slurm.JobFromEnv(o.Lookup)
	if err != nil {
		r.notes.add("job environment: %v", err)
		r.log.WithError(err).Warn("reading the job environment")
		job = &slurm.Job{ID: v, UID: -1, GID: -1}
	}
	r.job = job
	r.rep.Job = job.ID
	r.log = r.log.WithField("job", job.ID)
}

// invalidConfig records the config's errors, on stderr at error level
// every run and in the report, and leaves the node alone.
func (r *run) invalidConfig(errs []error) int {
	for _, e := range errs {
		for _, line := range strings.Split(e.Error(), "\n") {
			r.rep.Config.Errors = append(r.rep.Config.Errors, line)
			r.log.WithField("config", r.s.Path).Error("INVALID CONFIG, vigil changes nothing: " + line)
		}
	}
	r.rep.Verdict = benchmarks.StatusUnknown
	r.rep.Skipped = "the config is invalid: no checks ran and the node is left alone"
	if r.o.DryRun {
		return decide.ExitConfig
	}
	return decide.ExitOK
}

// selectChecks chooses the run's checks: the health facts outside the
// prolog (the deep suite of [idle] in the validate mode), by the vendors the node
// shows unless the config lists checks.
func (r *run) selectChecks() []benchmarks.Check {
	s, o := r.s, r.o
	su := suite{checks: s.Prolog.Checks, skip: s.Prolog.Skip,
		healthOnly: s.Prolog.Suite == config.SuiteHealth || o.Mode != decide.ModeProlog}
	switch {
	case o.Mode == decide.ModeValidate:
		su = validateSuite(s)
	case o.Mode == decide.ModeEpilog:
		// A hang report naming this node is recorded; being the job's
		// user's file, it never widens the suite (culpritClaims).
		// The job's digest written here by its coordinator goes to the admins.
		culpritClaims(r.job, r.rep.Node, s.Watch, o.Lookup, r.deadline, r.log, r.notes, r.admins)
	}
	checks, na, err := benchmarks.SelectFor(su.checks, su.skip, su.healthOnly, r.rep.Accelerators.Count)
	if err != nil { // validated above; kept for safety
		r.notes.add("selecting checks: %v", err)
	}
	r.rep.NotApplicable = na
	return checks
}

func (r *run) runChecks(ctx context.Context, checks []benchmarks.Check) benchmarks.Outcome {
	s := r.s
	env := &benchmarks.Env{Node: r.rep.Node, DryRun: r.o.DryRun}
	if r.job != nil {
		env.JobID = r.job.ID
		env.Devices = r.job.GPUs
	}
	if !r.o.DryRun {
		if cli := r.sl.Client(); cli != nil {
			cctx, cancel := r.sl.Bound(ctx)
			n, err := cli.NodeGresGPUs(cctx, r.rep.Node)
			cancel()
			if err != nil {
				r.log.WithError(err).Debug("reading the node's GPU gres")
				r.notes.add("GPU gres of %s unknown: %v", r.rep.Node, err)
			} else {
				env.GresGPUs = n
			}
		}
	}
	configPath := ""
	if s.Found {
		configPath = s.Path
	}
	runner := &benchmarks.CheckRunner{
		Exe:        r.o.Exe,
		ConfigPath: configPath,
		Config:     s.File,
		Env:        env,
		Timeout:    func(name string) time.Duration { return timeoutOf(r.o.Mode, s, name) },
		Budget:     runBudget(time.Until(r.deadline)),
		Retries:    s.Prolog.Retries,
		Now:        r.o.Now,
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
