// Package policy bounds what users may ask of vigil per job. Users choose
// with the SPANK plugin's options (--vigil-checks, --vigil-timing,
// --vigil-hang-time, --vigil-hang-action, --vigil-notify, --vigil-webhook;
// see docs/spank.md); the admin
// bounds those choices in the [policy] section of vigil.toml, the one
// source of truth for the plugin on the submit host (`vigil-prolog
// policy-check`), for vigil-prolog and for vigil-watch.
//
// Check refuses a request at submit time with a message for each value
// outside the policy. ApplyProlog and ApplyWatch turn a request into the
// effective settings at run time: a value outside the policy is ignored or
// clamped, with a warning, and never makes the prolog run longer than the
// admin's budget or drain a node on a user's say-so.
package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/config/watchcfg"
)

// Section is the config file section the policy lives in.
const Section = "policy"

// Values of --vigil-timing.
const (
	TimingBefore       = "before"
	TimingAfterRequeue = "after-requeue"
)

// normAction checks an action name and returns the policy's name for it:
// "none" and "notify" are both watchcfg.ActionNotify.
func normAction(a string) (string, error) {
	w, err := watchcfg.ParseAction(a)
	if err != nil || a == "" {
		return "", fmt.Errorf("%q: want %s", a, watchcfg.ActionList)
	}
	if w == watchcfg.ActionNone {
		return watchcfg.ActionNotify, nil
	}
	return w, nil
}

// ChecksNone is the --vigil-checks value that skips the prolog's checks,
// and HangOff the --vigil-hang-time value that opts out of watching.
const (
	ChecksNone = "none"
	HangOff    = "off"
)

// Policy is the [policy] section.
type Policy struct {
	// Checks are the checks users may choose with --vigil-checks; empty
	// means the checks the admin's [prolog] runs ([prolog] checks, else
	// the default suite, less [prolog] skip): a job may choose fewer of
	// them, never others. A check outside them (a performance probe the
	// prolog does not run, the admin's command, a model training, the
	// test-only fault injection) is a user's choice only where this lists it.
	Checks []string `toml:"checks"`
	// AllowSkip lets users skip the prolog's checks (--vigil-checks=none).
	AllowSkip bool `toml:"allow_skip"`
	// Timings are the --vigil-timing values users may choose.
	Timings []string `toml:"timings"`
	// MaxBudget is the longest the prolog may run, in total, for a job
	// that chose its own checks or timing ("10m"); 0 means [prolog] budget,
	// the prolog's own: a job's choice never makes the prolog run longer.
	MaxBudget time.Duration `toml:"max_budget"`
	// HangActions are the --vigil-hang-action values users may choose.
	HangActions []string `toml:"hang_actions"`
	// MinWindow and MaxWindow bound the job's hang window
	// (--vigil-hang-time, VIGIL_HANG_DETECT_TIME): "5m", "24h".
	MinWindow time.Duration `toml:"min_hang_time"`
	MaxWindow time.Duration `toml:"max_hang_time"`
	// AllowWatchOptOut lets users turn the automatic watcher off
	// (--vigil-hang-time=off).
	AllowWatchOptOut bool `toml:"allow_watch_opt_out"`
	// AutoWatch makes the plugin, when plugstack.conf says watch=config,
	// start vigil-watch on every node of every job.
	AutoWatch bool `toml:"auto_watch"`
	// Notify are the channels users may choose with --vigil-notify to be
	// told of a hang or of a node of their job that failed the prolog:
	// "mail" (to the job's user through Slurm's MailProg), "webhook".
	Notify []string `toml:"notify"`
	// Webhooks are the URLs users may give with --vigil-webhook: an entry
	// ending in "/" allows every URL below it (same scheme and host), any
	// other entry that exact URL. Needed when notify lists "webhook".
	Webhooks []string `toml:"webhooks"`
	// RequeueOwnFailures lets the requeue hang actions requeue a job whose
	// digest says the trouble is its own (origin "job"); false leaves
	// such a job running (notified, not requeued): it would fail again on
	// any node.
	RequeueOwnFailures bool `toml:"requeue_own_failures"`
}

