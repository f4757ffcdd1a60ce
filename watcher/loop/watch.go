package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/notify"
	"github.com/vigil-hpc/vigil/policy"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/watcher/action"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
	"github.com/vigil-hpc/vigil/watcher/hangview"
	"github.com/vigil-hpc/vigil/watcher/ncclras"
	"github.com/vigil-hpc/vigil/watcher/sample"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Options is everything vigil-watch needs beyond the [watch] settings.
type Options struct {
	Settings Settings // merged file, environment and flags, final and validated (Resolve)
	// Record appends every sample as a trace line to this file (%j and %N
	// expanded, see RecordPath); "" records nothing.
	Record string
	// AccelTrace takes the accelerator readings from a recorded trace
	// instead of NVML/DCMI (tests and machines without accelerators).
	AccelTrace string
	// DryRun acts on nothing and logs what it would do.
	DryRun bool
	// Root is the root of /proc and /sys ("/" in production; tests use
	// fixture trees).
	Root string
	// Lookup reads the environment (os.LookupEnv).
	Lookup func(string) (string, bool)
	// Stdout receives one JSON line per event.
	Stdout io.Writer
	// Log receives the log lines.
	Log logrus.FieldLogger
	// Clock is the loop's time source; nil is the wall clock.
	Clock Clock
	// Slurm is the scontrol client; nil builds one from Settings.SlurmBinDir.
	Slurm *slurm.Client
	// NodeAddrs maps the job's node names to addresses for the watchers'
	// meeting (--node-addrs, tests); nil asks Slurm for each node's
	// NodeAddr (one scontrol show node call), as the prolog meets them.
	NodeAddrs map[string]string
}

// ErrNotInJob is returned when vigil-watch runs outside a Slurm job.
var ErrNotInJob = errors.New("vigil-watch must run inside a Slurm job (srun --overlap --ntasks-per-node=1 vigil-watch &)")

// Watch watches the job this process runs in, on this node, until the job
// leaves the node or ctx ends (SIGTERM). Both end it cleanly with nil.
// o.Settings are final and valid (Resolve): the settings are decided once.
func Watch(ctx context.Context, o Options) error {
	s := o.Settings
	if err := UseSiteRules(s); err != nil {
		return err
	}
	log := o.Log
	if log == nil {
		log = logrus.StandardLogger()
	}
	root := o.Root
	if root == "" {
		root = "/"
	}
	job, err := slurm.JobFromEnv(o.lookup())
	if err != nil {
		if errors.Is(err, slurm.ErrNotInJob) {
			return ErrNotInJob
		}
		return fmt.Errorf("vigil-watch: %w", err)
	}
	log = log.WithFields(logrus.Fields{"job": job.ID, "node": job.NodeName})
	release, alone := claimJob(job, o.clock(), log)
	if alone {
		return nil
	}
	defer release()

	cg := &cgroups{root: filepath.Join(root, "sys", "fs", "cgroup"), job: job}
	if err := cg.refresh(); err != nil {
		return fmt.Errorf("vigil-watch: %w", err)
	}

	accel, closeAccel, err := accelerators(o, root, job, log)
	if err != nil {
		return err
	}
	defer closeAccel()
	sampler := &sample.Sampler{Root: root, Cgroups: cg.dirs, Accel: accel, Host: job.NodeName, Job: job.ID}
	defer sampler.Close()
	cg.onChange = func(dirs []string) { sampler.Cgroups = dirs }

	actor := newActor(ctx, o, s, job, log)
	recent := hangview.NewRecent(s.Window) // what each hang report's page is drawn from
	actor.Pages = recent
	logs := OpenJobLogs(ctx, jobOutputs(slurmClient(o, s), job.ID), root, job.NodeName, job.ID, job.Nodes, log)
	defer logs.Close()
	var early EarlySource
	logs.Device, early = watchFaults(accel, log)
	view, closeView := jobView(ctx, o, s, job, logs, recent.Observe, log.WithField("part", "coord"))
	defer closeView()
	if c, ok := view.(interface{ Coordinated() bool }); ok {
		actor.Quiet = c.Coordinated
	}

	clock := o.clock()
	loop := &Loop{
		Clock: clock, Period: s.Period, Sampler: sampler, Detector: hang.New(s.Hang), Ranks: sampler.Ranks,
		Alive: cg.refresh, Events: o.Stdout, Actions: actor, Log: log,
		Logs: logs, Job: view, Digests: actor, View: recent, Early: early,
		RAS: &RASPoller{Addr: ncclras.Addr(o.lookup()), Period: s.Period, Clock: clock, Log: log}, Waits: &WaitsPoller{Read: sampler.Waits},
	}
	if o.Record != "" {
		path := RecordPath(o.Record, job.ID, job.NodeName)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("vigil-watch: --record: %w", err)
		}
		defer f.Close()
		loop.Record = trace.NewWriter(f)
	}
	first := clock.Now().Add(s.FirstVerdict()).UTC().Format(time.RFC3339)
	log.WithFields(logrus.Fields{
		"window": s.Window.String(), "period": s.Period.String(), "grace": s.Grace.String(), "first_verdict": first,
		"io_bytes": s.IOBytes, "action": string(actor.Control), "dry_run": o.DryRun, "cgroups": strings.Join(cg.dirs, ","),
		"mail": s.Mail, "job_webhook": redactedURL(s.JobWebhookURL),
	}).Info(StartMessage(s.Hang, first))
	err = loop.Run(ctx)
	logStop(log, actor)
	return err
}

