package loop

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/config/watchcfg"
)

func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

// TestResolve: the order file → environment → policy bounds → flags, for
// the window and the action, in every combination that matters. The
// policy bounds what the job's environment asks for, never the file or
// the flags; grace never follows the window.
func TestResolve(t *testing.T) {
	const (
		fileWatch  = "[watch]\nwindow = \"20m\"\naction = \"requeue\"\n"
		filePolicy = "[policy]\nmin_hang_time = \"5m\"\nmax_hang_time = \"1h\"\nhang_actions = [\"notify\", \"cancel\"]\n"
	)
	type flags struct {
		window time.Duration
		action string
	}
	for _, tc := range []struct {
		name   string
		file   string
		env    map[string]string // nil: replay, neither environment nor policy
		flags  *flags
		window time.Duration
		action string
		warns  int
		skip   string
		err    string
	}{
		{name: "defaults", env: map[string]string{}, window: 30 * time.Minute, action: "none"},
		{name: "file", file: fileWatch, env: map[string]string{}, window: 20 * time.Minute, action: "requeue"},
		{name: "env over defaults, minutes", env: map[string]string{watchcfg.EnvWindow: "45"}, window: 45 * time.Minute, action: "none"},
		{name: "env over file", file: fileWatch, env: map[string]string{watchcfg.EnvWindow: "90s", "VIGIL_HANG_ACTION": "cancel"}, window: 90 * time.Second, action: "cancel"},
		{name: "env notify is none", file: fileWatch, env: map[string]string{"VIGIL_HANG_ACTION": "notify"}, window: 20 * time.Minute, action: "none"},
		{name: "policy does not bound the file", file: fileWatch + filePolicy, env: map[string]string{}, window: 20 * time.Minute, action: "requeue"},
		{name: "policy raises the env window", file: fileWatch + filePolicy, env: map[string]string{watchcfg.EnvWindow: "2m"}, window: 5 * time.Minute, action: "requeue", warns: 1},
		{name: "policy lowers the env window", file: fileWatch + filePolicy, env: map[string]string{watchcfg.EnvWindow: "3h"}, window: time.Hour, action: "requeue", warns: 1},
		{name: "policy ignores the env action", file: fileWatch + filePolicy, env: map[string]string{"VIGIL_HANG_ACTION": "requeue"}, window: 20 * time.Minute, action: "requeue", warns: 1},
		{name: "flag over env", file: fileWatch, env: map[string]string{watchcfg.EnvWindow: "45"}, flags: &flags{window: 2 * time.Minute}, window: 2 * time.Minute, action: "requeue"},
		{name: "flag over policy", file: fileWatch + filePolicy, env: map[string]string{watchcfg.EnvWindow: "3h"}, flags: &flags{window: 3 * time.Hour, action: "requeue"}, window: 3 * time.Hour, action: "requeue", warns: 1},
		{name: "flag action over env", file: fileWatch, env: map[string]string{"VIGIL_HANG_ACTION": "cancel"}, flags: &flags{action: "none"}, window: 20 * time.Minute, action: "none"},
		{name: "replay reads no env", file: fileWatch + filePolicy, env: nil, window: 20 * time.Minute, action: "requeue"},
		{name: "replay: flag over file", file: fileWatch, env: nil, flags: &flags{window: 10 * time.Minute}, window: 10 * time.Minute, action: "requeue"},
		{name: "opted out", file: filePolicy, env: map[string]string{watchcfg.EnvWindow: "off", "VIGIL_SPANK_WATCH": "auto"}, skip: "opted out"},
		{name: "opt out refused", file: "[policy]\nallow_watch_opt_out = false\n", env: map[string]string{watchcfg.EnvWindow: "off"}, window: 30 * time.Minute, action: "none", warns: 1},
		{name: "auto_watch off wins over a bad env", env: map[string]string{watchcfg.EnvWindow: "soon", "VIGIL_SPANK_WATCH": "config"}, skip: "auto_watch = false"},
		{name: "bad env window", env: map[string]string{watchcfg.EnvWindow: "soon"}, err: `environment VIGIL_HANG_DETECT_TIME="soon": bad override: bad detection time: "soon"`},
		{name: "bad env action", env: map[string]string{"VIGIL_HANG_ACTION": "drain"}, err: "VIGIL_HANG_ACTION"},
		{name: "bad policy", file: "[policy]\nmax_hang_time = 5\n", env: map[string]string{}, err: "policy.max_hang_time"},
		{name: "bad policy ignored by replay", file: "[policy]\nmax_hang_time = 5\n", env: nil, window: 30 * time.Minute, action: "none"},
		{name: "env window too short for the file's period", file: "[watch]\nperiod = \"60s\"\n", env: map[string]string{watchcfg.EnvWindow: "1.5"}, err: "watch.period"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := config.Parse(strings.NewReader(tc.file), "vigil.toml")
			if err != nil {
				t.Fatal(err)
			}
			src := Sources{File: f, Flags: config.Values{}}
			if tc.env != nil {
				src.Lookup = envOf(tc.env)
			}
			if tc.flags != nil {
				if tc.flags.window != 0 {
					src.Flags["window"] = tc.flags.window.String()
				}
				if tc.flags.action != "" {
					src.Flags["action"] = tc.flags.action
				}
			}
			res, err := Resolve(src)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Resolve = %+v, %v; want an error with %q", res, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Skip, tc.skip) || (tc.skip == "") != (res.Skip == "") {
				t.Fatalf("Skip = %q, want %q", res.Skip, tc.skip)
			}
			if tc.skip != "" {
				return
			}
			s := res.Settings
			if s.Window != tc.window || s.Action != tc.action || len(res.Warnings) != tc.warns {
				t.Fatalf("window %v action %q warnings %q; want %v %q and %d warnings", s.Window, s.Action, res.Warnings, tc.window, tc.action, tc.warns)
			}
			// The job's own window (the environment) caps its grace;
			// nothing else moves it.
			grace := 10 * time.Minute
			if tc.env[watchcfg.EnvWindow] != "" && tc.env[watchcfg.EnvWindow] != "off" && tc.window < grace && tc.flags == nil {
				grace = tc.window
			}
			if s.Grace != grace {
				t.Errorf("grace %v; want %v", s.Grace, grace)
			}
		})
	}
	t.Run("requeue_own_failures", func(t *testing.T) {
		for file, keep := range map[string]bool{"": false, "[policy]\nrequeue_own_failures = false\n": true} {
			f, err := config.Parse(strings.NewReader(fileWatch+file), "vigil.toml")
			if err != nil {
				t.Fatal(err)
			}
			res, err := Resolve(Sources{File: f, Lookup: envOf(map[string]string{})})
			if err != nil || res.Settings.KeepOwnFailures != keep {
				t.Errorf("policy %q: KeepOwnFailures %v, %v; want %v", file, res.Settings.KeepOwnFailures, err, keep)
			}
		}
	})
	t.Run("invalid values come one per key", func(t *testing.T) {
		_, err := Resolve(Sources{Lookup: envOf(nil), Flags: config.Values{"window": "10s", "period": "8s"}})
		var inv *InvalidError
		if !errors.As(err, &inv) || len(inv.Errs) != 1 || !strings.Contains(err.Error(), `flag --period="8s": invalid value: 8s: must be at most half the window`) {
			t.Fatalf("Resolve = %v, want one InvalidError about --period", err)
		}
	})
	t.Run("a period that follows the window is the window's", func(t *testing.T) {
		short, err := config.Parse(strings.NewReader("[policy]\nmin_hang_time = \"1s\"\n"), "vigil.toml")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Resolve(Sources{File: short, Lookup: envOf(map[string]string{watchcfg.EnvWindow: "1s"})})
		if want := `environment VIGIL_HANG_DETECT_TIME="1s": invalid value: 1s: must be at most half the window`; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Resolve = %v, want %q", err, want)
		}
		_, err = Resolve(Sources{Lookup: envOf(nil), Flags: config.Values{"window": "1s"}})
		if want := `flag --window="1s": invalid value`; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Resolve = %v, want %q", err, want)
		}
	})
	t.Run("a flag that does not parse", func(t *testing.T) {
		_, err := Resolve(Sources{Flags: config.Values{"io_bytes": "lots", "window": "soon"}})
		var inv *InvalidError
		if !errors.As(err, &inv) || len(inv.Errs) != 2 || !strings.Contains(err.Error(), `flag --io-bytes="lots": bad override`) {
			t.Fatalf("Resolve = %v, want two InvalidErrors naming the flags", err)
		}
	})
}

