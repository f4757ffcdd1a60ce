package lifecycle

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/ostest"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

func TestMain(m *testing.M) {
	if benchmarks.IsChild(os.Args) {
		os.Exit(benchmarks.ChildMain(os.Args, os.Stdin, os.NewFile(3, "result"), os.Stderr))
	}
	os.Exit(m.Run())
}

type check struct {
	name string
	kind benchmarks.Kind
	run  func(ctx context.Context, e *benchmarks.Env) benchmarks.Result
}

func (c check) Spec() benchmarks.Descriptor {
	return benchmarks.Descriptor{Name: c.name, Kind: c.kind, Description: "test check " + c.name,
		Settings: func() any {
			return &struct {
				Level int `toml:"level"`
			}{}
		}}
}
func (c check) Run(ctx context.Context, e *benchmarks.Env) benchmarks.Result { return c.run(ctx, e) }

var lastEnv *benchmarks.Env

func init() {
	benchmarks.Register(check{name: "t-pass", run: func(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
		lastEnv = e
		return benchmarks.Result{Status: benchmarks.StatusPass}
	}})
	benchmarks.Register(check{name: "t-pass2", run: func(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
		return benchmarks.Result{Status: benchmarks.StatusPass}
	}})
	benchmarks.Register(check{name: "t-fail", run: func(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
		return benchmarks.Result{Status: benchmarks.StatusFail, Reason: "Broken", Device: "gpu0", Message: "gpu0 is broken"}
	}})
	benchmarks.Register(check{name: "t-unknown", run: func(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
		return benchmarks.Result{Status: benchmarks.StatusUnknown, Reason: "NoLibrary"}
	}})
	benchmarks.Register(check{name: "t-hang", run: func(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
		time.Sleep(time.Hour)
		return benchmarks.Result{}
	}})
	benchmarks.Register(check{name: "t-perf", kind: benchmarks.KindPerf, run: func(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
		return benchmarks.Result{Status: benchmarks.StatusPass}
	}})
}

// fakeSlurm records calls and applies drains/resumes to one node's state
// the way slurm.Client does (someone else's drain is ErrNotOurs).
type fakeSlurm struct {
	node    slurm.Node
	calls   []string
	nodeErr error
	gres    int
}

func (f *fakeSlurm) Node(ctx context.Context, name string) (slurm.Node, error) {
	f.calls = append(f.calls, "node "+name)
	return f.node, f.nodeErr
}

func (f *fakeSlurm) Drain(ctx context.Context, node, reason string) error {
	f.calls = append(f.calls, "drain "+node+" "+reason)
	if (f.node.Reason != "" && !f.node.OwnedByVigil()) || f.node.ForeignState() != "" {
		return fmt.Errorf("slurm: not draining %s: %w", node, slurm.ErrNotOurs)
	}
	f.node.Flags, f.node.Reason = []string{"DRAIN"}, reason
	return nil
}

func (f *fakeSlurm) Resume(ctx context.Context, node string) (bool, error) {
	f.calls = append(f.calls, "resume "+node)
	if !f.node.Drained() || !f.node.OwnedByVigil() {
		return false, nil
	}
	f.node.Flags, f.node.Reason = nil, ""
	return true, nil
}

func (f *fakeSlurm) Requeue(ctx context.Context, id string, hold bool) error {
	f.calls = append(f.calls, fmt.Sprintf("requeue %s hold=%v", id, hold))
	return nil
}

func (f *fakeSlurm) NodeGresGPUs(ctx context.Context, node string) (int, error) {
	f.calls = append(f.calls, "gres "+node)
	return f.gres, nil
}

func (f *fakeSlurm) mutations() []string {
	var out []string
	for _, c := range f.calls {
		if !strings.HasPrefix(c, "node ") && !strings.HasPrefix(c, "gres ") {
			out = append(out, c)
		}
	}
	return out
}

type env map[string]string

func (e env) lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }

// setup writes a config with the given [prolog] lines (report paths added).
func setup(t *testing.T, prolog string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "vigil.toml")
	body := fmt.Sprintf("[prolog]\nreport_dir = %q\ntextfile_dir = %q\nrun_dir = %q\n%s\n",
		filepath.Join(dir, "reports"), dir, filepath.Join(dir, "run"), prolog)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, conf
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(&bytes.Buffer{})
	return l
}