// newActor builds what acts on the detector's events: reports, the job's
// comment, webhook, mail, and the opt-in cancel, requeue or requeue-exclude.
func newActor(ctx context.Context, o Options, s Settings, job *slurm.Job, log logrus.FieldLogger) *action.Actor {
	client := slurmClient(o, s)
	control, _ := action.ParseControl(s.Action) // Validate checked it
	mailProg := s.MailProg
	if s.Mail && mailProg == "" {
		mailProg = discoverMailProg(ctx, client, log)
	}
	actor := &action.Actor{
		Config: action.Config{
			Job: job.ID, User: job.User, Host: job.NodeName, Window: s.Window,
			ReportDir:  s.ReportDir,
			WebhookURL: s.WebhookURL, JobWebhookURL: s.JobWebhookURL,
			WebhookTimeout: s.WebhookTimeout, WebhookAttempts: s.WebhookAttempts,
			Mail: s.Mail, MailProg: mailProg,
			Comment: s.Comment, Stagger: Stagger(job, s.Period),
			Control: control, MaxRequeues: s.MaxRequeues, RestartCount: job.RestartCount, KeepOwnFailures: s.KeepOwnFailures,
			DryRun: o.DryRun,
		},
		Slurm: client,
		Log:   log,
	}
	return actor
}

// redactedURL is u without its path (policy.RedactURL), "" for none.
func redactedURL(u string) string {
	if u == "" {
		return ""
	}
	return policy.RedactURL(u)
}

// slurmClient is o.Slurm, else a client of s.SlurmBinDir's scontrol.
func slurmClient(o Options, s Settings) *slurm.Client {
	if o.Slurm != nil {
		return o.Slurm
	}
	return &slurm.Client{BinDir: s.SlurmBinDir}
}

// jobOutputs reads the job's StdOut and StdErr paths from scontrol show
// job (as the job's user).
func jobOutputs(c *slurm.Client, id string) JobOutputs {
	return func(ctx context.Context) (string, string, string, error) {
		info, err := c.Job(ctx, id)
		if err != nil {
			return "", "", "", err
		}
		return info.Fields["StdOut"], info.Fields["StdErr"], info.BatchHost, nil
	}
}

// logStop logs the watcher's own cost and the nodes it found hung.
func logStop(log logrus.FieldLogger, actor *action.Actor) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		log.WithFields(logrus.Fields{
			"max_rss_kib": ru.Maxrss,
			"cpu_s":       fmt.Sprintf("%.3f", float64(ru.Utime.Nano()+ru.Stime.Nano())/1e9),
			"hung_nodes":  strings.Join(actor.Hung(), ","),
		}).Info("vigil-watch stopped")
	}
}

