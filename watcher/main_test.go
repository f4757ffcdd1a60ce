package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/policy"
	"github.com/vigil-hpc/vigil/watcher/action"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "vigil.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPrecedence(t *testing.T) {
	cfg := writeConfig(t, `
[prolog]
suite = "health"

[watch]
window = "20m"
period = "30s"
io_bytes = 4096
action = "requeue"
max_requeues = 3
`)
	empty := writeConfig(t, "")
	for _, tc := range []struct {
		name   string
		args   []string
		env    []string
		window time.Duration
		grace  time.Duration
		period time.Duration
	}{
		{"defaults", []string{"--config", empty}, nil, 30 * time.Minute, 10 * time.Minute, 30 * time.Second},
		{"file", []string{"--config", cfg}, nil, 20 * time.Minute, 10 * time.Minute, 30 * time.Second},
		{"env over file, minutes", []string{"--config", cfg}, []string{"VIGIL_HANG_DETECT_TIME", "45"}, 45 * time.Minute, 10 * time.Minute, 30 * time.Second},
		{"env over file, duration, and the job's grace", []string{"--config", cfg}, []string{"VIGIL_HANG_DETECT_TIME", "90s"}, 90 * time.Second, 90 * time.Second, 30 * time.Second},
		{"flag over env", []string{"--config", cfg, "--window", "2m", "--period", "10s"}, []string{"VIGIL_HANG_DETECT_TIME", "45"}, 2 * time.Minute, 10 * time.Minute, 10 * time.Second},
		{"flag window in minutes", []string{"--config", cfg, "--window", "1.5"}, nil, 90 * time.Second, 10 * time.Minute, 30 * time.Second},
		{"grace set", []string{"--config", cfg, "--grace", "0s"}, nil, 20 * time.Minute, 0, 30 * time.Second},
		{"grace in the file", []string{"--config", writeConfig(t, "[watch]\ngrace = \"1h\"\n")}, nil, 30 * time.Minute, time.Hour, 30 * time.Second},
		{"grace flag over the file", []string{"--config", writeConfig(t, "[watch]\ngrace = \"1h\"\n"), "--grace", "5m"}, nil, 30 * time.Minute, 5 * time.Minute, 30 * time.Second},
		{"short job window shortens the default period and the grace", []string{"--config", empty}, []string{"VIGIL_HANG_DETECT_TIME", "2"}, 2 * time.Minute, 2 * time.Minute, 20 * time.Second},
		{"short window, tiny", []string{"--config", empty, "--window", "3s"}, nil, 3 * time.Second, 10 * time.Minute, time.Second},
		{"period from the file stays", []string{"--config", cfg, "--window", "2m"}, nil, 2 * time.Minute, 10 * time.Minute, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			inv, code := parseArgs(tc.args, env(tc.env...), io.Discard, &stderr)
			if code != -1 {
				t.Fatalf("code %d: %s", code, stderr.String())
			}
			s := inv.settings.Final()
			if s.Window != tc.window || s.Grace != tc.grace || s.Period != tc.period {
				t.Errorf("window %v grace %v period %v; want %v %v %v", s.Window, s.Grace, s.Period, tc.window, tc.grace, tc.period)
			}
		})
	}

	inv, code := parseArgs([]string{"--config", cfg, "--action", "cancel", "--io-bytes", "1", "--mail", "--comment=false",
		"--webhook-url", "https://hooks.example.org/x"}, env(), io.Discard, os.Stderr)
	if code != -1 {
		t.Fatal(code)
	}
	s := inv.settings
	if s.Action != "cancel" || s.IOBytes != 1 || s.MaxRequeues != 3 || s.WebhookURL != "https://hooks.example.org/x" || !s.Mail || s.Comment {
		t.Errorf("settings = %+v", s)
	}
}