func runWith(t *testing.T, conf string, mode decide.Mode, fs *fakeSlurm, e env, mut func(*Options)) Outcome {
	t.Helper()
	if e == nil {
		e = env{}
	}
	o := Options{Program: "vigil-test", Mode: mode, ConfigPath: conf, ConfigExplicit: true, Node: "n1",
		Lookup: e.lookup, Slurm: fs, Log: quietLog(), Root: t.TempDir(), StateDir: filepath.Join(filepath.Dir(conf), "state")}
	if mut != nil {
		mut(&o)
	}
	return Run(context.Background(), o)
}

func TestVerdictsAndActions(t *testing.T) {
	vigilDrained := slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "vigil: t-fail Broken gpu0"}
	adminDrained := slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "admin: bad fan"}
	idle := slurm.Node{Name: "n1", State: "IDLE"}
	drained := func(reason string) slurm.Node {
		return slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: reason}
	}
	passDrained := drained("vigil: t-pass Broken gpu0")
	goneDrained := drained("vigil: t-gone Broken")
	twoDrained := drained("vigil: t-pass Broken gpu0 +t-fail:Broken@gpu0")
	bothPassDrained := drained("vigil: t-pass Broken gpu0 +t-pass2")
	passAndGoneDrained := drained("vigil: t-pass Broken +t-gone")
	downNode := slurm.Node{Name: "n1", State: "DOWN", Reason: "admin: rack power"}
	tests := []struct {
		name      string
		checks    string
		mode      decide.Mode
		node      slurm.Node
		wantCode  int
		wantKind  string
		wantCalls []string
		wantNode  string // reason after the run
	}{
		{"fail drains", `"t-pass","t-fail"`, decide.ModeProlog, idle, decide.ExitFail, report.ActionDrain,
			[]string{"drain n1 vigil: t-fail Broken gpu0"}, "vigil: t-fail Broken gpu0"},
		{"fail keeps an admin drain", `"t-fail"`, decide.ModeProlog, adminDrained, decide.ExitFail, report.ActionKeep,
			[]string{"drain n1 vigil: t-fail Broken gpu0"}, "admin: bad fan"},
		{"unknown never drains", `"t-unknown"`, decide.ModeProlog, idle, decide.ExitOK, report.ActionNone, nil, ""},
		{"pass resumes vigil's drain for that check", `"t-pass"`, decide.ModeHealth, passDrained, decide.ExitOK, report.ActionResume,
			[]string{"resume n1"}, ""},
		{"a drain for a check the run did not run stays", `"t-pass"`, decide.ModeHealth, vigilDrained, decide.ExitFail, report.ActionStay,
			nil, "vigil: t-fail Broken gpu0"},
		{"the epilog keeps a drain for a check it did not run", `"t-pass"`, decide.ModeEpilog, vigilDrained, decide.ExitOK, report.ActionStay,
			nil, "vigil: t-fail Broken gpu0"},
		{"a drain for a check unknown to this build stays", `"t-pass"`, decide.ModeHealth, goneDrained, decide.ExitFail, report.ActionStay,
			nil, "vigil: t-gone Broken"},
		{"one of two checks lifted: the reason names the other", `"t-pass"`, decide.ModeHealth, twoDrained, decide.ExitFail, report.ActionStay,
			[]string{"drain n1 vigil: t-fail Broken gpu0"}, "vigil: t-fail Broken gpu0"},
		{"both checks of the reason passed: resumed", `"t-pass","t-pass2"`, decide.ModeHealth, bothPassDrained, decide.ExitOK, report.ActionResume,
			[]string{"resume n1"}, ""},
		{"a new failure keeps the checks still named", `"t-fail"`, decide.ModeHealth, passAndGoneDrained, decide.ExitFail, report.ActionDrain,
			[]string{"drain n1 vigil: t-fail Broken gpu0 +t-pass:Broken +t-gone"}, "vigil: t-fail Broken gpu0 +t-pass:Broken +t-gone"},
		{"health fail on a DOWN node drains nothing and says so", `"t-fail"`, decide.ModeHealth, downNode, decide.ExitNotDrained, report.ActionKeep,
			[]string{"drain n1 vigil: t-fail Broken gpu0"}, "admin: rack power"},
		{"health fail on an admin drain exits not drained", `"t-fail"`, decide.ModeHealth, adminDrained, decide.ExitNotDrained, report.ActionKeep,
			[]string{"drain n1 vigil: t-fail Broken gpu0"}, "admin: bad fan"},
		{"health fail drains and exits 1", `"t-fail"`, decide.ModeHealth, idle, decide.ExitFail, report.ActionDrain,
			[]string{"drain n1 vigil: t-fail Broken gpu0"}, "vigil: t-fail Broken gpu0"},
		{"pass leaves an admin drain", `"t-pass"`, decide.ModeHealth, adminDrained, decide.ExitOK, report.ActionKeep, nil, "admin: bad fan"},
		{"no resume while the draining check is unknown", `"t-unknown"`, decide.ModeHealth,
			slurm.Node{Name: "n1", Flags: []string{"DRAIN"}, Reason: "vigil: t-unknown Broken"}, decide.ExitFail, report.ActionStay, nil, "vigil: t-unknown Broken"},
		{"epilog drains but exits 0", `"t-fail"`, decide.ModeEpilog, idle, decide.ExitOK, report.ActionDrain,
			[]string{"drain n1 vigil: t-fail Broken gpu0"}, "vigil: t-fail Broken gpu0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, conf := setup(t, "checks = ["+tt.checks+"]")
			fs := &fakeSlurm{node: tt.node}
			out := runWith(t, conf, tt.mode, fs, nil, nil)
			if out.ExitCode != tt.wantCode || out.Report.Action.Kind != tt.wantKind {
				t.Fatalf("exit %d action %+v, want %d %s; notes %v", out.ExitCode, out.Report.Action, tt.wantCode, tt.wantKind, out.Report.Notes)
			}
			if got := fs.mutations(); strings.Join(got, "|") != strings.Join(tt.wantCalls, "|") {
				t.Fatalf("calls %q, want %q", got, tt.wantCalls)
			}
			if fs.node.Reason != tt.wantNode {
				t.Fatalf("node reason %q, want %q", fs.node.Reason, tt.wantNode)
			}
			if out.ReportPath == "" {
				t.Fatal("no report written")
			}
		})
	}
}

