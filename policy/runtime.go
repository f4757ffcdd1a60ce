package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/config"
)

// ForProlog returns what vigil-prolog runs for the job whose SPANK_VIGIL_*
// variables lookup reads: the [policy] of f applied to the job's request,
// given the registered checks (known) and the configured [prolog] budget.
// It never fails: a malformed value, or an invalid [policy] section, makes
// the job's choices ignored with a warning, and the configured checks run.
func ForProlog(f *config.File, lookup func(string) (string, bool), known []string, budget time.Duration) Prolog {
	r, errs := FromSpankEnv(lookup)
	var warns []string
	for _, e := range errs {
		warns = append(warns, fmt.Sprintf("ignoring %v", e))
	}
	if r.Empty() {
		return Prolog{Budget: budget, Warnings: warns}
	}
	p, err := Load(f, known)
	if err != nil {
		return Prolog{Budget: budget, Warnings: append(warns,
			fmt.Sprintf("the job's --vigil-* choices are ignored: [policy] is invalid: %v", err))}
	}
	out := p.ApplyProlog(r, known, budget)
	out.Warnings = append(warns, out.Warnings...)
	return out
}

// Watcher is the policy as a running vigil-watch sees it.
type Watcher struct {
	// Policy is the [policy] section.
	Policy Policy
	// Request holds the job's hang options from the environment
	// (VIGIL_HANG_DETECT_TIME, VIGIL_HANG_ACTION).
	Request Request
	// Started is VIGIL_SPANK_WATCH: "auto" or "config" when the SPANK
	// plugin started this watcher, "" when the job started it.
	Started string
}

// ForWatcher reads the [policy] of f and the job's hang options from the
// environment. A malformed VIGIL_HANG_ACTION, or an invalid [policy], is
// an error (vigil-watch exits 2 for bad environment or config). A
// malformed VIGIL_HANG_DETECT_TIME is left to vigil-watch's own reading of
// the variable, which reports it.
func ForWatcher(f *config.File, lookup func(string) (string, bool)) (*Watcher, error) {
	p, err := Load(f, nil)
	if err != nil {
		return nil, err
	}
	var r Request
	if v, ok := lookup(EnvHangTime); ok && strings.TrimSpace(v) != "" {
		_ = r.Set(OptHangTime, v) // a bad value stays visible to vigil-watch (see Lookup)
	}
	if v, ok := lookup(EnvHangAction); ok && strings.TrimSpace(v) != "" {
		if err := r.Set(OptHangAction, v); err != nil {
			return nil, fmt.Errorf("%s: %w", EnvHangAction, err)
		}
	}
	started, _ := lookup(EnvSpankWatch)
	return &Watcher{Policy: p, Request: r, Started: started}, nil
}

// Skip says why this watcher should not watch at all, "" when it should:
// the plugin started it with watch=config and [policy] auto_watch is
// false, or the job opted out with --vigil-hang-time=off and the policy
// allows that.
func (w *Watcher) Skip() string {
	if w.Started == "config" && !w.Policy.AutoWatch {
		return "automatic watching is off on this cluster ([policy] auto_watch = false)"
	}
	if w.Request.HangOff && w.Policy.AllowWatchOptOut {
		return "the job opted out of hang detection (--vigil-hang-time=off)"
	}
	return ""
}

// Lookup returns lookup without VIGIL_HANG_DETECT_TIME when the job's
// window was read: it is applied by Apply, within the policy, instead.
func (w *Watcher) Lookup(lookup func(string) (string, bool)) func(string) (string, bool) {
	read := w.Request.HangTime > 0 || w.Request.HangOff
	return func(name string) (string, bool) {
		if name == EnvHangTime && read {
			return "", false
		}
		return lookup(name)
	}
}

// Apply returns the window and action for the job: the site's window and
// action (from [watch]) with the job's choices applied within the policy.
// Flags given to vigil-watch by hand still override the result.
func (w *Watcher) Apply(window time.Duration, action string) Watch {
	return w.Policy.ApplyWatch(w.Request, window, action)
}