func TestUsageErrors(t *testing.T) {
	bad := writeConfig(t, "[watch]\nwindow = \"20m\"\nperiods = \"30s\"\n")
	badValue := writeConfig(t, "[watch]\n\naction = \"reboot\"\n")
	shortPolicy := writeConfig(t, "[policy]\nmin_hang_time = \"1s\"\n")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string // in stderr
		code int
	}{

		{"unknown flag", []string{"--windw", "3"}, nil, "flag provided but not defined", exitUsage},
		{"stray argument", []string{"now"}, nil, "unexpected arguments", exitUsage},
		{"replay without file", []string{"replay"}, nil, "one trace file", exitUsage},
		{"bad env", nil, []string{"VIGIL_HANG_DETECT_TIME", "soon"}, "VIGIL_HANG_DETECT_TIME", exitUsage},
		{"negative env", nil, []string{"VIGIL_HANG_DETECT_TIME", "-5"}, "must be positive", exitUsage},
		{"bad window flag", []string{"--window", "x"}, nil, `flag --window="x": bad override: bad detection time`, exitUsage},
		{"missing explicit config", []string{"--config", "/nonexistent/vigil.toml"}, nil, "", -1},
		{"unknown key", []string{"--config", bad}, nil, "watch.periods", exitUsage},
		{"bad value names the line", []string{"--config", badValue}, nil, ":3: watch.action", exitUsage},
		{"bad action flag", []string{"--action", "drain"}, nil, `flag --action="drain": invalid value: "drain": want "notify" (or "none"), "cancel", "requeue" or "requeue-exclude" (see vigil-watch --help)`, exitUsage},
		{"period too long", []string{"--window", "10s", "--period", "8s"}, nil, `flag --period="8s": invalid value: 8s`, exitUsage},
		{"window too short for a 1s period", []string{"--window", "1s"}, nil, `flag --window="1s": invalid value`, exitUsage},
		{"bad webhook", []string{"--webhook-url", "hooks.example.org"}, nil, `flag --webhook-url="hooks.example.org": invalid value`, exitUsage},
		{"env window too short", []string{"--config", shortPolicy}, []string{"VIGIL_HANG_DETECT_TIME", "1s"}, `environment VIGIL_HANG_DETECT_TIME="1s": invalid value`, exitUsage},
		{"bad log level", []string{"--log-level", "loud"}, nil, "--log-level", exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			_, code := parseArgs(tc.args, env(tc.env...), io.Discard, &stderr)
			if tc.name == "missing explicit config" {
				if code != exitUsage || !strings.Contains(stderr.String(), "no such file") {
					t.Errorf("code %d, stderr %q: want a usage error naming the missing file", code, stderr.String())
				}
				return
			}
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("code %d, want %d; stderr %q lacks %q", code, tc.code, stderr.String(), tc.want)
			}
			if n := strings.Count(stderr.String(), "\n"); n != 1 {
				t.Errorf("%d lines on stderr, want one:\n%s", n, stderr.String())
			}
			if len(tc.args) > 0 && strings.HasPrefix(tc.args[0], "--") && tc.args[0] != "--config" &&
				(strings.Contains(stderr.String(), config.DefaultPath) || !strings.Contains(stderr.String(), "(see vigil-watch --help)")) {
				t.Errorf("a flag error names the default config or lacks the pointer to --help: %q", stderr.String())
			}
		})
	}
}

// TestHelpOnStdout: --help prints the manual on stdout and exits 0;
// nothing goes to stderr.
func TestHelpOnStdout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "VIGIL_HANG_DETECT_TIME"},
		{[]string{"-h"}, "EXIT STATUS"},
		{[]string{"replay", "--help"}, "vigil-watch replay - run the hang rule offline"},
	} {
		var stdout, stderr bytes.Buffer
		code := realMain(context.Background(), tc.args, env(), &stdout, &stderr)
		if code != exitOK || !strings.Contains(stdout.String(), tc.want) || stderr.Len() != 0 {
			t.Errorf("%v: exit %d, stdout lacks %q or stderr not empty: %q", tc.args, code, tc.want, stderr.String())
		}
	}
}

// TestActionNames: vigil-watch takes the action names the job's
// VIGIL_HANG_ACTION and the SPANK option take.
func TestActionNames(t *testing.T) {
	for _, a := range []string{"notify", "none", "cancel", "requeue"} {
		var stderr bytes.Buffer
		inv, code := parseArgs([]string{"--config", writeConfig(t, ""), "--action", a}, env(), io.Discard, &stderr)
		if code != -1 {
			t.Errorf("--action %s: exit %d: %s", a, code, stderr.String())
			continue
		}
		var r policy.Request
		if err := r.Set(policy.OptHangAction, a); err != nil {
			t.Errorf("--vigil-hang-action=%s refused: %v", a, err)
		}
		if c, err := action.ParseControl(inv.settings.Action); err != nil || string(c) != policy.WatchAction(r.HangAction) {
			t.Errorf("--action %s gave %q", a, inv.settings.Action)
		}
	}
}

