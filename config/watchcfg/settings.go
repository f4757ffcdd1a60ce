// Package watchcfg is the [watch] section of vigil.toml: the hang
// detector's thresholds and what vigil-watch does on a hang. It is a leaf
// package, so that vigil-prolog validates [watch] with the same code
// vigil-watch runs, without importing the watcher.
package watchcfg

import (
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/internal/linerules"
	"github.com/vigil-hpc/vigil/notify"
)

// Section is the config file section vigil-watch reads.
const Section = "watch"

// Settings is the [watch] section of vigil.toml. Precedence: flags, then
// the environment (EnvWindow, within [policy]), then the file, then
// defaults; vigil-watch applies them in that order in one place
// (watcher/loop.Resolve). The keys with a flag tag are vigil-watch's
// flags (Overrides); window and action have an env tag too: the job's
// own choice, read by policy.ForWatcher and bounded by [policy].
type Settings struct {
	// Hang holds the detector's rule and thresholds: window, period,
	// grace, io_bytes, min_coverage, util_stddev, power_stddev_w,
	// busy_power_w, mem_change_mib, high_util, idle_util, cpu_* (see
	// Hang for units and defaults).
	Hang
	// PeriodIsDefault makes a short window shorten the period (at most a
	// sixth of the window, at least 1 s); it is cleared when the file or a
	// flag sets period.
	PeriodIsDefault bool `toml:"-"`
	// Rules are the site's line rules ([[watch.rules]]): what a line of the
	// job's output or of the kernel log means, added to the shipped rules
	// or replacing one of the same name (linerules.Spec; `vigil-watch rules
	// test` shows their effect).
	Rules []linerules.Spec `toml:"rules"`
	// Action is the opt-in automatic action on a hung job: "none" (or its
	// other name "notify": notify only), "cancel", "requeue" or
	// "requeue-exclude" (requeue without the hang's culprit hosts).
	Action string `toml:"action" flag:"action" env:"VIGIL_HANG_ACTION" arg:"action" usage:"automatic action on a hung job: notify (or none: notify only), cancel, requeue, or requeue-exclude (requeue without the hang's culprit hosts)"`
	// MaxRequeues is how many restarts of the job the requeue and
	// requeue-exclude actions allow; the job's restart count includes
	// restarts by anyone.
	MaxRequeues int `toml:"max_requeues" flag:"max-requeues" usage:"most restarts of the job that --action requeue or requeue-exclude allows"`
	// KeepOwnFailures leaves running a hung job whose digest says the
	// trouble is its own (origin "job": a rank that crashed or left, ranks
	// at different places, no device or network evidence) instead of
	// requeueing it: [policy] requeue_own_failures = false; never read
	// from [watch].
	KeepOwnFailures bool `toml:"-"`
	// WebhookURL is the job's user's webhook given to vigil-watch by
	// --webhook-url (the watcher is the user's own process); it receives a
	// JSON POST on a hang and on recovery; "" disables it. Never read from
	// the file: vigil.toml is readable by every user, and a [watch]
	// webhook_url there is refused (ErrSiteWebhook); the admins hear of a
	// job's hangs from vigil-epilog, through [notify] webhook_url in the
	// root-only secrets file. The toml name is the key the flag sets.
	WebhookURL string `toml:"webhook_url,omitempty" flag:"webhook-url" arg:"URL" usage:"POST a JSON notification (Slack-compatible \"text\") to this URL, the job's own webhook (the admins hear of hangs through vigil-epilog)"`
	// JobWebhookURL is the job's own webhook (--vigil-webhook, within
	// [policy] webhooks), posted to as well as WebhookURL; never read
	// from the file.
	JobWebhookURL string `toml:"-"`
	// WebhookTimeout bounds each POST ("10s").
	WebhookTimeout time.Duration `toml:"webhook_timeout"`
	// WebhookAttempts is how many times a failed POST is tried in all.
	WebhookAttempts int `toml:"webhook_attempts"`
	// Mail sends mail to the job's user through Slurm's MailProg.
	Mail bool `toml:"mail" flag:"mail" usage:"mail the job's user through Slurm's MailProg"`
	// MailProg overrides Slurm's MailProg ("" asks scontrol show config,
	// falling back to /usr/bin/mail).
	MailProg string `toml:"mail_prog"`
	// Comment sets the job's comment on a hang and on recovery.
	Comment bool `toml:"comment" flag:"comment" usage:"record the hang in the job's comment (--comment=false to leave it alone)"`
	// ReportDir receives the JSON hang reports; "" means the step's
	// working directory.
	ReportDir string `toml:"report_dir" flag:"report-dir" arg:"dir" usage:"directory for the JSON hang reports (default: the working directory); the log, webhook and mail name them by absolute path"`
	// Record, when set, appends every sample as a trace line to this file
	// (%j: the job id, %N: the node name; a relative path is the job's
	// working directory's), for replay and post-mortems; the --record flag
	// overrides it.
	Record string `toml:"record"`
	// SlurmBinDir is where scontrol and scancel live ("/usr/bin").
	SlurmBinDir string `toml:"slurm_bin_dir"`
	// Port is the base TCP port of the job's watchers' meeting: a job's
	// coordinator listens on the first port of the job's sequence it can
	// bind, in Port to Port+PortSpan-1 (JobPorts). 0 turns the meeting
	// off: each watcher acts for its own node.
	Port int `toml:"port" flag:"port" arg:"port" usage:"base TCP port of the job's watchers' meeting (the job's ports are a sequence in port to port+999 picked by a hash of the job id); 0: each watcher acts alone"`
	// MungeSocket is munged's socket ("" is libmunge's default,
	// /run/munge/munge.socket.2).
	MungeSocket string `toml:"munge_socket" flag:"munge-socket" arg:"path" usage:"munged's socket path (default: slurm.conf's AuthInfo socket=, else libmunge's)"`
	// TakeoverPeriods is how many periods without a word from the
	// coordinator make the next node in order take over.
	TakeoverPeriods int `toml:"takeover_periods"`
}