// StartMessage is the watcher's start-up log message: when its first verdict
// can come (first, a time) and why, and how soon each faster path can
// speak.
func StartMessage(c hang.Config, first string) string {
	s := fmt.Sprintf("vigil-watch started; first verdict possible at %s (the longer of grace %v and window %v); "+
		"after that, a node is reported one window after its last I/O progress",
		first, hangfmt.ShortDuration(c.Grace), hangfmt.ShortDuration(c.Window))
	if c.PulseFactor > 0 {
		s += fmt.Sprintf("; a job that prints progress is reported once %d progress lines are seen, "+
			"max(%g × their interval, %v) after its last one (for a line a minute: %v)",
			c.PulseBeats, c.PulseFactor, hangfmt.ShortDuration(c.PulseFloor), hangfmt.ShortDuration(hang.PulseDeadline(c, time.Minute)))
	}
	if c.ConfirmPeriods > 0 {
		s += fmt.Sprintf("; after strong evidence (a fault XID or ECC error, a collective timeout, a transport error, "+
			"a rank gone or stopped, NCCL RAS naming dead ranks), %v of flat readings confirm it",
			hangfmt.ShortDuration(time.Duration(c.ConfirmPeriods+1)*c.Period))
		s += fmt.Sprintf("; evidence that cannot heal (a device that cannot recover: XID 79, 74, 95, 119, 154 naming a reset, "+
			"or any XID NVIDIA's catalogue says needs a reset or a reboot, reported by the device library; "+
			"NCCL RAS naming dead ranks; every process of a host gone while its peers do no I/O) is reported at once: "+
			"within %v of the event (device faults are read every %v; the rest at the next sample)",
			hangfmt.ShortDuration(c.Period), hangfmt.ShortDuration(EarlyCheck))
	}
	return s
}

// Stagger is how long a node waits before it looks for another node's note
// of the same hang: its index in the job's node list times a step of at most
// 1 s, all of them within half a period.
func Stagger(job *slurm.Job, period time.Duration) time.Duration {
	n := len(job.Nodes)
	i := slices.Index(job.Nodes, job.NodeName)
	if n < 2 || i <= 0 {
		return 0
	}
	step := min(time.Second, period/2/time.Duration(n))
	return time.Duration(i) * step
}

// RecordPath expands %j (job id) and %N (node name) in a --record path, so
// that the watchers of a multi-node job write one file each.
func RecordPath(pattern, job, node string) string {
	return strings.NewReplacer("%j", job, "%N", node, "%%", "%").Replace(pattern)
}

// deviceFaults is the accelerator source's own fault reports as device
// events for JobLogs (sample.FaultReporter: NVML's events, DCMI's error
// codes and ECC counts); nil for a recorded trace, no accelerators or a
// sampler without them.
func deviceFaults(accel sample.Accelerators, log logrus.FieldLogger) DeviceEvents {
	if f, ok := accel.(sample.FaultReporter); ok {
		if ev := f.DeviceFaults(log); ev != nil {
			return ev
		}
	}
	return nil
}

// watchFaults is deviceFaults read between samples too (DeviceWatch): the
// JobLogs' device events and the loop's early source; nil for both where
// there are none.
func watchFaults(accel sample.Accelerators, log logrus.FieldLogger) (DeviceEvents, EarlySource) {
	dev := deviceFaults(accel, log)
	if dev == nil {
		return nil, nil
	}
	w := &DeviceWatch{Device: dev}
	return w, w
}

func (o Options) clock() Clock {
	if o.Clock == nil {
		return RealClock{}
	}
	return o.Clock
}

