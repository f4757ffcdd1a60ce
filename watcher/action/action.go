// Package action carries out what vigil-watch does when the detector calls a
// node hung: a log line, a report file, the job's comment, a webhook, mail to
// the job's user and, opt-in only, scancel or scontrol requeue.
//
// Every action runs once per hang episode: a second "hung" event for a host
// that is already hung does nothing until a "recovered" event ends the
// episode. One failing action never stops the others; their errors are
// joined.
package action

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/notify"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

// Control is the opt-in automatic action on the job itself.
type Control string

// The automatic actions on a hung job (the names of watchcfg's actions).
const (
	ControlNone    Control = watchcfg.ActionNone    // notify only (the default; also spelt "notify")
	ControlCancel  Control = watchcfg.ActionCancel  // scancel the job
	ControlRequeue Control = watchcfg.ActionRequeue // scontrol requeue the job, at most MaxRequeues times
	// ControlRequeueExclude requeues the job without the hang's culprits
	// (requeuehold, ExcNodeList, release), at most MaxRequeues times, where
	// enough usable nodes are left; otherwise it requeues it as it is.
	ControlRequeueExclude Control = watchcfg.ActionRequeueExclude
)

// ParseControl checks an action name from the config or a flag: "none" or
// "notify" (both ControlNone), "cancel", "requeue" or "requeue-exclude";
// "" is ControlNone.
func ParseControl(s string) (Control, error) {
	c, err := watchcfg.ParseAction(s)
	if err != nil {
		return "", fmt.Errorf("%w: %q (want %s)", ErrBadControl, s, watchcfg.ActionList)
	}
	return Control(c), nil
}

// ErrBadControl is returned for an unknown action name.
var ErrBadControl = errors.New("action: unknown action")

// Slurm is the part of slurm.Client the actions use.
type Slurm interface {
	Job(ctx context.Context, id string) (slurm.JobInfo, error)
	SetJobComment(ctx context.Context, id, comment string) error
	Requeue(ctx context.Context, id string, hold bool) error
	Cancel(ctx context.Context, id string) error
	// Nodes, SetJobExcludedNodes and Release serve requeue-exclude.
	Nodes(ctx context.Context) ([]slurm.Node, error)
	SetJobExcludedNodes(ctx context.Context, id string, nodes []string) error
	Release(ctx context.Context, id string) error
}

// Config says what to do on a hang and for which job.
type Config struct {
	Job  string // Slurm job id
	User string // the job's user name, the mail recipient
	Host string // this node, for the log and the report

	// Window is the detection window; a hang started Window before the
	// hung event when the event's evidence does not say otherwise.
	Window time.Duration

	// ReportDir is where the JSON report goes; "" means the current
	// directory (the job's working directory in a job step).
	ReportDir string

	// WebhookURL is the job's user's webhook (vigil-watch --webhook-url):
	// it receives a POST with a JSON body; "" disables it. No site-wide
	// webhook is ever set here: the admins' is root's ([notify]).
	WebhookURL string
	// JobWebhookURL is the job's own webhook (--vigil-webhook), posted to
	// as well; "" for none, and once only when it is WebhookURL.
	JobWebhookURL string
	// WebhookTimeout bounds each POST; 0 means 10 s.
	WebhookTimeout time.Duration
	// WebhookAttempts is how many times a failed POST is tried in all; 0 means 3.
	WebhookAttempts int

	// Mail sends mail to User through MailProg when true.
	Mail bool
	// MailProg is Slurm's MailProg; "" means notify.DefaultMailProg.
	MailProg string
	// MailTimeout bounds MailProg; 0 means 30 s.
	MailTimeout time.Duration

	// Comment updates the job's comment when true. The comment also tells
	// the job's other nodes that this hang episode has been announced.
	Comment bool
	// Stagger is how long this node waits, on a hang, before it reads the
	// job's comment: a different time on each node of the job, so that in a
	// hang of all nodes at once the first node's note is there when the
	// others look, and only it notifies.
	Stagger time.Duration

	// Control is the automatic action on the job; "" means ControlNone.
	Control Control
	// MaxRequeues is how many restarts of the job (whoever caused them) the
	// requeue and requeue-exclude actions allow; past it the job is left
	// running.
	MaxRequeues int
	// RestartCount is the job's restart count from its environment
	// (SLURM_RESTART_COUNT); the larger of it and scontrol's Restarts counts.
	RestartCount int
	// KeepOwnFailures leaves running, notified but not requeued, a hung
	// job whose digest says the trouble is its own (digest.OriginJob):
	// [policy] requeue_own_failures = false.
	KeepOwnFailures bool

	// DryRun acts on nothing and logs what it would do instead.
	DryRun bool

	// Quiet, when it returns true, leaves a node's hang and recovery to
	// the job's coordinator, which announces the job's digest: this node
	// logs them only (no report, comment, webhook, mail or action). Nil is
	// never quiet (a lone watcher).
	Quiet func() bool
}