// TestSettingsJobGrace: a job that asks for a short window gets a grace
// no longer than it (bounded below by [policy] min_hang_time, as its
// window is); a long window, or one from the file or the flags, keeps the
// site's grace.
func TestSettingsJobGrace(t *testing.T) {
	resolve := func(file, window string, fl config.Values) Settings {
		t.Helper()
		f, err := config.Parse(strings.NewReader(file), "vigil.toml")
		if err != nil {
			t.Fatal(err)
		}
		src := Sources{File: f, Lookup: envOf(map[string]string{watchcfg.EnvWindow: window}), Flags: fl}
		res, err := Resolve(src)
		if err != nil {
			t.Fatal(err)
		}
		return res.Settings.Final()
	}
	// --vigil-hang-time=2: judged two minutes after the start, not ten.
	if f := resolve("", "2", nil); f.Window != 2*time.Minute || f.Grace != 2*time.Minute || f.FirstVerdict() != 2*time.Minute {
		t.Errorf("window %v grace %v first verdict %v, want 2m 2m 2m", f.Window, f.Grace, f.FirstVerdict())
	}
	// The policy's floor bounds the job's grace as it bounds its window.
	if f := resolve("[policy]\nmin_hang_time = \"5m\"\n", "2", nil); f.Window != 5*time.Minute || f.Grace != 5*time.Minute {
		t.Errorf("with min_hang_time 5m: window %v grace %v, want 5m 5m", f.Window, f.Grace)
	}
	if f := resolve("", "2h", nil); f.Grace != 10*time.Minute || f.FirstVerdict() != 2*time.Hour {
		t.Errorf("2h window: grace %v first verdict %v, want 10m 2h", f.Grace, f.FirstVerdict())
	}
	// The file's window and the flags leave the grace alone.
	if f := resolve("[watch]\nwindow = \"3m\"\n", "", nil); f.Grace != 10*time.Minute {
		t.Errorf("file window 3m: grace %v, want 10m", f.Grace)
	}
	if f := resolve("", "2", config.Values{"grace": "8m"}); f.Grace != 8*time.Minute {
		t.Errorf("--grace 8m with a 2m job window: grace %v, want 8m", f.Grace)
	}
	if err := DefaultSettings().Final().Validate(nil); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}
