package loop

import (
	"errors"
	"time"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/policy"
)

// Section is the config file section vigil-watch reads.
const Section = watchcfg.Section

// Settings is the [watch] section of vigil.toml; it lives in the leaf
// package watchcfg so that vigil-prolog validates it with the same code.
type Settings = watchcfg.Settings

// DefaultSettings returns the shipped [watch] settings.
func DefaultSettings() Settings { return watchcfg.Default() }

// Sources are where vigil-watch's settings come from.
type Sources struct {
	// File is the config file: its [watch] and [policy] sections; nil: none.
	File *config.File
	// Lookup reads the job's environment: VIGIL_HANG_DETECT_TIME,
	// VIGIL_HANG_ACTION and VIGIL_SPANK_WATCH. nil reads neither the
	// environment nor the policy, as replay does.
	Lookup func(string) (string, bool)
	// Flags are the [watch] values given on the command line, by key, as
	// given (the flags of watchcfg.Overrides).
	Flags config.Values
}

// Resolved is vigil-watch's settings for a job.
type Resolved struct {
	// Settings are the final, validated settings (Final applied): Watch
	// and Replay use them as they are.
	Settings Settings
	// Skip says why not to watch at all ("" to watch); Settings is then
	// the file's and defaults'.
	Skip string
	// Warnings say what the policy ignored or clamped, one sentence each.
	Warnings []string
}

// InvalidError holds the errors of the flags and of the final validation,
// one a value: a *config.OverrideError for a value that a flag or the
// job's environment gave, a *config.KeyError for one of the file.
type InvalidError struct{ Errs []error }

func (e *InvalidError) Error() string { return errors.Join(e.Errs...).Error() }

// Unwrap returns the errors.
func (e *InvalidError) Unwrap() []error { return e.Errs }

// jobGrace is the start-up grace of a job: the site's grace, cut to the
// job's own window when the job chose one shorter (--vigil-hang-time,
// VIGIL_HANG_DETECT_TIME), so that a job that asks to be judged in two
// minutes is not first made to wait the site's ten. The job's say is
// bounded as its window is: window is the job's window after the [policy]
// bounds (min_hang_time, max_hang_time), so the grace never drops below
// min_hang_time, and never grows past the site's grace. The file's and
// the flags' windows leave the grace alone.
func jobGrace(grace, asked, window time.Duration) time.Duration {
	if asked <= 0 {
		return grace
	}
	return min(grace, window)
}

// Resolve is the one place vigil-watch's settings are put together, in
// this order: the defaults, the file's [watch], the job's environment (its
// window, VIGIL_HANG_DETECT_TIME, its action, VIGIL_HANG_ACTION, and how
// its user is told, VIGIL_NOTIFY and VIGIL_WEBHOOK_URL, read once by
// policy.ForWatcher), the [policy] bounds on those job choices,
// then the flags (watchcfg.Overrides, the table vigil-prolog's overrides
// use too), which are not bounded (the watcher is the user's own
// process). Then the derived values, and one validation of the whole;
// its errors, and those of the flags, come as an *InvalidError, each
// naming the flag, the variable or the file's line.
func Resolve(src Sources) (Resolved, error) {
	var out Resolved
	if src.File == nil {
		src.File = config.Empty("vigil-watch")
	}
	s := DefaultSettings()
	var job *policy.Watcher
	var env config.Values // the job's variables the settings hold, for errors
	if src.Lookup != nil {
		w, err := policy.ForWatcher(src.File, src.Lookup)
		if w != nil {
			if out.Skip = w.Skip(); out.Skip != "" {
				return out, nil
			}
		}
		if err != nil {
			return out, err
		}
		job = w
	}
	if err := s.Load(src.File); err != nil {
		return out, err
	}
	if job != nil {
		w := job.Apply(s.Window, s.Action)
		s.Window, s.Action, out.Warnings = w.Window, w.Action, w.Warnings
		s.Grace = jobGrace(s.Grace, job.Request.Window, s.Window)
		n := job.Notify()
		s.Mail = s.Mail || n.Mail
		s.JobWebhookURL = n.WebhookURL
		out.Warnings = append(out.Warnings, n.Warnings...)
		s.KeepOwnFailures = !job.Policy.RequeueOwnFailures
		env = jobValues(job, s)
	}
	ov := watchcfg.Overrides()
	if err := ov.Apply(&s, src.Flags, config.FromFlag); err != nil {
		return out, &InvalidError{Errs: config.SplitErrors(err)}
	}
	if _, ok := src.Flags["period"]; ok {
		s.PeriodIsDefault = false
	}
	s = s.Final()
	if err := s.Validate(src.File); err != nil {
		return out, &InvalidError{Errs: ov.Explain(src.File, err, env, src.Flags)}
	}
	out.Settings = s
	return out, nil
}

// jobValues are the job's [watch] variables, as set, whose choice s holds
// after the policy: its window (clamped or not) and an allowed action.
func jobValues(job *policy.Watcher, s Settings) config.Values {
	out := config.Values{}
	if v, ok := job.Env["window"]; ok && job.Request.Window > 0 {
		out["window"] = v
	}
	if v, ok := job.Env["action"]; ok && s.Action == policy.WatchAction(job.Request.HangAction) {
		out["action"] = v
	}
	return out
}