func TestHelpIsComplete(t *testing.T) {
	var stdout bytes.Buffer
	if code := realMain(context.Background(), []string{"--help"}, env(), &stdout, io.Discard); code != exitOK {
		t.Fatalf("--help exit %d", code)
	}
	help := stdout.String()
	for _, want := range []string{"SYNOPSIS", "The rule:", "OPTIONS", "ENVIRONMENT", "EXAMPLES", "EXIT STATUS",
		"srun --overlap --ntasks-per-node=1 vigil-watch &", "-window", "-record", "-accel-trace", "-dry-run", "-webhook-url",
		"-action", "-max-requeues", "-mail", "replay"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestNotInJob(t *testing.T) {
	var stderr bytes.Buffer
	code := realMain(context.Background(), []string{"--config", "/nonexistent"}, env(), &bytes.Buffer{}, &stderr)
	if code != exitUsage {
		t.Errorf("explicit missing config: exit %d", code)
	}
	stderr.Reset()
	code = realMain(context.Background(), nil, env("VIGIL_HANG_DETECT_TIME", "5"), &bytes.Buffer{}, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), "must run inside a Slurm job") {
		t.Errorf("outside a job: exit %d, stderr %q", code, stderr.String())
	}
}

// flatTrace writes a trace of one host whose I/O stops after writeFor and
// whose one device sits at 100% and 80 W throughout.
func flatTrace(t *testing.T, host string, n int, period, writeFor time.Duration) string {
	t.Helper()
	var b bytes.Buffer
	w := trace.NewWriter(&b)
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var wchar, cpu uint64
	for i := range n {
		at := time.Duration(i) * period
		if at < writeFor {
			wchar += 50 << 20
			cpu += uint64(period/time.Microsecond) * (1 + uint64(i%3))
		}
		if err := w.Write(trace.Sample{Time: t0.Add(at), Host: host, Job: "42", IO: trace.IO{WChar: wchar}, CPUUsec: cpu, Procs: 4,
			Accel: []trace.Accel{{ID: "0", Util: 100, MemUsedMiB: 30000, PowerW: 80}}}); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReplay(t *testing.T) {
	p := flatTrace(t, "gpu01", 120, time.Minute, 30*time.Minute)
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{"replay", "--config", "/nonexistent-ok-for-replay-too", p}, env(), &stdout, &stderr)
	if code != exitUsage {
		t.Errorf("replay with a missing explicit config: exit %d", code)
	}
	stdout.Reset()
	stderr.Reset()
	code = realMain(context.Background(), []string{"replay", "--window", "10m", "--period", "1m", p}, env("VIGIL_HANG_DETECT_TIME", "1000"), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("replay exit %d: %s", code, stderr.String())
	}
	var events []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("replay printed %q: %v", line, err)
		}
		events = append(events, ev)
	}
	var hung map[string]any
	for _, ev := range events {
		if ev["event"] == "hung" {
			hung = ev
			break
		}
	}
	if hung == nil {
		t.Fatalf("replay found no hang in a trace flat after 30m: %s", stdout.String())
	}
	// The I/O stops at 29m; a 10m window (the flag, not the environment's
	// 1000 minutes) is judged from 40m on.
	at, _ := time.Parse(time.RFC3339, hung["time"].(string))
	if got := at.Sub(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)); got < 39*time.Minute || got > 42*time.Minute {
		t.Errorf("hung at +%v, want about +40m", got)
	}
	if hung["host"] != "gpu01" {
		t.Errorf("hung event %v", hung)
	}

	stderr.Reset()
	if code := realMain(context.Background(), []string{"replay", "/nonexistent/trace"}, env(), &stdout, &stderr); code != exitError {
		t.Errorf("replay of a missing file: exit %d", code)
	}
}

// TestReplayAfterFlags: the replay subcommand may follow the flags
// ("vigil-watch --config X replay FILE"); a flag's value named replay is
// not the subcommand.
func TestReplayAfterFlags(t *testing.T) {
	conf := writeConfig(t, "[watch]\nwindow = \"20m\"\n")
	for _, tc := range []struct {
		args   []string
		replay bool
		files  []string
	}{
		{[]string{"replay", "a.jsonl"}, true, []string{"a.jsonl"}},
		{[]string{"--config", conf, "replay", "a.jsonl"}, true, []string{"a.jsonl"}},
		{[]string{"--config=" + conf, "replay", "--window", "10m", "-"}, true, []string{"-"}},
		{[]string{"--dry-run", "--record", "replay"}, false, nil},
	} {
		inv, code := parseArgs(tc.args, env(), io.Discard, io.Discard)
		if code != -1 || inv.replay != tc.replay || strings.Join(inv.files, " ") != strings.Join(tc.files, " ") {
			t.Errorf("parseArgs(%q) = replay %v files %q code %d, want replay %v files %q", tc.args, inv.replay, inv.files, code, tc.replay, tc.files)
		}
	}
	if inv, _ := parseArgs([]string{"--config", conf, "replay", "a.jsonl"}, env(), io.Discard, io.Discard); inv.settings.Window != 20*time.Minute {
		t.Errorf("replay after --config: window %v, want the file's 20m", inv.settings.Window)
	}
}

// TestConfigReadOnce: vigil-watch parses its config file once and decodes
// [watch] and [policy] once, flags and the job's environment included.
func TestConfigReadOnce(t *testing.T) {
	cfg := writeConfig(t, "[watch]\nwindow = \"20m\"\n[policy]\nmax_hang_time = \"2h\"\n")
	parses, decodes := config.ReadCounts()
	var stderr bytes.Buffer
	if _, code := parseArgs([]string{"--config", cfg, "--grace", "1m"}, env("VIGIL_HANG_DETECT_TIME", "45"), io.Discard, &stderr); code != -1 {
		t.Fatalf("code %d: %s", code, stderr.String())
	}
	p, d := config.ReadCounts()
	if p-parses != 1 || d["watch"]-decodes["watch"] != 1 || d["policy"]-decodes["policy"] != 1 {
		t.Errorf("parsed %d times, decoded [watch] %d and [policy] %d times; want once each",
			p-parses, d["watch"]-decodes["watch"], d["policy"]-decodes["policy"])
	}
}
