package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// validateConf is a config whose prolog runs one health fact and whose
// deep suite ([idle]) runs checks.
func validateConf(t *testing.T, checks string) (dir, conf string) {
	t.Helper()
	dir, conf = setup(t, "checks = [\"t-pass\"]\nsuite = \"health\"\n")
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("[idle]\npartition = \"vigil\"\nchecks = [" + checks + "]\nstate_dir = \"" + filepath.Join(dir, "idle") + "\"\n"); err != nil {
		t.Fatal(err)
	}
	return dir, conf
}

func TestValidateRunsTheDeepSuiteAndDrainsLikeHealth(t *testing.T) {
	dir, conf := validateConf(t, `"t-pass", "t-perf", "t-fail"`)
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "ALLOCATED"}}
	out := runWith(t, conf, decide.ModeValidate, fs, env{"SLURM_JOB_ID": "77", "SLURM_JOB_GPUS": "0"}, nil)
	var ran []string
	for _, r := range out.Report.Results {
		ran = append(ran, r.Check)
	}
	if !reflect.DeepEqual(ran, []string{"t-pass", "t-perf", "t-fail"}) {
		t.Fatalf("ran %q, want the deep suite with its performance probe", ran)
	}
	if out.ExitCode != decide.ExitFail || out.Report.Action.Kind != report.ActionDrain || out.Report.Job != "77" || out.Report.Mode != "validate" {
		t.Fatalf("exit %d, action %+v, job %q, mode %q", out.ExitCode, out.Report.Action, out.Report.Job, out.Report.Mode)
	}
	if got := fs.mutations(); !reflect.DeepEqual(got, []string{"drain n1 vigil: t-fail Broken gpu0"}) {
		t.Fatalf("calls %q: want the drain alone (the validation job is never requeued)", got)
	}
	if !strings.Contains(filepath.Base(out.ReportPath), "-validate-n1-job77") {
		t.Errorf("report %s", out.ReportPath)
	}
	recs, errs := ReadValidations(filepath.Join(dir, "idle"))
	v := recs["n1"]
	if len(errs) > 0 || v.Outcome != "fail" || v.Job != "77" || v.Action != report.ActionDrain ||
		!reflect.DeepEqual(v.Checks, ran) || v.End.Before(v.Start) || v.Start.IsZero() {
		t.Fatalf("record %+v, errors %v", v, errs)
	}
	if lastEnv.Devices != nil {
		t.Errorf("devices %v: the deep suite takes the whole node, not the job's GPUs", lastEnv.Devices)
	}
}

func TestValidatePassResumesAndRecords(t *testing.T) {
	dir, conf := validateConf(t, `"t-perf"`)
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "vigil: t-perf PerfLow"}}
	out := runWith(t, conf, decide.ModeValidate, fs, nil, nil)
	if out.ExitCode != decide.ExitOK || out.Report.Action.Kind != report.ActionResume {
		t.Fatalf("exit %d action %+v: a drain for a probe the deep suite ran and passed is lifted", out.ExitCode, out.Report.Action)
	}
	recs, _ := ReadValidations(filepath.Join(dir, "idle"))
	if v := recs["n1"]; v.Outcome != "pass" || !v.Completed() || v.Job != "" {
		t.Fatalf("record %+v", v)
	}
	// A dry run records nothing.
	if err := os.RemoveAll(filepath.Join(dir, "idle")); err != nil {
		t.Fatal(err)
	}
	runWith(t, conf, decide.ModeValidate, fs, nil, func(o *Options) { o.DryRun = true })
	if recs, _ := ReadValidations(filepath.Join(dir, "idle")); len(recs) != 0 {
		t.Fatalf("dry run recorded %+v", recs)
	}
}