// TestBrokenConfigRecordsWhereTheLastValidOneSaid: a broken file never
// sends records to its own (or the default) paths: they go where the last
// valid config said, or nowhere.
func TestBrokenConfigRecordsWhereTheLastValidOneSaid(t *testing.T) {
	dir, conf := setup(t, `checks = ["t-pass"]`)
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	if out := runWith(t, conf, decide.ModeProlog, fs, nil, nil); !out.Report.Config.Valid || out.ReportPath == "" {
		t.Fatalf("valid run: %+v, report %q", out.Report.Config, out.ReportPath)
	}
	// The admin points the records elsewhere and breaks the file.
	other := filepath.Join(dir, "other")
	body := fmt.Sprintf("[prolog]\nreport_dir = %q\ntextfile_dir = %q\nretries = \"two\"\n", other, other)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runWith(t, conf, decide.ModeProlog, fs, nil, nil)
	if out.Report.Config.Valid || out.ExitCode != decide.ExitOK || !strings.HasPrefix(out.ReportPath, filepath.Join(dir, "reports")+"/") {
		t.Fatalf("report at %q, config %+v", out.ReportPath, out.Report.Config)
	}
	prom, err := os.ReadFile(filepath.Join(dir, "vigil-prolog.prom"))
	if err != nil || !strings.Contains(string(prom), `vigil_config_valid{mode="prolog"} 0`) {
		t.Fatalf("textfile at the last valid path (%v):\n%s", err, prom)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("the broken file's own paths were used: %v", err)
	}
	// A flag still wins over the remembered path.
	flagDir := t.TempDir()
	out = runWith(t, conf, decide.ModeProlog, fs, nil, func(o *Options) { o.Flags = map[string]string{"report_dir": flagDir} })
	if !strings.HasPrefix(out.ReportPath, flagDir+"/") {
		t.Fatalf("report at %q, want under the flag's %s", out.ReportPath, flagDir)
	}
	// Without a valid config before (a fresh state directory), nothing is
	// written: no report, no textfile, not even at the defaults.
	stateless := filepath.Join(dir, "fresh-state")
	out = runWith(t, conf, decide.ModeProlog, fs, nil, func(o *Options) { o.StateDir = stateless })
	if out.ReportPath != "" || out.Report.Config.Valid || !strings.Contains(strings.Join(out.Report.Notes, "\n"), "no report or textfile written") {
		t.Fatalf("report at %q, notes %v", out.ReportPath, out.Report.Notes)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("the broken file's own paths were used: %v", err)
	}
	if _, err := os.Stat(stateless); !os.IsNotExist(err) {
		t.Fatalf("a broken config wrote state: %v", err)
	}
}