// Default returns the shipped policy: the checks the prolog runs (or
// fewer), within the prolog's own budget, no skipping, both
// timings, every hang action, windows from 1 minute to 24 hours, opting
// out of watching allowed, no automatic watching, mail as the only
// notification users may choose, and a hung job requeued by the requeue
// action whoever's the trouble looks like.
func Default() Policy {
	return Policy{
		Timings:            []string{TimingBefore, TimingAfterRequeue},
		HangActions:        []string{watchcfg.ActionNotify, watchcfg.ActionCancel, watchcfg.ActionRequeue, watchcfg.ActionRequeueExclude},
		MinWindow:          time.Minute,
		MaxWindow:          24 * time.Hour,
		AllowWatchOptOut:   true,
		Notify:             []string{NotifyMail},
		RequeueOwnFailures: true,
	}
}

// Registry is what the policy knows of the registered checks. The caller
// passes it in (vigil-prolog has the check registry; vigil-watch, which
// needs none of it, does not link it).
type Registry struct {
	// Names are the registered checks (vigil-prolog --list-checks); empty
	// means unknown: any name passes as known.
	Names []string
	// TestOnly are registered checks that exist for tests (the fault
	// injection): users may choose them only where [policy] checks lists
	// them.
	TestOnly []string
	// Defaults are the registered checks of the default suite: those the
	// prolog runs when [prolog] checks is empty.
	Defaults []string
	// Configured are the checks the admin's [prolog] runs ([prolog]
	// checks, else Defaults, less [prolog] skip; see WithProlog): what
	// users may choose when [policy] checks is empty. nil means not known,
	// and then users may choose only what [policy] checks lists.
	Configured []string
}

// WithProlog returns g with Configured set to the checks of [prolog]
// checks (Defaults when empty) that [prolog] skip does not remove. The
// test-only checks are among them only where [prolog] checks names them.
func (g Registry) WithProlog(checks, skip []string) Registry {
	base := checks
	if len(base) == 0 {
		base = g.Defaults
	}
	out := []string{}
	for _, c := range base {
		if slices.Contains(skip, c) || slices.Contains(out, c) || (len(checks) == 0 && slices.Contains(g.TestOnly, c)) {
			continue
		}
		out = append(out, c)
	}
	g.Configured = out
	return g
}

// known reports whether c is a registered check.
func (g Registry) known(c string) bool {
	return len(g.Names) == 0 || slices.Contains(g.Names, c)
}

// ErrRefused is wrapped by Check's errors: the request is outside the policy.
var ErrRefused = errors.New("refused")

// ErrSyntax is wrapped by errors about a value that is not well formed.
var ErrSyntax = errors.New("bad value")

// Load decodes [policy] from f over the defaults and validates it against
// the registered check names (known). Errors name the key and its line.
func Load(f *config.File, known []string) (Policy, error) {
	p := Default()
	if f == nil {
		return p, nil
	}
	if err := f.Decode(Section, &p); err != nil {
		return Default(), err
	}
	if err := p.Validate(f, known); err != nil {
		return p, err
	}
	for i, a := range p.HangActions {
		p.HangActions[i], _ = normAction(a)
	}
	return p, nil
}

// Validate checks p; errors name the key and, when f has it, the line.
func (p Policy) Validate(f *config.File, known []string) error {
	if f == nil {
		f = config.Empty("policy")
	}
	var errs []error
	for _, c := range p.Checks {
		if len(known) > 0 && !slices.Contains(known, c) {
			errs = append(errs, f.Errorf(Section+".checks", "unknown check %q (known: %s)", c, strings.Join(known, ", ")))
		}
	}
	for _, t := range p.Timings {
		if t != TimingBefore && t != TimingAfterRequeue {
			errs = append(errs, f.Errorf(Section+".timings", "%q: want %q or %q", t, TimingBefore, TimingAfterRequeue))
		}
	}
	for _, a := range p.HangActions {
		if _, err := normAction(a); err != nil {
			errs = append(errs, f.Errorf(Section+".hang_actions", "%v", err))
		}
	}
	if p.MaxBudget < 0 || (p.MaxBudget > 0 && p.MaxBudget < time.Second) {
		errs = append(errs, f.Errorf(Section+".max_budget", "%v: want 0 ([prolog] budget) or at least 1s (write durations as strings: \"10m\")", p.MaxBudget))
	}
	if p.MinWindow < time.Second {
		errs = append(errs, f.Errorf(Section+".min_hang_time", "%v: want at least 1s (write durations as strings: \"5m\")", p.MinWindow))
	}
	if p.MaxWindow < p.MinWindow {
		errs = append(errs, f.Errorf(Section+".max_hang_time", "%v: shorter than min_hang_time %v", p.MaxWindow, p.MinWindow))
	}
	errs = append(errs, p.validateNotify(f)...)
	return errors.Join(errs...)
}

