package policy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/config/watchcfg"
)

// ForProlog is ForProlog over p, a [policy] already loaded and valid, as
// vigil-prolog's one load of the config gives it.
func (p Policy) ForProlog(lookup func(string) (string, bool), reg Registry, budget time.Duration) Prolog {
	r, errs := FromSpankEnv(lookup)
	warns := ignoring(errs)
	if r.Empty() {
		return Prolog{Budget: budget, Warnings: warns}
	}
	out := p.ApplyProlog(r, reg, budget)
	out.Warnings = append(warns, out.Warnings...)
	return out
}

// ignoring words the errors about the job's malformed SPANK_VIGIL_*
// values as warnings.
func ignoring(errs []error) []string {
	var warns []string
	for _, e := range errs {
		warns = append(warns, fmt.Sprintf("ignoring %v", e))
	}
	return warns
}

// Watcher is the policy as a running vigil-watch sees it.
type Watcher struct {
	// Policy is the [policy] section.
	Policy Policy
	// Request holds the job's hang options from the environment
	// (VIGIL_HANG_DETECT_TIME, VIGIL_HANG_ACTION, VIGIL_NOTIFY,
	// VIGIL_WEBHOOK_URL): Window, WatchOff, HangAction, Notify and Webhook.
	Request Request
	// Started is VIGIL_SPANK_WATCH: "auto" or "config" when the SPANK
	// plugin started this watcher, "" when the job started it.
	Started string
	// Env holds the job's [watch] variables as set (window and action,
	// by key), for errors that name them.
	Env config.Values
}

// ForWatcher reads the [policy] of f and the job's hang options from the
// environment: the window (watchcfg.EnvWindow, or "off") and the action
// (EnvHangAction), the variables of [watch] window and action in
// watchcfg.Overrides, and the notification choice (EnvNotify,
// EnvWebhookURL). They are read here and nowhere else. An invalid [policy]
// is an error and a nil Watcher. A malformed variable is an error too,
// worded as every bad override is (config.OverrideError), with the Watcher
// of what could be read: its Skip still holds (vigil-watch exits 2 for bad
// environment or config).
func ForWatcher(f *config.File, lookup func(string) (string, bool)) (*Watcher, error) {
	p, err := Load(f, nil)
	if err != nil {
		return nil, err
	}
	w := &Watcher{Policy: p, Env: watchcfg.Overrides().Env(lookup)}
	w.Started, _ = lookup(EnvSpankWatch)
	var errs []error
	if v, ok := w.Env["window"]; ok {
		if strings.TrimSpace(v) == HangOff {
			w.Request.WatchOff = true
		} else if d, err := watchcfg.ParseWindow(v); err != nil {
			errs = append(errs, config.BadOverride(config.FromEnv, watchcfg.EnvWindow, v, err))
		} else {
			w.Request.Window = d
		}
	}
	get := func(name string) string {
		if v, ok := lookup(name); ok {
			return v
		}
		return ""
	}
	opts := []struct{ opt, name, value string }{
		{OptHangAction, EnvHangAction, w.Env["action"]},
		{OptNotify, EnvNotify, get(EnvNotify)},
		{OptWebhook, EnvWebhookURL, get(EnvWebhookURL)},
	}
	for _, o := range opts {
		if strings.TrimSpace(o.value) == "" {
			continue
		}
		if err := w.Request.Set(o.opt, o.value); err != nil {
			errs = append(errs, config.BadOverride(config.FromEnv, o.name, o.value, err))
		}
	}
	return w, errors.Join(errs...)
}

// Skip says why this watcher should not watch at all, "" when it should:
// the plugin started it with watch=config and [policy] auto_watch is
// false, or the job opted out with --vigil-hang-time=off and the policy
// allows that.
func (w *Watcher) Skip() string {
	if w.Started == "config" && !w.Policy.AutoWatch {
		return "automatic watching is off on this cluster ([policy] auto_watch = false)"
	}
	if w.Request.WatchOff && w.Policy.AllowWatchOptOut {
		return "the job opted out of hang detection (--vigil-hang-time=off)"
	}
	return ""
}

// Apply returns the window and action for the job: the site's window and
// action (from [watch]) with the job's choices applied within the policy.
// Flags given to vigil-watch by hand still override the result.
func (w *Watcher) Apply(window time.Duration, action string) Watch {
	return w.Policy.ApplyWatch(w.Request, window, action)
}

// Notify returns how the job's user is told of a hang: the job's
// VIGIL_NOTIFY and VIGIL_WEBHOOK_URL within the policy. The job's steps
// can set these variables to anything, so nothing outside the policy is
// kept.
func (w *Watcher) Notify() Notify {
	return w.Policy.ApplyNotify(w.Request)
}