// claimJob takes the job's claim on this node (Claim). done is true when
// another watcher of the job already runs here: it is said, and this one
// should end at once with success. A claim that cannot be checked is
// logged and watching goes on without it.
func claimJob(job *slurm.Job, clock Clock, log logrus.FieldLogger) (release func(), done bool) {
	step := job.StepID
	if step == "" {
		step = "none"
	}
	release, err := Claim(job.ID, job.NodeName, step, job.UID, clock.Now())
	var claimed *ClaimedError
	switch {
	case errors.As(err, &claimed):
		log.WithFields(logrus.Fields{"holder_pid": claimed.Holder.PID, "holder_step": claimed.Holder.Step}).
			Warn(AlreadyWatched(job, claimed.Holder))
		return release, true
	case err != nil:
		log.WithError(err).Warn("could not make sure this is the job's only watcher on this node")
	}
	return release, false
}

// AlreadyWatched is what a second watcher of a job on a node says before it
// exits 0.
func AlreadyWatched(job *slurm.Job, h Holder) string {
	msg := fmt.Sprintf("vigil-watch already watches job %s on %s (%s); this one exits, its options unused", job.ID, job.NodeName, h)
	if h.Step == "extern" {
		msg += ": the site starts a watcher for every job (watch=auto); drop the srun ... vigil-watch line " +
			"and set the job's options with --vigil-hang-time, --vigil-hang-action, --vigil-notify"
	}
	return msg
}

func (o Options) lookup() func(string) (string, bool) {
	if o.Lookup == nil {
		return os.LookupEnv
	}
	return o.Lookup
}

// discoverMailProg asks scontrol for Slurm's MailProg, falling back to
// notify.DefaultMailProg.
func discoverMailProg(ctx context.Context, c *slurm.Client, log logrus.FieldLogger) string {
	cfg, err := c.Config(ctx)
	if err != nil {
		log.WithError(err).Warn("could not read Slurm's MailProg; using " + notify.DefaultMailProg)
		return notify.DefaultMailProg
	}
	if p, ok := slurm.MailProg(cfg); ok {
		return p
	}
	return notify.DefaultMailProg
}

// cgroups keeps the list of the job's cgroup directories to sample: every
// step of the job on this node except vigil-watch's own, so that the
// watcher's log and record writes never count as the job's progress.
type cgroups struct {
	root     string
	job      *slurm.Job
	dirs     []string
	onChange func([]string)
}

// refresh re-lists the job's step cgroups (steps come and go). It returns an
// error wrapping ErrJobGone when the job has no cgroup left on this node.
func (c *cgroups) refresh() error {
	jobDirs, err := slurm.JobCgroups(c.root, c.job.ID, c.job.UID, c.job.NodeName)
	if errors.Is(err, slurm.ErrNoJobCgroup) {
		return fmt.Errorf("%w: %w", ErrJobGone, err)
	}
	if err != nil {
		return err
	}
	dirs, err := StepDirs(jobDirs, c.job.StepID)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %w", ErrJobGone, err)
		}
		return err
	}
	if !equal(dirs, c.dirs) {
		c.dirs = dirs
		if c.onChange != nil {
			c.onChange(dirs)
		}
	}
	return nil
}

// StepDirs lists the step directories (step_*) below each job cgroup
// directory, leaving out step_<ownStep>. Under cgroup v2 a step holds its
// slurmstepd in step_*/slurm beside the tasks in step_*/user: then the
// step's user directory is listed, so that slurmstepd's CPU and I/O never
// count as the job's progress. With ownStep "" (not run as a step) it
// returns jobDirs themselves. A job directory that has vanished is an
// error wrapping os.ErrNotExist.
func StepDirs(jobDirs []string, ownStep string) ([]string, error) {
	if ownStep == "" {
		return append([]string(nil), jobDirs...), nil
	}
	var out []string
	for _, d := range jobDirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), "step_") && e.Name() != "step_"+ownStep {
				step := filepath.Join(d, e.Name())
				if fi, err := os.Stat(filepath.Join(step, "user")); err == nil && fi.IsDir() {
					step = filepath.Join(step, "user")
				}
				out = append(out, step)
			}
		}
	}
	return out, nil
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
