package policy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/config/watchcfg"
)

var known = []string{"disk", "ecc", "fault-inject", "gemm", "gpu-count", "xid"}

// reg is the registry the tests pass: fault-inject is the test-only check,
// as benchmarks registers it, gemm a check outside the default suite, and
// the shipped [prolog] (its checks empty: the default suite).
var reg = Registry{Names: known, TestOnly: []string{"fault-inject"}, Defaults: []string{"disk", "ecc", "gpu-count", "xid"}}.WithProlog(nil, nil)

func parse(t *testing.T, doc string) *config.File {
	t.Helper()
	f, err := config.Parse(strings.NewReader(doc), "vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestRequestSet(t *testing.T) {
	for _, tc := range []struct {
		name, opt, val string
		want           Request
		err            string
	}{
		{name: "checks", opt: OptChecks, val: "disk,ecc,disk", want: Request{Checks: []string{"disk", "ecc"}}},
		{name: "none", opt: OptChecks, val: "none", want: Request{SkipChecks: true}},
		{name: "none mixed", opt: OptChecks, val: "none,disk", err: `"none" cannot be combined`},
		{name: "empty name", opt: OptChecks, val: "disk,", err: "empty check name"},
		{name: "timing", opt: OptTiming, val: "after-requeue", want: Request{Timing: "after-requeue"}},
		{name: "bad timing", opt: OptTiming, val: "later", err: `want "before" or "after-requeue"`},
		{name: "hang time", opt: OptHangTime, val: "2m", want: Request{Window: 2 * time.Minute}},
		{name: "hang off", opt: OptHangTime, val: "off", want: Request{WatchOff: true}},
		{name: "bad hang time", opt: OptHangTime, val: "2x", err: "want minutes"},
		{name: "action", opt: OptHangAction, val: "requeue", want: Request{HangAction: "requeue"}},
		{name: "bad action", opt: OptHangAction, val: "drain", err: `want "notify" (or "none"), "cancel", "requeue" or "requeue-exclude"`},
		{name: "unknown option", opt: "budget", val: "1m", err: "unknown option --vigil-budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Request
			err := r.Set(tc.opt, tc.val)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrSyntax) {
					t.Fatalf("Set(%s, %q) = %v, want ErrSyntax containing %q", tc.opt, tc.val, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(r, tc.want) {
				t.Fatalf("Set(%s, %q) = %+v, %v; want %+v", tc.opt, tc.val, r, err, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Run("defaults without a section", func(t *testing.T) {
		p, err := Load(parse(t, "[prolog]\nbudget = \"5m\"\n"), known)
		if err != nil || !reflect.DeepEqual(p, Default()) {
			t.Fatalf("Load = %+v, %v; want the defaults", p, err)
		}
	})
	t.Run("values", func(t *testing.T) {
		p, err := Load(parse(t, `[policy]
checks = ["disk", "xid"]
allow_skip = true
timings = ["before"]
max_budget = "2m"
hang_actions = ["notify"]
min_hang_time = "5m"
max_hang_time = "2h"
allow_watch_opt_out = false
auto_watch = true
requeue_own_failures = false
`), known)
		want := Policy{Checks: []string{"disk", "xid"}, AllowSkip: true, Timings: []string{"before"}, MaxBudget: 2 * time.Minute,
			HangActions: []string{"notify"}, MinWindow: 5 * time.Minute, MaxWindow: 2 * time.Hour, AutoWatch: true,
			Notify: []string{"mail"}}
		if err != nil || !reflect.DeepEqual(p, want) {
			t.Fatalf("Load = %+v, %v; want %+v", p, err, want)
		}
	})
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown key", "[policy]\nallow_skipp = true\n", "vigil.toml:2: policy.allow_skipp: unknown key"},
		{"unknown check", "[policy]\nchecks = [\"gemm\", \"nope\"]\n", `vigil.toml:2: policy.checks: invalid value: unknown check "nope"`},
		{"bad timing", "[policy]\ntimings = [\"never\"]\n", `vigil.toml:2: policy.timings: invalid value: "never"`},
		{"bad action", "[policy]\n\nhang_actions = [\"drain\"]\n", `vigil.toml:3: policy.hang_actions: invalid value: "drain"`},
		{"min above max", "[policy]\nmin_hang_time = \"2h\"\nmax_hang_time = \"1h\"\n", "vigil.toml:3: policy.max_hang_time: invalid value: 1h0m0s: shorter than min_hang_time 2h0m0s"},
		{"integer duration", "[policy]\nmin_hang_time = 60\n", "vigil.toml:2: policy.min_hang_time: invalid value: 60ns: want at least 1s"},
		{"wrong type", "[policy]\nallow_skip = \"yes\"\n", "vigil.toml:2: policy.allow_skip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(parse(t, tc.doc), known)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	strict := Default()
	strict.Checks = []string{"disk", "xid"}
	strict.Timings = []string{"before"}
	strict.HangActions = []string{"notify", "cancel"}
	strict.MinWindow, strict.MaxWindow = 5*time.Minute, time.Hour
	strict.AllowWatchOptOut = false
	for _, tc := range []struct {
		name string
		p    Policy
		r    Request
		want []string
	}{
		{name: "nothing asked", p: strict},
		{name: "allowed", p: strict, r: Request{Checks: []string{"disk"}, Timing: "before", Window: 10 * time.Minute, HangAction: "cancel"}},
		{name: "unknown check", p: Default(), r: Request{Checks: []string{"disk", "nosuch"}},
			want: []string{`unknown check "nosuch" (checks users may choose: disk, ecc, gpu-count, xid)`}},
		{name: "by default only what the prolog runs", p: Default(), r: Request{Checks: []string{"disk", "gemm"}},
			want: []string{`check "gemm" is not one users may choose on this cluster (allowed: disk, ecc, gpu-count, xid: the checks the prolog runs; others only where [policy] checks lists them)`}},
		{name: "check not allowed", p: strict, r: Request{Checks: []string{"gemm"}},
			want: []string{`check "gemm" is not one users may choose on this cluster (allowed: disk, xid)`}},
		{name: "fault injection is never a user's choice by default", p: Default(), r: Request{Checks: []string{"fault-inject"}},
			want: []string{`check "fault-inject" is not one users may choose on this cluster (allowed: disk, ecc, gpu-count, xid: the checks the prolog runs; others only where [policy] checks lists them)`}},
		{name: "skip refused by default", p: Default(), r: Request{SkipChecks: true},
			want: []string{"skipping the checks is not allowed on this cluster ([policy] allow_skip = false)"}},
		{name: "timing", p: strict, r: Request{Timing: "after-requeue"},
			want: []string{"timing after-requeue is not allowed on this cluster (allowed: before)"}},
		{name: "hang time too long", p: strict, r: Request{Window: 2 * time.Hour},
			want: []string{"hang time 2h0m0s is longer than the longest allowed, 1h0m0s ([policy] max_hang_time)"}},
		{name: "hang time too short", p: strict, r: Request{Window: time.Minute},
			want: []string{"hang time 1m0s is shorter than the shortest allowed, 5m0s ([policy] min_hang_time)"}},
		{name: "opt out", p: strict, r: Request{WatchOff: true},
			want: []string{"opting out of hang detection is not allowed on this cluster ([policy] allow_watch_opt_out = false)"}},
		{name: "action", p: strict, r: Request{HangAction: "requeue"},
			want: []string{"hang action requeue is not allowed on this cluster (allowed: notify, cancel)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range tc.p.Check(tc.r, reg) {
				if !errors.Is(e, ErrRefused) {
					t.Errorf("%v does not wrap ErrRefused", e)
				}
				got = append(got, strings.TrimPrefix(e.Error(), "refused: "))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Check =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestApplyProlog(t *testing.T) {
	capped := Default()
	capped.MaxBudget = 5 * time.Minute
	capped.Checks = []string{"disk", "xid"}
	skippable := Default()
	skippable.AllowSkip = true
	for _, tc := range []struct {
		name  string
		p     Policy
		r     Request
		want  Prolog
		warns int
	}{
		{name: "nothing asked", p: capped, want: Prolog{Budget: 30 * time.Minute}},
		{name: "checks within policy, budget capped", p: capped, r: Request{Checks: []string{"disk"}},
			want: Prolog{Checks: []string{"disk"}, Budget: 5 * time.Minute}, warns: 1},
		{name: "disallowed and unknown checks dropped", p: capped, r: Request{Checks: []string{"gemm", "disk", "nope"}},
			want: Prolog{Checks: []string{"disk"}, Budget: 5 * time.Minute, Dropped: []Dropped{
				{Check: "gemm", Reason: "not one users may choose ([policy] checks)"}, {Check: "nope", Reason: "unknown check"}}}, warns: 2},
		{name: "nothing left: configured checks", p: capped, r: Request{Checks: []string{"gemm"}},
			want: Prolog{Budget: 30 * time.Minute, Dropped: []Dropped{{Check: "gemm", Reason: "not one users may choose ([policy] checks)"}}}, warns: 2},
		{name: "skip not allowed", p: Default(), r: Request{SkipChecks: true},
			want: Prolog{Budget: 30 * time.Minute}, warns: 1},
		{name: "skip allowed", p: skippable, r: Request{SkipChecks: true},
			want: Prolog{Skip: true, Budget: 30 * time.Minute}},
		{name: "timing", p: Default(), r: Request{Timing: "after-requeue"},
			want: Prolog{Timing: "after-requeue", Budget: 30 * time.Minute}},
		{name: "hang options do not touch the prolog", p: capped, r: Request{Window: time.Hour, HangAction: "cancel"},
			want: Prolog{Budget: 30 * time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.ApplyProlog(tc.r, reg, 30*time.Minute)
			if len(got.Warnings) != tc.warns {
				t.Errorf("warnings = %q, want %d", got.Warnings, tc.warns)
			}
			got.Warnings = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ApplyProlog = %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("budget never grows", func(t *testing.T) {
		got := capped.ApplyProlog(Request{Checks: []string{"disk"}}, reg, time.Minute)
		if got.Budget != time.Minute {
			t.Fatalf("Budget = %v, want the configured 1m", got.Budget)
		}
	})
}

func TestApplyWatch(t *testing.T) {
	p := Default()
	p.MinWindow, p.MaxWindow = 5*time.Minute, time.Hour
	p.HangActions = []string{"notify", "cancel"}
	strict := p
	strict.AllowWatchOptOut = false
	for _, tc := range []struct {
		name  string
		p     Policy
		r     Request
		want  Watch
		warns int
	}{
		{name: "site defaults", p: p, want: Watch{Window: 30 * time.Minute, Action: "none"}},
		{name: "window", p: p, r: Request{Window: 10 * time.Minute}, want: Watch{Window: 10 * time.Minute, Action: "none"}},
		{name: "window clamped down", p: p, r: Request{Window: 48 * time.Hour}, want: Watch{Window: time.Hour, Action: "none"}, warns: 1},
		{name: "window clamped up", p: p, r: Request{Window: time.Minute}, want: Watch{Window: 5 * time.Minute, Action: "none"}, warns: 1},
		{name: "cancel", p: p, r: Request{HangAction: "cancel"}, want: Watch{Window: 30 * time.Minute, Action: "cancel"}},
		{name: "notify", p: p, r: Request{HangAction: "notify"}, want: Watch{Window: 30 * time.Minute, Action: "none"}},
		{name: "requeue not allowed", p: p, r: Request{HangAction: "requeue"}, want: Watch{Window: 30 * time.Minute, Action: "none"}, warns: 1},
		{name: "opt out", p: p, r: Request{WatchOff: true}, want: Watch{Off: true, Window: 30 * time.Minute, Action: "none"}},
		{name: "opt out refused", p: strict, r: Request{WatchOff: true}, want: Watch{Window: 30 * time.Minute, Action: "none"}, warns: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.ApplyWatch(tc.r, 30*time.Minute, "none")
			if len(got.Warnings) != tc.warns {
				t.Errorf("warnings = %q, want %d", got.Warnings, tc.warns)
			}
			got.Warnings = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ApplyWatch = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestForProlog(t *testing.T) {
	f := parse(t, "[policy]\nchecks = [\"disk\"]\nmax_budget = \"1m\"\n")
	got := ForProlog(f, env(map[string]string{EnvSpankChecks: "disk,gemm", EnvSpankHangTime: "bogus"}), reg, time.Hour)
	if !reflect.DeepEqual(got.Checks, []string{"disk"}) || got.Budget != time.Minute || len(got.Warnings) != 3 {
		t.Fatalf("ForProlog = %+v", got)
	}
	bad := parse(t, "[policy]\nchecks = \"disk\"\n")
	got = ForProlog(bad, env(map[string]string{EnvSpankChecks: "disk"}), reg, time.Hour)
	if got.Checks != nil || got.Budget != time.Hour || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "[policy] is invalid") {
		t.Fatalf("ForProlog with a bad policy = %+v", got)
	}
	got = ForProlog(bad, env(nil), reg, time.Hour)
	if got.Checks != nil || len(got.Warnings) != 0 {
		t.Fatalf("ForProlog without a request = %+v (a bad [policy] only matters when a job asks)", got)
	}
}

func TestForWatcher(t *testing.T) {
	f := parse(t, "[policy]\nmax_hang_time = \"1h\"\n")
	for _, tc := range []struct {
		name   string
		env    map[string]string
		skip   string
		window time.Duration
		action string
		err    bool
	}{
		{name: "hand-started, no options", env: map[string]string{}, window: 30 * time.Minute, action: "none"},
		{name: "plugin, auto, 2m", env: map[string]string{EnvSpankWatch: "auto", watchcfg.EnvWindow: "2m", EnvHangAction: "cancel"}, window: 2 * time.Minute, action: "cancel"},
		{name: "minutes", env: map[string]string{watchcfg.EnvWindow: "45"}, window: 45 * time.Minute, action: "none"},
		{name: "clamped", env: map[string]string{watchcfg.EnvWindow: "3h"}, window: time.Hour, action: "none"},
		{name: "config and auto_watch off", env: map[string]string{EnvSpankWatch: "config"}, skip: "auto_watch = false"},
		{name: "opted out", env: map[string]string{EnvSpankWatch: "auto", watchcfg.EnvWindow: "off"}, skip: "opted out"},
		{name: "bad action", env: map[string]string{EnvHangAction: "drain"}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ForWatcher(f, env(tc.env))
			if tc.err {
				if err == nil {
					t.Fatal("ForWatcher succeeded, want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := w.Skip(); !strings.Contains(s, tc.skip) || (tc.skip == "") != (s == "") {
				t.Fatalf("Skip = %q, want %q", s, tc.skip)
			}
			if tc.skip != "" {
				return
			}
			got := w.Apply(30*time.Minute, "none")
			if got.Window != tc.window || got.Action != tc.action {
				t.Fatalf("Apply = %+v, want window %v action %s", got, tc.window, tc.action)
			}
		})
	}
	t.Run("a bad window is an error that names the variable", func(t *testing.T) {
		w, err := ForWatcher(f, env(map[string]string{watchcfg.EnvWindow: "-5", EnvSpankWatch: "config"}))
		if err == nil || !strings.Contains(err.Error(), `environment VIGIL_HANG_DETECT_TIME="-5": bad override: bad detection time: "-5": must be positive`) {
			t.Fatalf("ForWatcher = %v, want the variable's error", err)
		}
		if w == nil || w.Skip() == "" {
			t.Fatalf("ForWatcher = %+v: a watcher that would not watch anyway should still say so", w)
		}
	})
	t.Run("the job's variables are those of the [watch] table", func(t *testing.T) {
		for key, name := range map[string]string{"window": watchcfg.EnvWindow, "action": EnvHangAction} {
			if k, ok := watchcfg.Overrides().Lookup(key); !ok || k.Env != name {
				t.Errorf("[watch] %s: variable %q, want %q", key, k.Env, name)
			}
		}
	})
	t.Run("auto_watch on", func(t *testing.T) {
		w, err := ForWatcher(parse(t, "[policy]\nauto_watch = true\n"), env(map[string]string{EnvSpankWatch: "config"}))
		if err != nil || w.Skip() != "" {
			t.Fatalf("ForWatcher = %+v, %v; want to watch", w, err)
		}
	})
}

func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "vigil.toml")
	if err := os.WriteFile(cfg, []byte("[policy]\nmax_hang_time = \"1h\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badCfg := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(badCfg, []byte("[policy]\nmax_hang_time = 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rangeCfg := filepath.Join(dir, "range.toml")
	if err := os.WriteFile(rangeCfg, []byte("[policy]\nmin_hang_time = \"10m\"\nmax_hang_time = \"5m\"\nhang_actions = [\"drain\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{name: "allowed", args: []string{"--config", cfg, "--checks=disk", "--hang-time=2m", "--hang-action=cancel", "--timing=before"}, code: ExitAllowed},
		{name: "unknown check", args: []string{"--config", cfg, "--checks=disk,nosuch"}, code: ExitRefused, out: `unknown check "nosuch"`},
		{name: "beyond the bound", args: []string{"--config", cfg, "--hang-time=2h"}, code: ExitRefused, out: "longer than the longest allowed, 1h0m0s"},
		{name: "syntax", args: []string{"--config", cfg, "--hang-time=soon"}, code: ExitRefused, out: "--vigil-hang-time=soon: want minutes"},
		{name: "missing file: shipped policy", args: []string{"--config", filepath.Join(dir, "none.toml"), "--hang-time=2h"}, code: ExitAllowed},
		{name: "bad config", args: []string{"--config", badCfg, "--hang-time=2m"}, code: ExitConfig, out: "policy.max_hang_time"},
		{name: "bad usage", args: []string{"--budget=1m"}, code: ExitUsage},
		{name: "validate only", args: []string{"--config", cfg}, code: ExitAllowed},
		{name: "validate only, bad", args: []string{"--config", badCfg}, code: ExitConfig, out: "bad.toml:2: policy.max_hang_time"},
		{name: "range", args: []string{"--config", rangeCfg}, code: ExitConfig, out: "range.toml:3: policy.max_hang_time: invalid value: 5m0s: shorter than min_hang_time 10m0s"},
		{name: "action", args: []string{"--config", rangeCfg}, code: ExitConfig, out: `range.toml:4: policy.hang_actions: invalid value: "drain": want "notify" (or "none"), "cancel", "requeue" or "requeue-exclude"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := CheckCommand(tc.args, &out, &errb, reg)
			if code != tc.code || !strings.Contains(out.String(), tc.out) {
				t.Fatalf("CheckCommand(%q) = %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out.String(), errb.String(), tc.code, tc.out)
			}
			if code == ExitUsage && (strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), "(see vigil-prolog policy-check --help)")) {
				t.Fatalf("usage error is not one line with a pointer to --help: %q", errb.String())
			}
		})
	}
}

// TestActionNamesAreShared: "none" is another name of "notify" here as in
// vigil-watch's --action; both load and compare as "notify".
func TestActionNamesAreShared(t *testing.T) {
	var r Request
	if err := r.Set(OptHangAction, "none"); err != nil || r.HangAction != watchcfg.ActionNotify {
		t.Fatalf("--vigil-hang-action=none: %q, %v", r.HangAction, err)
	}
	f, err := config.Parse(strings.NewReader("[policy]\nhang_actions = [\"none\", \"cancel\"]\n"), "p.toml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load(f, nil)
	if err != nil || strings.Join(p.HangActions, ",") != "notify,cancel" {
		t.Fatalf("hang_actions %v, %v", p.HangActions, err)
	}
	if w := p.ApplyWatch(Request{HangAction: watchcfg.ActionNotify}, time.Hour, "cancel"); w.Action != "none" || len(w.Warnings) != 0 {
		t.Fatalf("ApplyWatch: %+v", w)
	}
}

// TestOptionSyntax: the values sbatch, salloc and srun accept and refuse
// before any policy is consulted. The SPANK plugin leaves every value's
// parsing to vigil-prolog policy-check, which runs Request.Set (its own
// driver checks only that a value is given): these cases moved here from
// the plugin's C syntax test, with the one parser's answers.
func TestOptionSyntax(t *testing.T) {
	for _, tc := range []struct {
		opt, val string
		window   time.Duration // for accepted windows
		err      string        // "" when accepted
	}{
		{opt: OptChecks, val: "disk"},
		{opt: OptChecks, val: "disk,gpu-count,row-remap"},
		{opt: OptChecks, val: "none"},
		{opt: OptChecks, val: "none,disk", err: `"none" cannot be combined with check names`},
		{opt: OptChecks, val: "disk,,xid", err: "empty check name"},
		{opt: OptChecks, val: "Disk"}, // syntax is fine; no check has that name (policy: unknown check)
		{opt: OptTiming, val: "before"},
		{opt: OptTiming, val: "after-requeue"},
		{opt: OptTiming, val: "later", err: `want "before" or "after-requeue"`},
		{opt: OptHangTime, val: "2m", window: 2 * time.Minute},
		{opt: OptHangTime, val: "30", window: 30 * time.Minute},
		{opt: OptHangTime, val: "1.5", window: 90 * time.Second},
		{opt: OptHangTime, val: "1h30m", window: 90 * time.Minute},
		{opt: OptHangTime, val: "250ms", window: 250 * time.Millisecond}, // below every min_hang_time: the policy refuses it
		{opt: OptHangTime, val: "off"},
		{opt: OptHangTime, val: "0", err: "must be positive"},
		{opt: OptHangTime, val: "-5m", err: "must be positive"},
		{opt: OptHangTime, val: "2x", err: `want minutes ("30"), a duration ("90s", "2h") or "off"`},
		{opt: OptHangTime, val: "9000h", window: 9000 * time.Hour}, // beyond every sane max_hang_time: the policy refuses it
		{opt: OptHangAction, val: "notify"},
		{opt: OptHangAction, val: "cancel"},
		{opt: OptHangAction, val: "requeue"},
		{opt: OptHangAction, val: "none"},
		{opt: OptHangAction, val: "drain", err: `want "notify" (or "none"), "cancel", "requeue" or "requeue-exclude"`},
	} {
		t.Run(tc.opt+"="+tc.val, func(t *testing.T) {
			var r Request
			err := r.Set(tc.opt, tc.val)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("--vigil-%s=%s: %v, want an error with %q", tc.opt, tc.val, err, tc.err)
				}
				return
			}
			if err != nil || r.Window != tc.window {
				t.Fatalf("--vigil-%s=%s: window %v, %v; want %v", tc.opt, tc.val, r.Window, err, tc.window)
			}
		})
	}
	// The shipped policy refuses the windows the plugin's own parser used
	// to: "9000h" ("longer than a year" then) and sub-minute ones.
	for _, v := range []string{"9000h", "250ms"} {
		var out bytes.Buffer
		if code := CheckCommand([]string{"--config", filepath.Join(t.TempDir(), "none.toml"), "--hang-time=" + v}, &out, io.Discard, reg); code != ExitRefused {
			t.Errorf("policy-check --hang-time=%s = %d (%s), want refused", v, code, out.String())
		}
	}
}

// TestCheckCommandSyntaxWithoutConfig: a malformed value is refused even
// when the config cannot be read; a well-formed one then waits for the
// nodes (ExitConfig).
func TestCheckCommandSyntaxWithoutConfig(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("[policy]\nmax_hang_time = 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := CheckCommand([]string{"--config", bad, "--hang-time=soon"}, &out, io.Discard, reg); code != ExitRefused || !strings.Contains(out.String(), "--vigil-hang-time=soon: want minutes") {
		t.Fatalf("policy-check with a bad config and a bad value = %d, %q; want refused", code, out.String())
	}
	out.Reset()
	if code := CheckCommand([]string{"--config", bad, "--hang-time=2m"}, &out, io.Discard, reg); code != ExitConfig {
		t.Fatalf("policy-check with a bad config and a good value = %d, %q; want %d", code, out.String(), ExitConfig)
	}
}

// TestChecksDefaultToThePrologs: with [policy] checks empty a job may
// choose among the checks the admin's [prolog] runs (its checks, else the
// default suite, less its skip), never others; a check outside needs
// [policy] checks to list it.
func TestChecksDefaultToThePrologs(t *testing.T) {
	base := Registry{Names: known, TestOnly: []string{"fault-inject"}, Defaults: []string{"disk", "ecc", "gpu-count", "xid"}}
	for _, tc := range []struct {
		name        string
		checks      []string
		skip        []string
		policy      []string
		allow, deny []string
	}{
		{name: "the default suite", allow: []string{"disk", "xid"}, deny: []string{"gemm", "fault-inject"}},
		{name: "[prolog] checks", checks: []string{"disk", "gemm"}, allow: []string{"gemm", "disk"}, deny: []string{"xid", "ecc"}},
		{name: "[prolog] skip", skip: []string{"ecc"}, allow: []string{"xid"}, deny: []string{"ecc", "gemm"}},
		{name: "fault-inject only where the admin runs it", checks: []string{"fault-inject"}, allow: []string{"fault-inject"}, deny: []string{"disk"}},
		{name: "[policy] checks lists others", policy: []string{"gemm"}, allow: []string{"gemm"}, deny: []string{"disk"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Default()
			p.Checks = tc.policy
			g := base.WithProlog(tc.checks, tc.skip)
			for _, c := range tc.allow {
				if errs := p.Check(Request{Checks: []string{c}}, g); len(errs) > 0 {
					t.Errorf("check %s refused: %v", c, errs)
				}
				if got := p.ApplyProlog(Request{Checks: []string{c}}, g, time.Hour); !reflect.DeepEqual(got.Checks, []string{c}) {
					t.Errorf("ApplyProlog(%s).Checks = %v", c, got.Checks)
				}
			}
			for _, c := range tc.deny {
				if errs := p.Check(Request{Checks: []string{c}}, g); len(errs) != 1 || !errors.Is(errs[0], ErrRefused) {
					t.Errorf("check %s: Check = %v, want it refused", c, errs)
				}
				if got := p.ApplyProlog(Request{Checks: []string{c}}, g, time.Hour); got.Checks != nil || len(got.Dropped) != 1 {
					t.Errorf("ApplyProlog(%s) = %+v, want it dropped and the configured checks run", c, got)
				}
			}
		})
	}
	t.Run("unknown configured checks: only [policy] checks", func(t *testing.T) {
		if errs := Default().Check(Request{Checks: []string{"disk"}}, base); len(errs) != 1 {
			t.Fatalf("Check without the prolog's checks = %v, want a refusal", errs)
		}
	})
}

// TestCheckCommandShippedPolicy: policy-check with the shipped [policy]
// refuses a check that [prolog] checks does not run, and allows one it runs.
func TestCheckCommandShippedPolicy(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "vigil.toml")
	if err := os.WriteFile(cfg, []byte("[prolog]\nchecks = [\"disk\", \"xid\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := Registry{Names: known, TestOnly: []string{"fault-inject"}, Defaults: []string{"disk", "ecc", "gpu-count", "xid"}}
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{name: "a check it runs", args: []string{"--config", cfg, "--checks=xid"}, code: ExitAllowed},
		{name: "a check it does not run", args: []string{"--config", cfg, "--checks=gemm"}, code: ExitRefused,
			out: `check "gemm" is not one users may choose on this cluster (allowed: disk, xid: the checks the prolog runs; others only where [policy] checks lists them)`},
		{name: "a default check the config leaves out", args: []string{"--config", cfg, "--checks=ecc"}, code: ExitRefused, out: `check "ecc"`},
		{name: "no file: the default suite", args: []string{"--config", filepath.Join(dir, "none.toml"), "--checks=gemm"}, code: ExitRefused, out: `check "gemm"`},
		{name: "no file, a default check", args: []string{"--config", filepath.Join(dir, "none.toml"), "--checks=ecc"}, code: ExitAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := CheckCommand(tc.args, &out, &errb, base)
			if code != tc.code || !strings.Contains(out.String(), tc.out) {
				t.Fatalf("CheckCommand(%q) = %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out.String(), errb.String(), tc.code, tc.out)
			}
		})
	}
}