func TestInvalidConfigChangesNothing(t *testing.T) {
	dir, conf := setup(t, "checks = [\"t-pass\"]")
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	runWith(t, conf, decide.ModeProlog, fs, nil, nil) // a valid run: it says where records go
	fs.calls = nil
	body, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(body), `checks = ["t-pass"]`, "checks = [\"t-fail\"]\nbugdet = \"1m\"", 1)
	if err := os.WriteFile(conf, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runWith(t, conf, decide.ModeProlog, fs, nil, nil)
	if out.ExitCode != decide.ExitOK || len(fs.calls) != 0 || len(out.Report.Results) != 0 {
		t.Fatalf("exit %d, calls %v, results %v", out.ExitCode, fs.calls, out.Report.Results)
	}
	if out.Report.Config.Valid || !strings.Contains(strings.Join(out.Report.Config.Errors, "\n"), "vigil.toml:6: prolog.bugdet: unknown key") {
		t.Fatalf("config info %+v", out.Report.Config)
	}
	prom, err := os.ReadFile(filepath.Join(dir, "vigil-prolog.prom"))
	if err != nil || !strings.Contains(string(prom), `vigil_config_valid{mode="prolog"} 0`) {
		t.Fatalf("textfile %s (%v)", prom, err)
	}
	// A dry run says so with its own exit code.
	out = runWith(t, conf, decide.ModeProlog, fs, nil, func(o *Options) { o.DryRun = true })
	if out.ExitCode != decide.ExitConfig {
		t.Fatalf("dry run exit %d", out.ExitCode)
	}
}

func TestConfigFileMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.toml")
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	e := env{"VIGIL_CHECKS": "t-pass", "VIGIL_REPORT_DIR": "", "VIGIL_TEXTFILE": ""}
	// The default path missing means defaults (here: only t-pass, no files).
	out := runWith(t, missing, decide.ModeHealth, fs, e, func(o *Options) {
		o.ConfigExplicit = false
		o.Flags = map[string]string{"report_dir": t.TempDir(), "textfile_dir": t.TempDir(), "run_dir": t.TempDir()}
	})
	if !out.Report.Config.Valid || out.Report.Config.Found || len(out.Report.Results) != 1 {
		t.Fatalf("default missing: %+v", out.Report)
	}
	// An explicit path that is missing is a config error (its report goes
	// to the paths given by flag).
	out = runWith(t, missing, decide.ModeHealth, fs, e, func(o *Options) {
		o.Flags = map[string]string{"report_dir": t.TempDir(), "textfile_dir": t.TempDir(), "run_dir": t.TempDir()}
	})
	if out.Report.Config.Valid || out.ExitCode != decide.ExitOK {
		t.Fatalf("explicit missing: %+v", out.Report.Config)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	dir, conf := setup(t, `checks = ["t-fail"]`)
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	var buf bytes.Buffer
	out := runWith(t, conf, decide.ModeProlog, fs, nil, func(o *Options) { o.DryRun = true; o.Out = &buf })
	if out.ExitCode != decide.ExitFail || len(fs.calls) != 0 || out.Report.Action.Done || out.ReportPath != "" {
		t.Fatalf("exit %d calls %v action %+v path %q", out.ExitCode, fs.calls, out.Report.Action, out.ReportPath)
	}
	if _, err := os.Stat(filepath.Join(dir, "reports")); err == nil {
		t.Fatal("a dry run wrote the report directory")
	}
	if !strings.Contains(buf.String(), `would drain n1 with reason "vigil: t-fail Broken gpu0" (dry run)`) {
		t.Fatalf("output:\n%s", buf.String())
	}
}

func TestBudgetExpiry(t *testing.T) {
	tests := []struct {
		action    string
		wantCode  int
		wantCalls string
	}{
		{"fail", decide.ExitFail, "drain n1 vigil: budget BudgetExpired|requeue 77 hold=false"},
		{"hold", decide.ExitOK, "requeue 77 hold=true"},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			_, conf := setup(t, fmt.Sprintf("checks = [\"t-hang\", \"t-pass\"]\nbudget = \"1s\"\non_budget_expiry = %q", tt.action))
			fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
			t0 := time.Now()
			out := runWith(t, conf, decide.ModeProlog, fs, env{"SLURM_JOB_ID": "77"}, nil)
			if el := time.Since(t0); el > 3*time.Second {
				t.Fatalf("took %v with a 1s budget", el)
			}
			if out.ExitCode != tt.wantCode || strings.Join(fs.mutations(), "|") != tt.wantCalls || !out.Report.BudgetExpired {
				t.Fatalf("exit %d calls %v report %+v", out.ExitCode, fs.calls, out.Report)
			}
		})
	}
}

