package benchmarks

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config"
)

func TestMain(m *testing.M) {
	if IsChild(os.Args) {
		os.Exit(ChildMain(os.Args, os.Stdin, os.NewFile(3, "result"), os.Stderr))
	}
	os.Exit(m.Run())
}

// fakeCheck is a configurable in-process or isolated check for tests.
type fakeCheck struct {
	name     string
	kind     Kind
	isolated bool
	run      func(ctx context.Context, env *Env) Result
}

func (f *fakeCheck) Spec() Descriptor {
	return Descriptor{Name: f.name, Kind: f.kind, Isolated: f.isolated, Default: true, Description: "test check " + f.name}
}
func (f *fakeCheck) Run(ctx context.Context, e *Env) Result { return f.run(ctx, e) }

var flakyCalls int

func init() {
	Register(&fakeCheck{name: "test-child-env", isolated: true, run: func(ctx context.Context, e *Env) Result {
		_, hasDeadline := ctx.Deadline()
		return Result{Status: StatusPass, Values: []Value{{Name: "gres", Value: float64(e.GresGPUs)}},
			Message: e.Node + "/" + e.JobID + "/" + strconv.FormatBool(hasDeadline) + "/" + strconv.FormatBool(InChild) + "/" + strconv.FormatBool(e.DryRun)}
	}})
	Register(&fakeCheck{name: "test-iso-ok", isolated: true, run: func(ctx context.Context, e *Env) Result {
		return Result{Status: StatusPass, Message: strconv.Itoa(os.Getpid())}
	}})
	Register(&fakeCheck{name: "test-flaky-perf", kind: KindPerf, run: func(ctx context.Context, e *Env) Result {
		flakyCalls++
		if flakyCalls < 3 {
			return Result{Status: StatusFail, Reason: "TooSlow"}
		}
		return Result{Status: StatusPass}
	}})
	Register(&fakeCheck{name: "test-fail-health", run: func(ctx context.Context, e *Env) Result {
		flakyCalls++
		return Result{Status: StatusFail, Reason: "Broken", Device: "gpu1"}
	}})
	Register(&fakeCheck{name: "test-inproc-hang", run: func(ctx context.Context, e *Env) Result {
		time.Sleep(time.Hour)
		return Result{}
	}})
	Register(&fakeCheck{name: "test-inproc-panic", run: func(ctx context.Context, e *Env) Result {
		panic("boom")
	}})
	Register(&fakeCheck{name: "test-bad-status", run: func(ctx context.Context, e *Env) Result {
		return Result{Status: "maybe"}
	}})
}

func mustLookup(t *testing.T, names ...string) []Check {
	t.Helper()
	var cs []Check
	for _, n := range names {
		c, ok := Lookup(n)
		if !ok {
			t.Fatalf("check %q not registered", n)
		}
		cs = append(cs, c)
	}
	return cs
}

func TestChildGetsEnvAndDeadline(t *testing.T) {
	r := &CheckRunner{Env: &Env{Node: "n1", JobID: "42", GresGPUs: 8, DryRun: true}, Timeout: func(string) time.Duration { return 20 * time.Second }}
	out := r.Run(context.Background(), mustLookup(t, "test-child-env"))
	res := out.Results[0]
	if res.Status != StatusPass || res.Message != "n1/42/true/true/true" || res.Values[0].Value != 8 || res.Attempts != 1 {
		t.Fatalf("got %+v", res)
	}
	if res.Duration <= 0 {
		t.Errorf("duration %v", res.Duration)
	}
}