// PortSpan is how many ports, from Settings.Port, the jobs' meetings use.
const PortSpan = 1000

// DefaultPort is the shipped base port of the watchers' meeting.
const DefaultPort = 29000

// PortTries is how many ports of its sequence a job's meeting tries
// (JobPorts).
const PortTries = 4

// JobPorts is the sequence of job id's meeting ports, the same on every
// node: a hash (FNV-1a) of the whole id, as Slurm gives it, picks the
// first in Port to Port+PortSpan-1, and the next PortTries-1 follow it in
// order, wrapping within the span. Jobs whose ids differ by PortSpan (or
// any amount) share a first port only by the hash's chance. Any user can
// bind a port of 1024 or above first, so the coordinator listens on the
// first it can bind, and the members look for the job's sealed roster on
// them all (watcher/coord). nil when Port is 0 (off).
func (s Settings) JobPorts(id string) []int {
	if s.Port == 0 {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	first := int(h.Sum64() % PortSpan)
	ports := make([]int, PortTries)
	for i := range ports {
		ports[i] = s.Port + (first+i)%PortSpan
	}
	return ports
}

// Default returns the shipped [watch] settings, the one place they live.
func Default() Settings {
	return Settings{
		Hang:            DefaultHang(),
		PeriodIsDefault: true,
		Action:          ActionNone,
		MaxRequeues:     1,
		WebhookTimeout:  10 * time.Second,
		WebhookAttempts: 3,
		Mail:            false,
		Comment:         true,
		SlurmBinDir:     "/usr/bin",
		Port:            DefaultPort,
		TakeoverPeriods: 3,
	}
}

// Overrides is the table of the [watch] keys that vigil-watch's flags set
// and of the job's variables for window and action, read from the tags of
// Settings; the window reads minutes or a duration (ParseWindow).
func Overrides() *config.Overrides { return overrides }

var overrides = config.NewOverrides(Section, Default()).
	WithParser("window", func(s string) (any, error) { return ParseWindow(s) })

// ErrSiteWebhook is wrapped by the error about a [watch] webhook_url in
// the config file.
var ErrSiteWebhook = errors.New("a site-wide webhook in [watch] is no longer read")

// flagOnly are the keys of Settings that only vigil-watch's flags set;
// Load refuses them in the file.
var flagOnly = map[string]bool{"webhook_url": true}

// Load decodes the [watch] section of f over s (which holds the defaults).
// A webhook_url in the file is refused with an error naming the file, line
// and key: vigil-watch runs as the job's user and reads vigil.toml, so any
// user could read the URL, and the watcher posts only to the job's own
// webhooks (--webhook-url, the job's --vigil-webhook).
func (s *Settings) Load(f *config.File) error {
	if f.Has(Section + ".webhook_url") {
		return &config.KeyError{File: f.Name, Line: f.Line(Section + ".webhook_url"), Key: Section + ".webhook_url",
			Err: fmt.Errorf("%w: %w: vigil-watch runs as the job's user and posts only to the job's own webhook (vigil-watch --webhook-url, sbatch --vigil-webhook); "+
				"the admins' webhook for hang digests is [notify] webhook_url in the root-only secrets file ([notify] secrets_file); vigil-epilog forwards each job's hang digest to it: remove webhook_url from [watch]",
				config.ErrInvalid, ErrSiteWebhook)}
	}
	if err := f.Decode(Section, s); err != nil {
		if errors.Is(err, config.ErrUnknownKey) {
			return fmt.Errorf("%w (keys of [%s]: %s)", err, Section, strings.Join(Keys(), ", "))
		}
		return err
	}
	if f.Has(Section + ".period") {
		s.PeriodIsDefault = false
	}
	return nil
}

// LineRules compiles the site's line rules.
func (s Settings) LineRules() (linerules.Set, error) {
	return linerules.Compile(s.Rules, linerules.Kinds)
}

// Final returns s with the derived values filled in: an unset Period is at
// most a sixth of the Window (so that VIGIL_HANG_DETECT_TIME=2 alone gives
// 20 s samples), at least 1 s.
func (s Settings) Final() Settings {
	if s.PeriodIsDefault && s.Window > 0 && s.Period > s.Window/6 {
		s.Period = max(s.Window/6, time.Second)
	}
	return s
}

// Validate checks s; each error names the [watch] key, its line in f (f
// may be nil) and the allowed values. Where a value came from a flag,
// callers rename the key (see config.KeyError).
func (s Settings) Validate(f *config.File) error {
	if f == nil {
		f = config.Empty("vigil-watch")
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, f.Errorf(Section+"."+key, format, args...))
	}
	if s.Window <= 0 {
		bad("window", "%v: must be positive", s.Window)
	}
	if s.Period <= 0 {
		bad("period", "%v: must be positive", s.Period)
	} else if s.Window > 0 && s.Period > s.Window/2 {
		bad("period", "%v: must be at most half the window (%v), or the window holds too few samples", s.Period, s.Window)
	}
	if s.Grace < 0 {
		bad("grace", "%v: must be 0 or more", s.Grace)
	}
	if _, err := ParseAction(s.Action); err != nil {
		bad("action", "%q: want %s", s.Action, ActionList)
	}
	if s.MaxRequeues < 0 {
		bad("max_requeues", "%d: must be 0 or more", s.MaxRequeues)
	}
	if s.WebhookURL != "" {
		if notify.CheckURL(s.WebhookURL) != nil {
			bad("webhook_url", "%q: want an http:// or https:// URL", s.WebhookURL)
		}
	}
	if s.WebhookTimeout <= 0 {
		bad("webhook_timeout", "%v: must be positive", s.WebhookTimeout)
	}
	if s.WebhookAttempts < 1 || s.WebhookAttempts > 10 {
		bad("webhook_attempts", "%d: want 1 to 10", s.WebhookAttempts)
	}
	if s.Port != 0 && (s.Port < 1024 || s.Port+PortSpan-1 > 65535) {
		bad("port", "%d: want 0 (off) or 1024 to %d (a job's ports are in port to port+%d)", s.Port, 65535-PortSpan+1, PortSpan-1)
	}
	if s.TakeoverPeriods < 1 || s.TakeoverPeriods > 100 {
		bad("takeover_periods", "%d: want 1 to 100", s.TakeoverPeriods)
	}
	if _, err := s.LineRules(); err != nil {
		bad("rules", "%v", err)
	}
	if len(errs) == 0 {
		if err := s.Hang.Validate(); err != nil {
			var he *HangError
			if errors.As(err, &he) {
				bad(he.Key, "%s", he.Msg)
			} else {
				errs = append(errs, fmt.Errorf("%s: [%s]: %w", f.Name, Section, err))
			}
		}
	}
	return errors.Join(errs...)
}