// Request is what a job asked for. Zero fields were not asked for.
type Request struct {
	// Checks are the chosen check names; nil when not chosen.
	Checks []string
	// SkipChecks is --vigil-checks=none.
	SkipChecks bool
	// Timing is "before" or "after-requeue"; "" when not chosen.
	Timing string
	// Window is the chosen hang window; 0 when not chosen.
	Window time.Duration
	// WatchOff is --vigil-hang-time=off: the job opts out of watching.
	WatchOff bool
	// HangAction is "notify", "cancel", "requeue" or "requeue-exclude";
	// "" when not chosen.
	HangAction string
	// Notify are the chosen channels (--vigil-notify); nil when not
	// chosen, empty for "none".
	Notify []string
	// Webhook is the job's webhook URL (--vigil-webhook); "" when not given.
	Webhook string
}

// Empty reports whether the job asked for nothing.
func (r Request) Empty() bool {
	return r.Checks == nil && !r.SkipChecks && r.Timing == "" && r.Window == 0 && !r.WatchOff && r.HangAction == "" &&
		r.Notify == nil && r.Webhook == ""
}

// Option names, as on the sbatch command line without "--vigil-".
const (
	OptChecks     = "checks"
	OptTiming     = "timing"
	OptHangTime   = "hang-time"
	OptHangAction = "hang-action"
)

// Options lists the option names in the order they are documented.
var Options = []string{OptChecks, OptTiming, OptHangTime, OptHangAction, OptNotify, OptWebhook}

// Set parses one option's value into r. Syntax errors wrap ErrSyntax.
func (r *Request) Set(option, value string) error {
	v := strings.TrimSpace(value)
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: --vigil-%s=%s: %s", ErrSyntax, option, value, fmt.Sprintf(format, a...))
	}
	switch option {
	case OptChecks:
		if v == ChecksNone {
			r.SkipChecks, r.Checks = true, nil
			return nil
		}
		var names []string
		for _, n := range strings.Split(v, ",") {
			n = strings.TrimSpace(n)
			if n == "" {
				return bad("empty check name")
			}
			if n == ChecksNone {
				return bad("%q cannot be combined with check names", ChecksNone)
			}
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		r.Checks, r.SkipChecks = names, false
	case OptTiming:
		if v != TimingBefore && v != TimingAfterRequeue {
			return bad("want %q or %q", TimingBefore, TimingAfterRequeue)
		}
		r.Timing = v
	case OptHangTime:
		if v == HangOff {
			r.WatchOff, r.Window = true, 0
			return nil
		}
		d, err := watchcfg.ParseWindow(v)
		switch {
		case errors.Is(err, watchcfg.ErrWindowNotPositive):
			return bad("must be positive")
		case err != nil:
			return bad("want minutes (\"30\"), a duration (\"90s\", \"2h\") or %q", HangOff)
		}
		r.Window, r.WatchOff = d, false
	case OptHangAction:
		a, err := normAction(v)
		if err != nil {
			return bad("want %s", watchcfg.ActionList)
		}
		r.HangAction = a
	case OptNotify:
		return r.setNotify(v, bad)
	case OptWebhook:
		return r.setWebhook(v, bad)
	default:
		return fmt.Errorf("%w: unknown option --vigil-%s", ErrSyntax, option)
	}
	return nil
}

// Environment variables. The plugin sets the Spank ones with
// spank_job_control_setenv; Slurm adds the SPANK_ prefix, so vigil-prolog
// and vigil-epilog see SPANK_VIGIL_CHECKS and so on. The job's steps, and
// the watcher the plugin starts, get watchcfg.EnvWindow and EnvHangAction.
const (
	EnvSpankChecks     = "SPANK_VIGIL_CHECKS"
	EnvSpankTiming     = "SPANK_VIGIL_TIMING"
	EnvSpankHangTime   = "SPANK_VIGIL_HANG_TIME"
	EnvSpankHangAction = "SPANK_VIGIL_HANG_ACTION"
	// EnvHangAction is the job's --vigil-hang-action.
	EnvHangAction = "VIGIL_HANG_ACTION"
	// EnvSpankWatch is set on a watcher the plugin started: "auto"
	// (plugstack.conf watch=auto) or "config" (watch=config: watch only
	// when [policy] auto_watch is true).
	EnvSpankWatch = "VIGIL_SPANK_WATCH"
)