func TestChildHangIsKilledAtDeadline(t *testing.T) {
	pidfile := t.TempDir() + "/pid"
	r := &CheckRunner{ChildEnv: []string{FaultEnv + "=hang", FaultPIDFileEnv + "=" + pidfile},
		Timeout: func(string) time.Duration { return 1500 * time.Millisecond }}
	t0 := time.Now()
	out := r.Run(context.Background(), mustLookup(t, FaultCheckName))
	if el := time.Since(t0); el > 5*time.Second {
		t.Fatalf("runner took %v for a 1.5s deadline", el)
	}
	res := out.Results[0]
	if res.Status != StatusFail || res.Reason != ReasonTimedOut {
		t.Fatalf("got %+v, want fail %s", res, ReasonTimedOut)
	}
	if out.BudgetExpired {
		t.Error("budget flagged as expired")
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("hang mode left no pid file: %v", err)
	}
	pid, _ := strconv.Atoi(string(b))
	// The grandchild was in the check's process group and must be gone
	// (a zombie at most, until its reaper collects it).
	deadline := time.Now().Add(3 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("grandchild %d survived the group kill", pid)
	}
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

func TestChildCrashIsUnknown(t *testing.T) {
	r := &CheckRunner{ChildEnv: []string{FaultEnv + "=crash"}}
	res := r.Run(context.Background(), mustLookup(t, FaultCheckName)).Results[0]
	if res.Status != StatusUnknown || res.Reason != ReasonCrashed || !strings.Contains(res.Message, "injected crash") {
		t.Fatalf("got %+v", res)
	}
}

func TestChildNotStarted(t *testing.T) {
	r := &CheckRunner{Exe: "/nonexistent/vigil"}
	res := r.Run(context.Background(), mustLookup(t, FaultCheckName)).Results[0]
	if res.Status != StatusUnknown || res.Reason != ReasonNotStarted {
		t.Fatalf("got %+v", res)
	}
}

func TestChildUnknownMode(t *testing.T) {
	r := &CheckRunner{ChildEnv: []string{FaultEnv + "=fail"}}
	res := r.Run(context.Background(), mustLookup(t, FaultCheckName)).Results[0]
	if res.Status != StatusFail || res.Reason != "FaultInjected" || res.Device != "gpu0" {
		t.Fatalf("got %+v", res)
	}
}

func TestChildReadsConfig(t *testing.T) {
	path := t.TempDir() + "/vigil.toml"
	if err := os.WriteFile(path, []byte("[checks.fault-inject]\nmode = \"unknown\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &CheckRunner{ConfigPath: path}
	res := r.Run(context.Background(), mustLookup(t, FaultCheckName)).Results[0]
	if res.Status != StatusUnknown || res.Reason != "FaultInjected" {
		t.Fatalf("got %+v", res)
	}
}

// The child decodes the document the parent parsed: it never opens a
// file, so the file changing (or going) after the parent read it changes
// nothing.
func TestChildGetsParsedConfig(t *testing.T) {
	path := t.TempDir() + "/vigil.toml"
	f, err := config.Parse(strings.NewReader("[checks.fault-inject]\nmode = \"unknown\"\n"), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("[checks.fault-inject]\nmode = \"fail\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &CheckRunner{Config: f, ConfigPath: path}
	res := r.Run(context.Background(), mustLookup(t, FaultCheckName)).Results[0]
	if res.Status != StatusUnknown || res.Reason != "FaultInjected" {
		t.Fatalf("got %+v", res)
	}
}

// TestChildSpecCarriesConfig: a child gets its checks' sections of the
// document its parent parsed, and nothing else of it (not [notify], not
// another check's); they decode to the parent's values.
func TestChildSpecCarriesConfig(t *testing.T) {
	doc := "[notify]\nwebhook_url = \"https://hooks.example/secret\"\n[checks.fault-inject]\nmode = \"pass\"\ndelay = \"3s\"\n[checks.disk]\nmin_free_gib = 5\n"
	f, err := config.Parse(strings.NewReader(doc), "/etc/vigil/vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := (&CheckRunner{Config: f}).childSpec([]string{FaultCheckName})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(spec.ConfigName, "/etc/vigil/vigil.toml") || strings.Contains(spec.Config, "hooks.example") || strings.Contains(spec.Config, "disk") {
		t.Errorf("spec %+v: want only [checks.fault-inject]", spec)
	}
	sub, err := config.Parse(strings.NewReader(spec.Config), spec.ConfigName)
	if err != nil {
		t.Fatalf("the child's sections do not parse: %v\n%s", err, spec.Config)
	}
	var inParent, inChild FaultSettings
	if err := errors.Join(f.Decode("checks."+FaultCheckName, &inParent), sub.Decode("checks."+FaultCheckName, &inChild)); err != nil {
		t.Fatal(err)
	}
	if inParent != inChild || inChild.Mode != "pass" || inChild.Delay != 3*time.Second {
		t.Errorf("the child decodes %+v, the parent %+v", inChild, inParent)
	}
	spec, _ = (&CheckRunner{}).childSpec([]string{FaultCheckName})
	if spec.ConfigName != "" || spec.Config != "" {
		t.Errorf("defaults: spec %+v", spec)
	}
	r := &CheckRunner{ConfigPath: t.TempDir() + "/missing.toml"}
	r.loadConfig()
	if _, err := r.childSpec([]string{FaultCheckName}); err == nil {
		t.Error("a config file that does not load gave a spec")
	}
}

// A document the child cannot parse is an error naming the file and line,
// not a child that runs with defaults.
func TestChildMainBadConfig(t *testing.T) {
	var result, stderr bytes.Buffer
	spec := `{"checks":["fault-inject"],"config_name":"/etc/vigil/vigil.toml","config":"[checks\n"}`
	code := ChildMain([]string{"vigil", ChildArg, FaultCheckName}, strings.NewReader(spec), &result, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "/etc/vigil/vigil.toml:") || result.Len() != 0 {
		t.Errorf("exit %d, stderr %q, result %q", code, stderr.String(), result.String())
	}
}

func TestChildConfigDoesNotLoad(t *testing.T) {
	r := &CheckRunner{ConfigPath: t.TempDir() + "/missing.toml"}
	res := r.Run(context.Background(), mustLookup(t, FaultCheckName)).Results[0]
	if res.Status != StatusUnknown || res.Reason != ReasonNotStarted || !strings.Contains(res.Message, "missing.toml") {
		t.Fatalf("got %+v", res)
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name      string
		check     string
		retries   int
		status    Status
		attempts  int
		callsMade int
	}{
		{"perf passes on third try", "test-flaky-perf", 2, StatusPass, 3, 3},
		{"perf fails without retries", "test-flaky-perf", 0, StatusFail, 1, 1},
		{"health facts are not retried", "test-fail-health", 5, StatusFail, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flakyCalls = 0
			r := &CheckRunner{Retries: tt.retries}
			res := r.Run(context.Background(), mustLookup(t, tt.check)).Results[0]
			if res.Status != tt.status || res.Attempts != tt.attempts || flakyCalls != tt.callsMade {
				t.Fatalf("got %+v after %d calls", res, flakyCalls)
			}
		})
	}
}

func TestInProcessFaults(t *testing.T) {
	tests := []struct {
		check  string
		status Status
		reason string
	}{
		{"test-inproc-hang", StatusFail, ReasonTimedOut},
		{"test-inproc-panic", StatusUnknown, ReasonPanicked},
		{"test-bad-status", StatusUnknown, ReasonBadResult},
	}
	for _, tt := range tests {
		t.Run(tt.check, func(t *testing.T) {
			r := &CheckRunner{Timeout: func(string) time.Duration { return 100 * time.Millisecond }}
			res := r.Run(context.Background(), mustLookup(t, tt.check)).Results[0]
			if res.Status != tt.status || res.Reason != tt.reason {
				t.Fatalf("got %+v", res)
			}
		})
	}
}

func TestBudgetExpires(t *testing.T) {
	r := &CheckRunner{Budget: 300 * time.Millisecond, Timeout: func(string) time.Duration { return time.Minute }}
	t0 := time.Now()
	out := r.Run(context.Background(), mustLookup(t, "test-inproc-hang", "test-fail-health"))
	if el := time.Since(t0); el > 2*time.Second {
		t.Fatalf("run took %v with a 300ms budget", el)
	}
	if !out.BudgetExpired {
		t.Fatal("budget not flagged")
	}
	want := []string{ReasonBudgetExpired, ReasonBudgetExpired}
	for i, res := range out.Results {
		if res.Status != StatusUnknown || res.Reason != want[i] {
			t.Errorf("result %d: %+v", i, res)
		}
	}
}

func TestCanceledRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := (&CheckRunner{}).Run(ctx, mustLookup(t, "test-fail-health"))
	if out.BudgetExpired || out.Results[0].Reason != ReasonCanceled {
		t.Fatalf("got %+v", out)
	}
}

func TestProgressCallbacks(t *testing.T) {
	var started, done []string
	r := &CheckRunner{Retries: 1,
		OnStart: func(n string, a int) { started = append(started, n+"#"+strconv.Itoa(a)) },
		OnDone:  func(res Result) { done = append(done, res.Check) }}
	flakyCalls = 0
	r.Run(context.Background(), mustLookup(t, "test-flaky-perf"))
	if strings.Join(started, ",") != "test-flaky-perf#1,test-flaky-perf#2" || strings.Join(done, ",") != "test-flaky-perf" {
		t.Fatalf("started %v done %v", started, done)
	}
}

func TestBatchSurvivesHangAndCrash(t *testing.T) {
	tests := []struct {
		mode   string
		status Status
		reason string
	}{
		{"hang", StatusFail, ReasonTimedOut},
		{"crash", StatusUnknown, ReasonCrashed},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			var started []string
			r := &CheckRunner{ChildEnv: []string{FaultEnv + "=" + tt.mode},
				Timeout: func(string) time.Duration { return time.Second },
				OnStart: func(n string, _ int) { started = append(started, n) }}
			out := r.Run(context.Background(), mustLookup(t, "test-iso-ok", FaultCheckName, "test-child-env", "test-iso-ok"))
			want := []Status{StatusPass, tt.status, StatusPass, StatusPass}
			for i, res := range out.Results {
				if res.Status != want[i] {
					t.Errorf("result %d: %+v, want %s", i, res, want[i])
				}
			}
			if out.Results[1].Reason != tt.reason {
				t.Errorf("faulty check: %+v", out.Results[1])
			}
			// The first check and the ones after the fault ran in different children.
			if out.Results[0].Message == out.Results[3].Message {
				t.Errorf("no new child after the fault: pids %s and %s", out.Results[0].Message, out.Results[3].Message)
			}
			if len(started) != 4 {
				t.Errorf("started %v", started)
			}
		})
	}
}

func TestBatchSharesOneChild(t *testing.T) {
	out := (&CheckRunner{}).Run(context.Background(), mustLookup(t, "test-iso-ok", "test-child-env", "test-iso-ok"))
	_ = out
	// test-iso-ok runs twice in the same child: same pid... it is listed
	// twice, so compare its two results.
	if out.Results[0].Message != out.Results[2].Message {
		t.Fatalf("checks ran in different children: %s vs %s", out.Results[0].Message, out.Results[2].Message)
	}
}