func TestTimingAfterRequeue(t *testing.T) {
	_, conf := setup(t, "checks = [\"t-fail\"]\ntiming = \"after-requeue\"")
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	out := runWith(t, conf, decide.ModeProlog, fs, env{"SLURM_JOB_ID": "5", "SLURM_RESTART_COUNT": "0"}, nil)
	if out.ExitCode != decide.ExitOK || len(out.Report.Results) != 0 || out.Report.Skipped == "" {
		t.Fatalf("first run: %+v", out.Report)
	}
	out = runWith(t, conf, decide.ModeProlog, fs, env{"SLURM_JOB_ID": "5", "SLURM_RESTART_COUNT": "1"}, nil)
	if out.ExitCode != decide.ExitFail || len(out.Report.Results) != 1 {
		t.Fatalf("requeued run: %+v", out.Report)
	}
}

func TestOverridesPrecedence(t *testing.T) {
	_, conf := setup(t, "checks = [\"t-fail\"]")
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	// Environment overrides the file, flags override the environment.
	out := runWith(t, conf, decide.ModeProlog, fs, env{"VIGIL_CHECKS": "t-unknown"}, nil)
	if len(out.Report.Results) != 1 || out.Report.Results[0].Check != "t-unknown" {
		t.Fatalf("env: %+v", out.Report.Results)
	}
	out = runWith(t, conf, decide.ModeProlog, fs, env{"VIGIL_CHECKS": "t-unknown"}, func(o *Options) {
		o.Flags = map[string]string{"checks": "t-pass"}
	})
	if len(out.Report.Results) != 1 || out.Report.Results[0].Check != "t-pass" {
		t.Fatalf("flag: %+v", out.Report.Results)
	}
	out = runWith(t, conf, decide.ModeProlog, fs, env{"VIGIL_BUDGET": "soon"}, nil)
	if out.Report.Config.Valid {
		t.Fatal("a bad environment override was accepted")
	}
}

func TestSuiteHealthSkipsPerf(t *testing.T) {
	_, conf := setup(t, "checks = [\"t-pass\", \"t-perf\"]")
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	if out := runWith(t, conf, decide.ModeProlog, fs, nil, nil); len(out.Report.Results) != 2 {
		t.Fatalf("prolog full suite: %+v", out.Report.Results)
	}
	if out := runWith(t, conf, decide.ModeEpilog, fs, nil, nil); len(out.Report.Results) != 1 {
		t.Fatalf("epilog ran a performance probe: %+v", out.Report.Results)
	}
}

func TestEnvReachesChecks(t *testing.T) {
	_, conf := setup(t, "checks = [\"t-pass\"]")
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}, gres: 4}
	runWith(t, conf, decide.ModeProlog, fs, env{"SLURM_JOB_ID": "9", "SLURM_JOB_GPUS": "2,3"}, nil)
	if lastEnv == nil || lastEnv.Node != "n1" || lastEnv.JobID != "9" || lastEnv.GresGPUs != 4 || fmt.Sprint(lastEnv.Devices) != "[2 3]" {
		t.Fatalf("env %+v", lastEnv)
	}
	var level struct {
		Level int `toml:"level"`
	}
	if err := lastEnv.Settings(&level); err != nil {
		t.Fatal(err)
	}
}

func TestCheckSettingsValidated(t *testing.T) {
	_, conf := setup(t, "checks = [\"t-pass\"]\n[checks.t-pass]\nlevel = 2\nlevle = 3\n[checks.nope]\nx = 1\n[watch]\nwindow = \"5m\"")
	fs := &fakeSlurm{}
	out := runWith(t, conf, decide.ModeProlog, fs, nil, nil)
	errs := strings.Join(out.Report.Config.Errors, "\n")
	if !strings.Contains(errs, "checks.t-pass.levle: unknown key") || !strings.Contains(errs, "checks.nope.x: unknown key") || strings.Contains(errs, "watch.window") {
		t.Fatalf("errors:\n%s", errs)
	}
}