// Actor acts on detector events. The zero value is not usable: set Config,
// Log and, for the actions that need them, Slurm and Mailer.
type Actor struct {
	Config
	Slurm  Slurm              // nil: no comment, no cancel or requeue
	Mailer notify.Runner      // nil: the exec runner
	HTTP   *http.Client       // nil: a client without timeout (each POST has its own)
	Log    logrus.FieldLogger // nil: the standard logger
	// Pages gives what each hang report's HTML page is drawn from; nil
	// writes reports without a page.
	Pages PageSource
	// Sleep waits between webhook attempts; nil waits in real time.
	Sleep func(ctx context.Context, d time.Duration) error
	// CommentSleep waits before the job's comment is read back after a
	// write (slurm.CommentUpdate), to find another node's note; nil
	// waits in real time.
	CommentSleep func(ctx context.Context, d time.Duration) error

	hung map[string]*episode // host -> its open hang episode
	// jobHang is set while a hang digest this watcher announced before
	// any host's window verdict (detected by the job's pulse or strong
	// evidence) is open: the node's own hung event then only logs.
	jobHang bool
}

// episode is one host's hang, from hung to recovered.
type episode struct {
	since    time.Time
	notified bool // this watcher sent the webhook and mail (not another node)
}

// Handle acts on one event. It returns the joined errors of the actions that
// failed; the others still ran.
func (a *Actor) Handle(ctx context.Context, ev hang.Event) error {
	if a.hung == nil {
		a.hung = map[string]*episode{}
	}
	log := a.log().WithFields(logrus.Fields{"node": ev.Host, "job": a.jobID(ev), "event": ev.Event, "reason": ev.Reason})
	switch ev.Event {
	case hang.EventSuspect:
		log.WithField("evidence", ev.Evidence).Warn(fmt.Sprintf("vigil: job %s suspect on %s: no I/O progress for the whole window; watching its resource usage", a.jobID(ev), ev.Host))
		return nil
	case hang.EventHung:
		if ep, open := a.hung[ev.Host]; open {
			log.WithField("since", ep.since.UTC().Format(time.RFC3339)).Debug("hang episode already reported")
			return nil
		}
		ep := &episode{since: Since(ev, a.Window)}
		a.hung[ev.Host] = ep
		return a.onHung(ctx, log, ev, ep)
	case hang.EventRecovered:
		ep, open := a.hung[ev.Host]
		if !open {
			log.Info("vigil: job made progress again on this node")
			return nil
		}
		delete(a.hung, ev.Host)
		return a.onRecovered(ctx, log, ev, ep)
	}
	log.Warn("unknown event ignored")
	return nil
}

