package config

import (
	"errors"
	"path/filepath"
	"time"
)

// Timing values of Prolog.Timing.
const (
	// TimingBefore runs the suite before every job.
	TimingBefore = "before"
	// TimingAfterRequeue runs it only when the job was requeued
	// (SLURM_RESTART_COUNT > 0), as a sanity check after fault tolerance.
	TimingAfterRequeue = "after-requeue"
)

// Actions of Prolog.OnBudgetExpiry.
const (
	// ActionFail fails the prolog and drains the node when the budget runs out.
	ActionFail = "fail"
	// ActionHold holds the job and leaves the node alone.
	ActionHold = "hold"
)

// Suites of Prolog.Suite.
const (
	// SuiteFull runs every enabled check: health facts and performance probes.
	SuiteFull = "full"
	// SuiteHealth runs the health facts only (the fast path).
	SuiteHealth = "health"
)

// Prolog is the [prolog] section: what vigil-prolog runs and how it acts.
// The epilog and the HealthCheckProgram mode read it too. A key with env
// and flag tags can be set by the environment and the command line as
// well (PrologOverrides; flags override environment, environment
// overrides the file): a new key is its field here, its default in
// DefaultProlog and its check in Validate, tags included.
type Prolog struct {
	// Checks names the checks to run; empty means every registered check
	// that is on by default.
	Checks []string `toml:"checks" env:"VIGIL_CHECKS" flag:"checks" arg:"a,b"`
	// Skip names checks not to run.
	Skip []string `toml:"skip" env:"VIGIL_SKIP" flag:"skip" arg:"a,b"`
	// Suite is "full" or "health" (health facts only).
	Suite string `toml:"suite" env:"VIGIL_SUITE" flag:"suite" arg:"full|health"`
	// CheckTimeout is each check's deadline ("6m").
	CheckTimeout time.Duration `toml:"check_timeout" env:"VIGIL_CHECK_TIMEOUT" flag:"check-timeout" arg:"6m"`
	// Timeouts overrides CheckTimeout per check name.
	Timeouts map[string]time.Duration `toml:"timeouts"`
	// Budget is the whole run's deadline ("30m"); vigil always returns inside it.
	Budget time.Duration `toml:"budget" env:"VIGIL_BUDGET" flag:"budget" arg:"30m"`
	// Retries is how many more times a failed performance probe runs.
	Retries int `toml:"retries" env:"VIGIL_RETRIES" flag:"retries" arg:"2"`
	// OnBudgetExpiry is "fail" (drain, fail the prolog) or "hold" (hold the job, leave the node).
	OnBudgetExpiry string `toml:"on_budget_expiry" env:"VIGIL_ON_BUDGET_EXPIRY" flag:"on-budget-expiry" arg:"fail|hold"`
	// Timing is "before" (every job) or "after-requeue" (only requeued jobs).
	Timing string `toml:"timing" env:"VIGIL_TIMING" flag:"timing" arg:"before|after-requeue"`
	// ReportDir receives one JSON report per run; empty disables reports.
	ReportDir string `toml:"report_dir" env:"VIGIL_REPORT_DIR" flag:"report-dir" arg:"DIR"`
	// TextfileDir is node_exporter's textfile directory: each mode writes
	// its own Prometheus textfile there after each run (vigil-prolog.prom,
	// vigil-epilog.prom, vigil-health.prom); empty disables them.
	TextfileDir string `toml:"textfile_dir" env:"VIGIL_TEXTFILE_DIR" flag:"textfile-dir" arg:"DIR"`
	// Textfile is the one textfile that all modes shared before each had
	// its own. Still accepted, it means TextfileDir = its directory, and
	// the file itself, left over, is removed at the next write; setting
	// both keys is an error. Empty when not set, and then not printed.
	Textfile string `toml:"textfile,omitempty" env:"VIGIL_TEXTFILE" flag:"textfile" arg:"FILE" usage:"deprecated [prolog] textfile (the one file all modes shared before): means --textfile-dir of its directory, and the file itself is removed"`
	// RunDir holds vigil's per-job files; the epilog removes them.
	RunDir string `toml:"run_dir" env:"VIGIL_RUN_DIR" flag:"run-dir" arg:"DIR"`
	// SlurmBinDir is where scontrol lives (the prolog runs without PATH).
	// A directory without an executable scontrol makes the config invalid
	// (checked on the node when the config is loaded, by every run and by
	// --check-config).
	SlurmBinDir string `toml:"slurm_bin_dir" env:"VIGIL_SLURM_BIN_DIR" flag:"slurm-bin-dir" arg:"DIR"`
	// SlurmConf is the cluster's slurm.conf, passed to scontrol as
	// SLURM_CONF when the environment has none (HealthCheckProgram runs
	// without it); "" leaves scontrol to Slurm's built-in default. A file
	// that does not exist is a run-time error, not a config error.
	SlurmConf string `toml:"slurm_conf"`
	// SlurmTimeout is the deadline of each scontrol call ("30s").
	SlurmTimeout time.Duration `toml:"slurm_timeout"`
	// KeepReports is how many JSON reports to keep in ReportDir (0 keeps all).
	KeepReports int `toml:"keep_reports"`
	// JobComment keeps the job's comment up to date while the prolog
	// checks ("vigil: checking 4 nodes", "vigil: passed (38 s)",
	// "vigil: n3 failed gemm (...); job requeued"); the user's own text
	// is kept.
	JobComment bool `toml:"job_comment"`
	// ResultDir receives one result file per node and job
	// (vigil-JOBID-NODE.json) owned by the job's user; "workdir" means the
	// job's working directory (SLURM_JOB_WORK_DIR); empty writes none.
	ResultDir string `toml:"result_dir"`
	// MaxRequeues is how many times a batch job whose prolog failed on a
	// node vigil drained goes back to the queue by itself (vigil requeues
	// it, unheld, before the prolog exits) to run on healthy nodes; past
	// it, or at 0, Slurm holds the job as without vigil ("launch failed
	// requeued held") until someone releases it.
	MaxRequeues int `toml:"max_requeues"`
}