// fakeProcs serves holders and records signals; processes die on SIGTERM
// unless stubborn.
type fakeProcs struct {
	holders  []int
	stubborn map[int]bool
	alive    map[int]bool
	signals  []string
	asked    []string
}

func (f *fakeProcs) Holders(devs []string) ([]int, error) {
	f.asked = devs
	return f.holders, nil
}

func (f *fakeProcs) Signal(pid int, sig syscall.Signal) error {
	f.signals = append(f.signals, fmt.Sprintf("%d:%d", pid, int(sig)))
	if sig == syscall.SIGKILL || !f.stubborn[pid] {
		f.alive[pid] = false
	}
	return nil
}

func (f *fakeProcs) Alive(pid int) bool { return f.alive[pid] }

func TestEpilogKillsLeftoversAndCleans(t *testing.T) {
	dir, conf := setup(t, "checks = [\"t-pass\"]\n[epilog]\nkill_grace = \"1s\"")
	jobDir := filepath.Join(dir, "run", "jobs", "31")
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// 100 and 200 are the job's (its cgroup; its user's, in no job), 300
	// is root's device daemon and 400 another job's: those two are left.
	root := t.TempDir()
	ostest.ProcFixture(t, root, 100, 1000, "12:freezer:/slurm_n1/uid_1000/job_31/step_0\n")
	ostest.ProcFixture(t, root, 200, 1000, "0::/user.slice\n")
	ostest.ProcFixture(t, root, 300, 0, "0::/system.slice/nvidia-persistenced.service\n")
	ostest.ProcFixture(t, root, 400, 1000, "0::/system.slice/n1_slurmstepd.scope/job_77/step_0/user/task_0\n")
	p := &fakeProcs{holders: []int{100, 200, 300, 400}, stubborn: map[int]bool{200: true},
		alive: map[int]bool{100: true, 200: true, 300: true, 400: true}}
	var slept time.Duration
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	out := runWith(t, conf, decide.ModeEpilog, fs, env{"SLURM_JOB_ID": "31", "SLURM_JOB_GPUS": "1", "SLURM_JOB_UID": "1000"}, func(o *Options) {
		o.Root, o.Holders, o.Signaler, o.Sleep = root, p, p, func(d time.Duration) { slept += d }
	})
	if strings.Join(p.asked, ",") != root+"/dev/nvidia1,"+root+"/dev/davinci1" {
		t.Fatalf("asked for %v", p.asked)
	}
	if notes := strings.Join(out.Report.Notes, "\n"); !strings.Contains(notes, "left alone process 300 on the job's devices: it is not in the job's cgroup and runs as uid 0") ||
		!strings.Contains(notes, "left alone process 400 on the job's devices: it is in the cgroup of job 77") {
		t.Errorf("notes:\n%s", notes)
	}
	if strings.Join(p.signals, ",") != "100:15,200:15,200:9" || slept != time.Second {
		t.Fatalf("signals %v after %v", p.signals, slept)
	}
	if fmt.Sprint(out.Report.Action.Killed) != "[100 200]" || out.ExitCode != decide.ExitOK {
		t.Fatalf("report %+v", out.Report)
	}
	if _, err := os.Stat(jobDir); !os.IsNotExist(err) {
		t.Fatalf("per-job dir still there: %v", err)
	}
}

func TestProbeAccelerators(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if a := ProbeAccelerators(root); !a.Count.None() {
		t.Fatalf("empty root: %+v", a)
	}
	write("dev/nvidia0", "")
	write("dev/nvidiactl", "")
	write("sys/bus/pci/devices/0000:3b:00.0/vendor", "0x10de\n")
	write("sys/bus/pci/devices/0000:3b:00.0/class", "0x030200\n")
	write("sys/bus/pci/devices/0000:5e:00.0/vendor", "0x10de\n")
	write("sys/bus/pci/devices/0000:5e:00.0/class", "0x030200\n")
	write("sys/bus/pci/devices/0000:5f:00.0/vendor", "0x10de\n")
	write("sys/bus/pci/devices/0000:5f:00.0/class", "0x040300\n") // audio function
	write("sys/bus/pci/devices/0000:c1:00.0/vendor", "0x19e5\n")
	write("sys/bus/pci/devices/0000:c1:00.0/class", "0x120000\n")
	a := ProbeAccelerators(root)
	if a.Count["nvidia"] != 2 || a.Count["ascend"] != 1 {
		t.Fatalf("%+v", a)
	}
}
