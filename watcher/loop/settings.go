package loop

import (
	"errors"
	"fmt"
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

// Flags are the [watch] values given on vigil-watch's command line.
type Flags struct {
	// Values holds them: the flags are bound to a copy of the settings.
	Values Settings
	// Keys names the [watch] keys of the flags given ("window", "io_bytes").
	Keys []string
}

// Sources are where vigil-watch's settings come from.
type Sources struct {
	// File is the config file: its [watch] and [policy] sections; nil: none.
	File *config.File
	// Lookup reads the job's environment: VIGIL_HANG_DETECT_TIME,
	// VIGIL_HANG_ACTION and VIGIL_SPANK_WATCH. nil reads neither the
	// environment nor the policy, as replay does.
	Lookup func(string) (string, bool)
	// Flags are the values given on the command line.
	Flags Flags
}

// Resolved is vigil-watch's settings for a job.
type Resolved struct {
	// Settings are the validated settings (Final not applied).
	Settings Settings
	// Skip says why not to watch at all ("" to watch); Settings is then
	// the file's and defaults'.
	Skip string
	// Warnings say what the policy ignored or clamped, one sentence each.
	Warnings []string
}

// InvalidError holds the errors of the final validation, one per [watch]
// key (*config.KeyError), so that the caller can name the flag or the
// variable that set a key rather than the file.
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
// then the flags, which are not bounded (the watcher is the user's own
// process). Then the derived values, and one validation of the whole;
// its errors come as an *InvalidError.
func Resolve(src Sources) (Resolved, error) {
	var out Resolved
	if src.File == nil {
		src.File = config.Empty("vigil-watch")
	}
	s := DefaultSettings()
	var job *policy.Watcher
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
	}
	if err := s.Override(src.Flags.Values, src.Flags.Keys); err != nil {
		return out, fmt.Errorf("flags: %w", err)
	}
	if err := s.Final().Validate(src.File); err != nil {
		var errs []error
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		} else {
			errs = []error{err}
		}
		return out, &InvalidError{Errs: errs}
	}
	out.Settings = s
	return out, nil
}