// ResultDirWorkdir is the ResultDir value that means the job's working directory.
const ResultDirWorkdir = "workdir"

// Epilog is the [epilog] section.
type Epilog struct {
	// KillProcesses kills processes still holding the job's devices.
	KillProcesses bool `toml:"kill_processes"`
	// KillGrace is how long processes get after SIGTERM before SIGKILL ("5s").
	KillGrace time.Duration `toml:"kill_grace"`
	// Recheck re-runs the fast health facts after the job.
	Recheck bool `toml:"recheck"`
}

// Lower bounds of the [prolog] durations; smaller values are config errors
// (an integer in TOML would otherwise be read as nanoseconds).
const (
	MinCheckTimeout = 100 * time.Millisecond
	MinBudget       = time.Second
)

// DefaultProlog returns the shipped [prolog] settings. This is the one place
// those defaults live.
func DefaultProlog() Prolog {
	return Prolog{
		Suite:          SuiteFull,
		CheckTimeout:   6 * time.Minute,
		Budget:         30 * time.Minute,
		Retries:        2,
		OnBudgetExpiry: ActionFail,
		Timing:         TimingBefore,
		ReportDir:      "/var/lib/vigil/reports",
		TextfileDir:    "/var/lib/prometheus/node-exporter",
		RunDir:         "/run/vigil",
		SlurmBinDir:    "/usr/bin",
		SlurmTimeout:   30 * time.Second,
		KeepReports:    200,
		JobComment:     true,
		MaxRequeues:    3,
	}
}

// PrologOverrides is the table of the [prolog] keys that the environment
// (VIGIL_<KEY>) and vigil-prolog's and vigil-epilog's flags (--<key>) set,
// read from Prolog's tags.
func PrologOverrides() *Overrides { return prologOverrides }

