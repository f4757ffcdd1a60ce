package lifecycle

import (
	"io"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/leftovers"
	"github.com/vigil-hpc/vigil/lifecycle/notice"
	"github.com/vigil-hpc/vigil/lifecycle/record"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/session"
)

// Options configure one run.
type Options struct {
	// Program is the binary's name for reports ("vigil-prolog").
	Program string
	// Mode is prolog, epilog, health or validate.
	Mode decide.Mode
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
	Slurm session.Slurm
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
	// Holders finds processes holding the job's devices (epilog); nil means leftovers.ProcFS at Root.
	Holders leftovers.DeviceHolders
	// Signaler kills them; nil means leftovers.OSSignaler.
	Signaler leftovers.Signaler
	// Sleep waits between SIGTERM and SIGKILL, and before the job's
	// comment is looked at again; nil means time.Sleep.
	Sleep func(time.Duration)
	// StateDir holds the record paths of the last valid config (see
	// record.RecordPaths); "" means VIGIL_STATE_DIR, else
	// record.DefaultStateDir.
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

// run is one run's state, from its start to its report: the parts it
// hands out (notes, sl, admins, cw) are built once and passed explicitly.
type run struct {
	o   Options
	s   *settings.Settings
	rep *report.Report
	log logrus.FieldLogger
	job *slurm.Job
	// notes are the report's notes.
	notes notes
	// sl is the run's Slurm access, built once the settings and the
	// budget are final (after the job's choices); nil before.
	sl *session.Access
	// admins tells the admins and records the guard (built with sl).
	admins *notice.Admins
	// deadline is when the whole run must be over (the budget).
	deadline time.Time
	// jobChecks is set when the job chose its own checks (--vigil-checks):
	// a node vigil drained for a check the job did not run stays drained.
	jobChecks bool
	// cw writes the job's comment; nil when none is written (and before
	// the checks).
	cw *notice.CommentWriter
	// user is how the job's user is told of a failure.
	user notice.UserNotice
	// badLinks are the job's bad links that blame nobody ("n2-n3
	// (link-fault)"), for the job's comment.
	badLinks []string
	// jobFailing is, per check, the nodes of the job that failed it, as
	// the cross-node phase's coordinator counted them (nil without one).
	jobFailing map[string][]string
}

// runBudget is the part of the budget checks may use; the rest is kept
// for killing a hung check's processes, draining and writing the report:
// a fifth of it, at least 1 s (a loaded slurmctld answers scontrol in
// hundreds of milliseconds) but never more than half, at most 15 s.
func runBudget(total time.Duration) time.Duration {
	reserve := min(max(total/5, time.Second), total/2, 15*time.Second)
	return total - reserve
}

// stateDir is the run's state directory (record.StateDir of Options.StateDir).
func stateDir(o Options) string { return record.StateDir(o.StateDir, o.Lookup) }