// The action names on a hung job. vigil-watch's --action and [watch]
// action, the job's VIGIL_HANG_ACTION, the SPANK option --vigil-hang-action
// and [policy] hang_actions all take the same names.
const (
	// ActionNone notifies only (webhook, mail, comment, report).
	ActionNone = "none"
	// ActionNotify is another name of ActionNone.
	ActionNotify = "notify"
	// ActionCancel cancels the job (scancel).
	ActionCancel = "cancel"
	// ActionRequeue requeues the job (scontrol requeue), at most max_requeues times.
	ActionRequeue = "requeue"
	// ActionRequeueExclude requeues the job without the culprit hosts of
	// the hang's digest (added to the job's ExcNodeList), at most
	// max_requeues times, where the job's partition keeps enough usable
	// nodes for it without them; otherwise it requeues like ActionRequeue.
	ActionRequeueExclude = "requeue-exclude"
)

// ActionList names the accepted actions, for messages.
const ActionList = `"notify" (or "none"), "cancel", "requeue" or "requeue-exclude"`

// ErrBadAction is wrapped by ParseAction's errors.
var ErrBadAction = errors.New("unknown action")

// ParseAction checks an action name and returns the watcher's own name for
// it: "notify" and "" become "none".
func ParseAction(s string) (string, error) {
	switch s {
	case ActionNone, ActionNotify, "":
		return ActionNone, nil
	case ActionCancel, ActionRequeue, ActionRequeueExclude:
		return s, nil
	}
	return "", fmt.Errorf("%w %q: want %s", ErrBadAction, s, ActionList)
}

// Keys returns the keys of the [watch] section, sorted.
func Keys() []string {
	var keys []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("toml"), ",")[0]
			switch {
			case f.Anonymous && tag == "":
				walk(f.Type)
			case tag != "" && tag != "-" && !flagOnly[tag]:
				keys = append(keys, tag)
			}
		}
	}
	walk(reflect.TypeOf(Settings{}))
	sort.Strings(keys)
	return keys
}