var prologOverrides = NewOverrides("prolog", DefaultProlog())

// TimeoutOf is check name's timeout: its [prolog] timeouts entry, else
// check_timeout.
func (p Prolog) TimeoutOf(name string) time.Duration {
	if d, ok := p.Timeouts[name]; ok {
		return d
	}
	return p.CheckTimeout
}

// DefaultEpilog returns the shipped [epilog] settings.
func DefaultEpilog() Epilog {
	return Epilog{KillProcesses: true, KillGrace: 5 * time.Second, Recheck: true}
}

// Validate checks p's values, naming the key and line of each bad one in f.
func (p Prolog) Validate(f *File) error {
	var errs []error
	if p.Suite != SuiteFull && p.Suite != SuiteHealth {
		errs = append(errs, f.Errorf("prolog.suite", "%q: want %q or %q", p.Suite, SuiteFull, SuiteHealth))
	}
	if p.CheckTimeout < MinCheckTimeout {
		errs = append(errs, f.Errorf("prolog.check_timeout", "%v: want at least %v (write durations as strings: \"6m\")", p.CheckTimeout, MinCheckTimeout))
	}
	for name, d := range p.Timeouts {
		if d < MinCheckTimeout {
			errs = append(errs, f.Errorf("prolog.timeouts."+name, "%v: want at least %v", d, MinCheckTimeout))
		}
	}
	if p.Budget < MinBudget {
		errs = append(errs, f.Errorf("prolog.budget", "%v: want at least %v (write durations as strings: \"30m\")", p.Budget, MinBudget))
	}
	if p.Retries < 0 || p.Retries > 10 {
		errs = append(errs, f.Errorf("prolog.retries", "%d: want 0 to 10", p.Retries))
	}
	if p.OnBudgetExpiry != ActionFail && p.OnBudgetExpiry != ActionHold {
		errs = append(errs, f.Errorf("prolog.on_budget_expiry", "%q: want %q or %q", p.OnBudgetExpiry, ActionFail, ActionHold))
	}
	if p.Timing != TimingBefore && p.Timing != TimingAfterRequeue {
		errs = append(errs, f.Errorf("prolog.timing", "%q: want %q or %q", p.Timing, TimingBefore, TimingAfterRequeue))
	}
	if p.SlurmConf != "" && !filepath.IsAbs(p.SlurmConf) {
		errs = append(errs, f.Errorf("prolog.slurm_conf", "%q: want an absolute path (\"/etc/slurm/slurm.conf\")", p.SlurmConf))
	}
	if p.SlurmTimeout < time.Second {
		errs = append(errs, f.Errorf("prolog.slurm_timeout", "%v: want at least 1s", p.SlurmTimeout))
	}
	if p.ResultDir != "" && p.ResultDir != ResultDirWorkdir && !filepath.IsAbs(p.ResultDir) {
		errs = append(errs, f.Errorf("prolog.result_dir", "%q: want an absolute path or %q", p.ResultDir, ResultDirWorkdir))
	}
	if f.Has("prolog.textfile") && f.Has("prolog.textfile_dir") {
		errs = append(errs, f.Errorf("prolog.textfile", "%q: set textfile_dir alone (each mode writes vigil-MODE.prom there; textfile named the one file that earlier versions shared)", p.Textfile))
	}
	if p.KeepReports < 0 {
		errs = append(errs, f.Errorf("prolog.keep_reports", "%d: must be 0 or more", p.KeepReports))
	}
	if p.MaxRequeues < 0 || p.MaxRequeues > 100 {
		errs = append(errs, f.Errorf("prolog.max_requeues", "%d: want 0 (Slurm holds the job) to 100", p.MaxRequeues))
	}
	return errors.Join(errs...)
}

// Validate checks e's values, naming the key and line of each bad one in f.
func (e Epilog) Validate(f *File) error {
	if e.KillGrace < 0 {
		return f.Errorf("epilog.kill_grace", "%v: must be 0 or more", e.KillGrace)
	}
	return nil
}