// Hung reports the hosts whose hang episode is open, sorted.
func (a *Actor) Hung() []string {
	hosts := make([]string, 0, len(a.hung))
	for h := range a.hung {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	return hosts
}

func (a *Actor) onHung(ctx context.Context, log logrus.FieldLogger, ev hang.Event, ep *episode) error {
	since := ep.since
	culprits := Culprits(ev)
	log.WithFields(logrus.Fields{
		"since":    since.UTC().Format(time.RFC3339),
		"culprits": strings.Join(culprits, ","),
		"evidence": ev.Evidence,
	}).Error(fmt.Sprintf("vigil: job %s HUNG on %s since %s: %s", a.jobID(ev), ev.Host, since.UTC().Format(time.RFC3339), message(ev)))

	if a.quiet() {
		log.Info("the job's coordinator announces this hang with the job's digest; this node only logs it")
		return nil
	}
	if a.jobHang {
		log.Info("this hang was announced with the job's digest already; this node only logs it")
		return nil
	}
	var errs []error
	p := a.planControl(ctx, log, ev, evidenceCulprits(ev), "")
	rep := a.newReport(ev, since, culprits)
	rep.Actions = a.plannedActions(false, &p)
	rep.Excluded = p.exclude
	if err := a.writeReport(log, &rep); err != nil {
		errs = append(errs, err)
	}

	notify := true
	if a.Comment {
		if a.Stagger > 0 && !a.DryRun {
			if err := a.sleep(ctx, a.Stagger); err != nil {
				return err
			}
		}
		dup, err := a.commentHung(ctx, log, ev, since)
		if err != nil {
			errs = append(errs, err)
		}
		notify = !dup
	}
	if notify {
		ep.notified = true
		if err := a.webhook(ctx, log, webhookBody(rep)); err != nil {
			errs = append(errs, err)
		}
		if err := a.mail(ctx, log, rep); err != nil {
			errs = append(errs, err)
		}
	} else {
		log.Info("another node of this job already reported this hang episode; no webhook or mail from this node")
	}
	if err := a.control(ctx, log, ev, p); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (a *Actor) onRecovered(ctx context.Context, log logrus.FieldLogger, ev hang.Event, ep *episode) error {
	since := ep.since
	log.WithField("since", since.UTC().Format(time.RFC3339)).Warn(fmt.Sprintf("vigil: job %s recovered on %s (hung since %s)", a.jobID(ev), ev.Host, since.UTC().Format(time.RFC3339)))
	if a.quiet() {
		return nil
	}
	var errs []error
	if a.Comment {
		if err := a.commentRecovered(ctx, log, ev, since); err != nil {
			errs = append(errs, err)
		}
	}
	if ep.notified { // the node that announced the hang announces its end
		rep := a.newReport(ev, since, []string{ev.Host})
		if err := a.webhook(ctx, log, webhookBody(rep)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// control carries out the hang action's plan p (planControl).
func (a *Actor) control(ctx context.Context, log logrus.FieldLogger, ev hang.Event, p plan) error {
	c := a.Control
	if c == "" || c == ControlNone {
		return nil
	}
	job := a.jobID(ev)
	if a.Slurm == nil {
		return fmt.Errorf("action %s: no Slurm client", c)
	}
	switch c {
	case ControlCancel, ControlRequeue, ControlRequeueExclude:
	default:
		return fmt.Errorf("%w: %q", ErrBadControl, c)
	}
	fields := logrus.Fields{"restarts": p.restarts, "max_requeues": a.MaxRequeues}
	switch p.do {
	case ControlNone:
		if p.notRunning {
			log.WithFields(fields).Warn(fmt.Sprintf("not requeueing the hung job (action = %s): %s", c, p.why))
			return nil
		}
		log.WithFields(fields).Warn(fmt.Sprintf("the hung job is left running (action = %s): %s", c, p.why))
		return nil
	case ControlCancel:
		if a.DryRun {
			log.Warn("dry run: would scancel the job")
			return nil
		}
		log.Warn("cancelling the hung job (action = cancel)")
		if err := a.Slurm.Cancel(ctx, job); err != nil {
			return fmt.Errorf("cancel job %s: %w", job, err)
		}
		return nil
	case ControlRequeue:
		if p.why != "" {
			fields["why"] = p.why
		}
		if a.DryRun {
			log.WithFields(fields).Warn("dry run: would scontrol requeue the job")
			return nil
		}
		if c == ControlRequeueExclude {
			log.WithFields(fields).Warn(fmt.Sprintf("requeueing the hung job as it is (action = requeue-exclude): %s", p.why))
		} else {
			log.WithFields(fields).Warn("requeueing the hung job (action = requeue)")
		}
		if err := a.Slurm.Requeue(ctx, job, false); err != nil {
			return fmt.Errorf("requeue job %s: %w", job, err)
		}
		return nil
	case ControlRequeueExclude:
		return a.requeueExclude(ctx, log, job, p)
	}
	return fmt.Errorf("%w: %q", ErrBadControl, p.do)
}

func (a *Actor) quiet() bool { return a.Quiet != nil && a.Quiet() }

func (a *Actor) log() logrus.FieldLogger {
	if a.Log == nil {
		return logrus.StandardLogger()
	}
	return a.Log
}

func (a *Actor) jobID(ev hang.Event) string {
	if a.Job != "" {
		return a.Job
	}
	return ev.Job
}

// message is the event's text for people: its Message, else its Reason.
func message(ev hang.Event) string {
	if ev.Message != "" {
		return ev.Reason + ": " + ev.Message
	}
	return ev.Reason
}

// Since is when the hang began: the event's Since, or its evidence "since"
// when it carries one (RFC 3339 text or a time.Time), else window before
// the event.
func Since(ev hang.Event, window time.Duration) time.Time {
	if !ev.Since.IsZero() {
		return ev.Since
	}
	switch v := ev.Evidence["since"].(type) {
	case time.Time:
		return v
	case string:
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t
		}
	}
	return ev.Time.Add(-window)
}

// Culprits names the hosts a hung event blames: the evidence's "culprits"
// (digest.Culprit values, as the multi-host detector gives, or host names)
// when present, else the event's own host.
func Culprits(ev hang.Event) []string {
	var out []string
	switch v := ev.Evidence["culprits"].(type) {
	case []digest.Culprit:
		for _, c := range v {
			out = append(out, c.Host)
		}
	case []string:
		out = append(out, v...)
	case []any: // after a JSON round trip
		for _, h := range v {
			switch c := h.(type) {
			case string:
				out = append(out, c)
			case map[string]any:
				if s, ok := c["host"].(string); ok {
					out = append(out, s)
				}
			}
		}
	case string:
		if v != "" {
			out = strings.Split(v, ",")
		}
	}
	if len(out) == 0 && ev.Host != "" {
		out = []string{ev.Host}
	}
	return out
}