// TestValidatePreemptedRecordsInterrupted: Slurm preempting the job stops
// the run (SIGTERM); nothing is drained and the node is not validated.
func TestValidatePreemptedRecordsInterrupted(t *testing.T) {
	dir, conf := validateConf(t, `"t-pass", "t-hang", "t-fail"`)
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "ALLOCATED"}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	o := Options{Program: "vigil-test", Mode: decide.ModeValidate, ConfigPath: conf, ConfigExplicit: true, Node: "n1",
		Lookup: env{"SLURM_JOB_ID": "78"}.lookup, Slurm: fs, Log: quietLog(), Root: t.TempDir(), StateDir: filepath.Join(dir, "state")}
	t0 := time.Now()
	out := Run(ctx, o)
	if el := time.Since(t0); el > 10*time.Second {
		t.Errorf("took %v to stop", el)
	}
	if got := fs.mutations(); len(got) != 0 || out.Report.Action.Kind == report.ActionDrain {
		t.Fatalf("a stopped run changed the node: %q %+v", got, out.Report.Action)
	}
	recs, _ := ReadValidations(filepath.Join(dir, "idle"))
	if v := recs["n1"]; v.Outcome != OutcomeInterrupted || v.Completed() || v.Job != "78" {
		t.Fatalf("record %+v", v)
	}
}

func TestValidateBudgetAndTimeouts(t *testing.T) {
	s := &settings.Settings{Prolog: config.DefaultProlog(), Idle: config.DefaultIdle()}
	s.Prolog.Timeouts = map[string]time.Duration{"gemm": 2 * time.Hour, "disk": time.Minute}
	for _, tt := range []struct {
		mode  decide.Mode
		check string
		want  time.Duration
	}{
		{decide.ModeValidate, "copy", 30 * time.Minute}, {decide.ModeValidate, "gemm", 2 * time.Hour}, {decide.ModeValidate, "disk", 30 * time.Minute},
		{decide.ModeProlog, "copy", 6 * time.Minute}, {decide.ModeProlog, "disk", time.Minute}, {decide.ModeHealth, "gemm", 2 * time.Hour},
	} {
		if got := timeoutOf(tt.mode, s, tt.check); got != tt.want {
			t.Errorf("%s %s: %v, want %v", tt.mode, tt.check, got, tt.want)
		}
	}
	if runBudgetOf(decide.ModeValidate, s) != 90*time.Minute || runBudgetOf(decide.ModeHealth, s) != 30*time.Minute {
		t.Errorf("budgets %v %v", runBudgetOf(decide.ModeValidate, s), runBudgetOf(decide.ModeHealth, s))
	}
}

func TestReadValidationsLeavesOutBadRecords(t *testing.T) {
	dir := t.TempDir()
	good := Validation{V: ValidationVersion, Node: "n1", Outcome: string(benchmarks.StatusPass), End: time.Unix(100, 0).UTC()}
	if _, err := WriteValidation(dir, good); err != nil {
		t.Fatal(err)
	}
	nodes := ValidationsDir(dir)
	for name, body := range map[string]string{
		"n2.json": "{not json", "n3.json": `{"v": 9, "node": "n3"}`, "n4.json": `{"v": 1, "node": "n1"}`,
		"n5.json": `{"v": 1, "node": "n5"` + strings.Repeat(" ", maxValidationSize) + `}`, "README": "x",
	} {
		if err := os.WriteFile(filepath.Join(nodes, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recs, errs := ReadValidations(dir)
	if len(recs) != 1 || !recs["n1"].End.Equal(good.End) || len(errs) != 4 {
		t.Fatalf("records %+v, errors %v", recs, errs)
	}
	if recs, errs := ReadValidations(filepath.Join(dir, "absent")); len(recs) != 0 || len(errs) != 0 {
		t.Fatalf("missing directory: %+v %v", recs, errs)
	}
	for _, bad := range []string{"", "..", "a/b"} {
		if _, err := WriteValidation(dir, Validation{Node: bad}); err == nil {
			t.Errorf("node %q written", bad)
		}
	}
}

// TestRunBudgetKeepsAReserve: checks get the budget less a reserve for
// the kill, the drain and the report: a fifth, at least 1 s (never more
// than half), at most 15 s.
func TestRunBudgetKeepsAReserve(t *testing.T) {
	for total, want := range map[time.Duration]time.Duration{
		30 * time.Minute:        30*time.Minute - 15*time.Second,
		time.Minute:             48 * time.Second,
		3 * time.Second:         2 * time.Second,
		1500 * time.Millisecond: 750 * time.Millisecond,
	} {
		if got := runBudget(total); got != want {
			t.Errorf("runBudget(%v) = %v, want %v", total, got, want)
		}
	}
}