// FromSpankEnv reads the job's request from the SPANK_VIGIL_* variables of
// the prolog's environment. Malformed values are returned as errors and
// left out of the request.
func FromSpankEnv(lookup func(string) (string, bool)) (Request, []error) {
	return fromEnv(lookup, map[string]string{
		OptChecks: EnvSpankChecks, OptTiming: EnvSpankTiming,
		OptHangTime: EnvSpankHangTime, OptHangAction: EnvSpankHangAction,
		OptNotify: EnvSpankNotify, OptWebhook: EnvSpankWebhook,
	})
}

func fromEnv(lookup func(string) (string, bool), vars map[string]string) (Request, []error) {
	var r Request
	var errs []error
	for _, opt := range Options {
		name, ok := vars[opt]
		if !ok {
			continue
		}
		v, ok := lookup(name)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		if err := r.Set(opt, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	return r, errs
}

// Check returns one error (wrapping ErrRefused) for each value of r that
// the policy does not allow: what the plugin refuses at submit time.
func (p Policy) Check(r Request, reg Registry) []error {
	var errs []error
	refuse := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, a...)))
	}
	if r.SkipChecks && !p.AllowSkip {
		refuse("skipping the checks is not allowed on this cluster ([policy] allow_skip = false)")
	}
	for _, c := range r.Checks {
		switch {
		case !reg.known(c):
			refuse("unknown check %q (checks users may choose: %s)", c, list(p.allowed(reg)))
		case !p.mayChoose(c, reg):
			refuse("check %q is not one users may choose on this cluster (allowed: %s%s)", c, list(p.allowed(reg)), p.allowedFrom())
		}
	}
	if r.Timing != "" && !slices.Contains(p.Timings, r.Timing) {
		refuse("timing %s is not allowed on this cluster (allowed: %s)", r.Timing, list(p.Timings))
	}
	if r.WatchOff && !p.AllowWatchOptOut {
		refuse("opting out of hang detection is not allowed on this cluster ([policy] allow_watch_opt_out = false)")
	}
	if r.Window > 0 && r.Window < p.MinWindow {
		refuse("hang time %v is shorter than the shortest allowed, %v ([policy] min_hang_time)", r.Window, p.MinWindow)
	}
	if r.Window > p.MaxWindow {
		refuse("hang time %v is longer than the longest allowed, %v ([policy] max_hang_time)", r.Window, p.MaxWindow)
	}
	if r.HangAction != "" && !slices.Contains(p.HangActions, r.HangAction) {
		refuse("hang action %s is not allowed on this cluster (allowed: %s)", r.HangAction, list(p.HangActions))
	}
	p.checkNotify(r, refuse)
	return errs
}

// allowed lists the checks users may choose.
func (p Policy) allowed(reg Registry) []string {
	if len(p.Checks) > 0 {
		return p.Checks
	}
	return reg.Configured
}

// allowedFrom says, after the list of checks users may choose, where it
// comes from when [policy] checks does not list them.
func (p Policy) allowedFrom() string {
	if len(p.Checks) > 0 {
		return ""
	}
	return ": the checks the prolog runs; others only where [policy] checks lists them"
}

// mayChoose reports whether users may name check c: one of [policy] checks
// when that is set, else one of the checks the admin's [prolog] runs.
func (p Policy) mayChoose(c string, reg Registry) bool {
	if len(p.Checks) > 0 {
		return slices.Contains(p.Checks, c)
	}
	return slices.Contains(reg.Configured, c)
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Prolog is what vigil-prolog runs for a job after the policy.
type Prolog struct {
	// Skip is set when the job skips the checks and the policy allows it.
	Skip bool
	// Checks replaces [prolog] checks when not nil.
	Checks []string
	// Timing replaces [prolog] timing when not "".
	Timing string
	// Budget is the run's budget: [prolog] budget, capped by max_budget
	// for a job that chose its checks or timing.
	Budget time.Duration
	// Warnings say what was ignored or changed, one sentence each.
	Warnings []string
	// Dropped are the checks the job asked for that do not run, each with
	// the reason.
	Dropped []Dropped
	// Notify is how the job's user is told of a node that failed the
	// prolog (--vigil-notify, --vigil-webhook, within the policy).
	Notify Notify
}

// Dropped is a check the job asked for (--vigil-checks) that does not run.
type Dropped struct {
	// Check is the name the job gave.
	Check string
	// Reason says why it does not run ("unknown check").
	Reason string
}

// ApplyProlog returns the prolog's effective settings for request r, given
// the registered checks and the configured budget. Values outside
// the policy are ignored with a warning; the budget never grows.
func (p Policy) ApplyProlog(r Request, reg Registry, budget time.Duration) Prolog {
	out := Prolog{Budget: budget, Notify: p.ApplyNotify(r)}
	out.Warnings = append(out.Warnings, out.Notify.Warnings...)
	warn := func(format string, a ...any) { out.Warnings = append(out.Warnings, fmt.Sprintf(format, a...)) }
	if r.SkipChecks {
		if p.AllowSkip {
			out.Skip = true
		} else {
			warn("the job asked to skip the checks (--vigil-checks=none); not allowed ([policy] allow_skip = false): running the configured checks")
		}
	}
	if r.Checks != nil && !out.Skip {
		var ok, dropped []string
		for _, c := range r.Checks {
			if reg.known(c) && p.mayChoose(c, reg) {
				ok = append(ok, c)
			} else {
				dropped = append(dropped, c)
				why := "not one users may choose ([policy] checks)"
				if len(p.Checks) == 0 {
					why = "not one the prolog runs ([prolog] checks; others need [policy] checks)"
				}
				if !reg.known(c) {
					why = "unknown check"
				}
				out.Dropped = append(out.Dropped, Dropped{Check: c, Reason: why})
			}
		}
		if len(dropped) > 0 {
			warn("ignoring checks the job asked for that are unknown or not allowed: %s", strings.Join(dropped, ", "))
		}
		if len(ok) > 0 {
			out.Checks = ok
		} else {
			warn("none of the checks the job asked for may run: running the configured checks")
		}
	}
	if r.Timing != "" {
		if slices.Contains(p.Timings, r.Timing) {
			out.Timing = r.Timing
		} else {
			warn("ignoring --vigil-timing=%s: not allowed (allowed: %s)", r.Timing, list(p.Timings))
		}
	}
	if p.MaxBudget > 0 && (out.Checks != nil || out.Timing != "") && budget > p.MaxBudget {
		out.Budget = p.MaxBudget
		warn("budget capped at %v for a job that chose its checks ([policy] max_budget)", p.MaxBudget)
	}
	return out
}

// Watch is what vigil-watch does for a job after the policy.
type Watch struct {
	// Off is set when the job opted out of watching and the policy allows it.
	Off bool
	// Window is the hang window.
	Window time.Duration
	// Action is vigil-watch's action: "none" (notify only), "cancel",
	// "requeue" or "requeue-exclude".
	Action string
	// Warnings say what was ignored or clamped, one sentence each.
	Warnings []string
}

// WatchAction maps a --vigil-hang-action value to vigil-watch's action.
func WatchAction(a string) string {
	if a == watchcfg.ActionNotify {
		return "none"
	}
	return a
}

// ApplyWatch returns the watcher's effective window and action for request
// r, given the site's (window, action) from [watch]. A window outside
// [min_hang_time, max_hang_time] is clamped and an action not allowed is
// ignored, each with a warning.
func (p Policy) ApplyWatch(r Request, window time.Duration, action string) Watch {
	out := Watch{Window: window, Action: action}
	warn := func(format string, a ...any) { out.Warnings = append(out.Warnings, fmt.Sprintf(format, a...)) }
	if r.WatchOff {
		if p.AllowWatchOptOut {
			out.Off = true
		} else {
			warn("the job asked not to be watched (--vigil-hang-time=off); not allowed ([policy] allow_watch_opt_out = false): watching with the site's window %v", window)
		}
	}
	if r.Window > 0 {
		w := r.Window
		switch {
		case w < p.MinWindow:
			warn("hang time %v raised to the shortest allowed, %v ([policy] min_hang_time)", w, p.MinWindow)
			w = p.MinWindow
		case w > p.MaxWindow:
			warn("hang time %v lowered to the longest allowed, %v ([policy] max_hang_time)", w, p.MaxWindow)
			w = p.MaxWindow
		}
		out.Window = w
	}
	if r.HangAction != "" {
		if slices.Contains(p.HangActions, r.HangAction) {
			out.Action = WatchAction(r.HangAction)
		} else {
			warn("ignoring --vigil-hang-action=%s: not allowed (allowed: %s); action stays %q", r.HangAction, list(p.HangActions), action)
		}
	}
	return out
}
