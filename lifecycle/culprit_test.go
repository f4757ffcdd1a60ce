package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

func init() {
	benchmarks.Register(check{name: "t-perf-fail", kind: benchmarks.KindPerf, run: func(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
		return benchmarks.Result{Status: benchmarks.StatusFail, Reason: "GEMMBelowThreshold", Device: "gpu1", Message: "gpu1 412 TFLOPS < 600"}
	}})
}

const culpritFixtures = "testdata/culprits"

func TestCulpritReports(t *testing.T) {
	tests := []struct {
		name, job, node string
		want            []string // base names of the reports found
		problems        int
	}{
		// n1's own report names n1 and n3. n4's report is truncated and
		// n6's file is about another job: both are problems, never culprits.
		{"named by its own watcher", "1234", "n1", []string{"vigil-hang-1234-n1-20261129T103000Z.json"}, 2},
		{"named by another node's report", "1234", "n3", []string{"vigil-hang-1234-n1-20261129T103000Z.json"}, 2},
		{"no culprits: the report's own host", "1234", "n2", []string{"vigil-hang-1234-n2-20261129T104000Z.json"}, 2},
		{"not named", "1234", "n9", nil, 2},
		{"a recovery is no hang", "1234", "n5", nil, 2},
		{"a broken report names nobody", "1234", "n4", nil, 2},
		{"another job", "999", "n7", []string{"vigil-hang-999-n7-20261129T090000Z.json"}, 0},
		{"another job does not count", "999", "n1", nil, 0},
		{"a job without reports", "55", "n1", nil, 0},
		// Job 777 failed twice: once on the network (the cluster's: n2 is
		// re-checked), once by a rank killed on n3 (the job's own: nobody).
		{"a failed job's culprit with network evidence", "777", "n2", []string{"vigil-hang-777-n1-20261129T110000Z.json"}, 0},
		{"a failed job's own failure re-checks nobody", "777", "n3", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found, problems, err := CulpritReports(culpritFixtures, tt.job, tt.node)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range found {
				got = append(got, filepath.Base(r.Path))
				if r.Job != tt.job || !r.Blames(tt.node) {
					t.Errorf("report %+v does not blame %s in job %s", r, tt.node, tt.job)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("found %v, want %v", got, tt.want)
			}
			if len(problems) != tt.problems {
				t.Errorf("problems %v, want %d", problems, tt.problems)
			}
			for _, p := range problems {
				if !errors.Is(p, hangreport.ErrBadReport) {
					t.Errorf("problem %v does not wrap ErrBadReport", p)
				}
			}
		})
	}
	if _, _, err := CulpritReports(filepath.Join(culpritFixtures, "missing"), "1234", "n1"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing dir: %v", err)
	}
}

func TestWatchReportDir(t *testing.T) {
	tests := []struct {
		name, watch, workDir, want string
		wantErr                    error
	}{
		{"absolute", `report_dir = "/shared/hangs"`, "/home/alice/run", "/shared/hangs", nil},
		{"default: the job's working directory", ``, "/home/alice/run", "/home/alice/run", nil},
		{"relative to the job's working directory", `report_dir = "hangs"`, "/home/alice/run", "/home/alice/run/hangs", nil},
		{"no working directory", ``, "", "", ErrNoWatchDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := config.Parse(strings.NewReader("[watch]\nwindow = \"5m\"\n"+tt.watch+"\n"), "vigil.toml")
			if err != nil {
				t.Fatal(err)
			}
			e := env{}
			if tt.workDir != "" {
				e["SLURM_JOB_WORK_DIR"] = tt.workDir
			}
			ws := watchcfg.Default()
			if err := ws.Load(f); err != nil {
				t.Fatal(err)
			}
			got, err := WatchReportDir(ws, e.lookup)
			if got != tt.want || !errors.Is(err, tt.wantErr) {
				t.Fatalf("WatchReportDir = %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// copyReport puts a fixture report into dir (as vigil-watch would have).
func copyReport(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(culpritFixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ran(rep *report.Report) string {
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Check)
	}
	return strings.Join(names, ",")
}

func notesWith(rep *report.Report, s string) []string {
	var out []string
	for _, n := range rep.Notes {
		if strings.Contains(n, s) {
			out = append(out, n)
		}
	}
	return out
}

// TestEpilogCulpritRecheck: a hang report naming the node (a file the
// job's user can write, so possibly forged) is noted and runs nothing more:
// the culprit gets the health facts like every other node, its performance
// probe (t-perf-fail) does not run, and nothing is drained.
func TestEpilogCulpritRecheck(t *testing.T) {
	const n1Report = "vigil-hang-1234-n1-20261129T103000Z.json"
	idle := slurm.Node{Name: "n1", State: "IDLE"}
	adminDrained := slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "admin: bad fan"}
	tests := []struct {
		name      string
		reports   []string // fixtures in the watcher's report directory
		node      string   // the epilog's node
		job       string
		slurmNode slurm.Node
		wantRan   string
		wantCalls string
		wantNote  string // a note that must be there
		wantKind  string
	}{
		{"culprit: noted, health facts only", []string{n1Report}, "n1", "1234", idle,
			"t-pass", "", "recheck: named as culprit by vigil-watch in ", report.ActionNone},
		{"culprit named by another node's report", []string{n1Report}, "n3", "1234", slurm.Node{Name: "n3", State: "IDLE"},
			"t-pass", "", "recheck: named as culprit by vigil-watch in ", report.ActionNone},
		{"culprit: someone else's drain untouched", []string{n1Report}, "n1", "1234", adminDrained,
			"t-pass", "", "recheck: named as culprit", report.ActionKeep},
		{"not a culprit: health facts only", []string{n1Report}, "n2", "1234", slurm.Node{Name: "n2", State: "IDLE"},
			"t-pass", "", "", report.ActionNone},
		{"another job's report", []string{"vigil-hang-999-n7-20261129T090000Z.json"}, "n7", "1234", slurm.Node{Name: "n7", State: "IDLE"},
			"t-pass", "", "", report.ActionNone},
		{"broken report: health facts and a warning", []string{"vigil-hang-1234-n4-20261129T104500Z.json"}, "n4", "1234", slurm.Node{Name: "n4", State: "IDLE"},
			"t-pass", "", "recheck: ignoring a vigil-watch hang report: ", report.ActionNone},
		{"no reports", nil, "n1", "1234", idle, "t-pass", "", "", report.ActionNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hangs := t.TempDir()
			for _, r := range tt.reports {
				copyReport(t, hangs, r)
			}
			_, conf := setup(t, fmt.Sprintf("checks = [\"t-pass\", \"t-perf-fail\"]\nretries = 0\n[watch]\nreport_dir = %q", hangs))
			fs := &fakeSlurm{node: tt.slurmNode}
			out := runWith(t, conf, decide.ModeEpilog, fs, env{"SLURM_JOB_ID": tt.job}, func(o *Options) { o.Node = tt.node })
			if got := ran(out.Report); got != tt.wantRan {
				t.Errorf("ran %s, want %s; notes %q", got, tt.wantRan, out.Report.Notes)
			}
			if got := strings.Join(fs.mutations(), "|"); got != tt.wantCalls {
				t.Errorf("calls %q, want %q", got, tt.wantCalls)
			}
			if out.ExitCode != decide.ExitOK || out.Report.Action.Kind != tt.wantKind {
				t.Errorf("exit %d, action %+v, want %s", out.ExitCode, out.Report.Action, tt.wantKind)
			}
			recheck := notesWith(out.Report, "recheck:")
			if tt.wantNote == "" && len(recheck) > 0 {
				t.Errorf("unexpected recheck notes %q", recheck)
			}
			if tt.wantNote != "" && len(notesWith(out.Report, tt.wantNote)) != 1 {
				t.Errorf("notes %q lack one %q", out.Report.Notes, tt.wantNote)
			}
			if strings.HasPrefix(tt.wantNote, "recheck: named") {
				want := "recheck: named as culprit by vigil-watch in " + filepath.Join(hangs, n1Report) +
					"; a hang report is written by the job's own processes, so it runs nothing more"
				if !strings.HasPrefix(recheck[0], want) {
					t.Errorf("note %q, want %q...", recheck[0], want)
				}
			}
			// The record on disk says the same.
			b, err := os.ReadFile(out.ReportPath)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantNote != "" && !strings.Contains(string(b), tt.wantNote) {
				t.Errorf("JSON report lacks %q:\n%s", tt.wantNote, b)
			}
		})
	}
}

// TestEpilogCulpritWorkDir: with vigil-watch's default report_dir (its
// working directory), the epilog looks in the job's working directory, and
// notes the report without running more.
func TestEpilogCulpritWorkDir(t *testing.T) {
	work := t.TempDir()
	copyReport(t, work, "vigil-hang-1234-n2-20261129T104000Z.json")
	_, conf := setup(t, `checks = ["t-pass", "t-perf"]`)
	fs := &fakeSlurm{node: slurm.Node{Name: "n2", State: "IDLE"}}
	out := runWith(t, conf, decide.ModeEpilog, fs, env{"SLURM_JOB_ID": "1234", "SLURM_JOB_WORK_DIR": work}, func(o *Options) { o.Node = "n2" })
	if ran(out.Report) != "t-pass" || len(notesWith(out.Report, "recheck: named as culprit")) != 1 {
		t.Fatalf("ran %s, notes %q", ran(out.Report), out.Report.Notes)
	}
	// Without the working directory the epilog cannot tell: health facts only.
	out = runWith(t, conf, decide.ModeEpilog, fs, env{"SLURM_JOB_ID": "1234"}, func(o *Options) { o.Node = "n2" })
	if ran(out.Report) != "t-pass" || len(notesWith(out.Report, "SLURM_JOB_WORK_DIR")) != 1 {
		t.Fatalf("ran %s, notes %q", ran(out.Report), out.Report.Notes)
	}
}

// TestEpilogCulpritMissingDir: a report directory that does not exist or
// cannot be read is noted and changes nothing.
func TestEpilogCulpritMissingDir(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"missing": filepath.Join(t.TempDir(), "none"), "not a directory": notDir} {
		t.Run(name, func(t *testing.T) {
			_, conf := setup(t, fmt.Sprintf("checks = [\"t-pass\", \"t-perf-fail\"]\n[watch]\nreport_dir = %q", dir))
			fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
			out := runWith(t, conf, decide.ModeEpilog, fs, env{"SLURM_JOB_ID": "1234"}, nil)
			if ran(out.Report) != "t-pass" || len(fs.mutations()) != 0 || len(notesWith(out.Report, dir)) != 1 {
				t.Fatalf("ran %s, calls %v, notes %q", ran(out.Report), fs.calls, out.Report.Notes)
			}
		})
	}
}

// TestEpilogCulpritLookupBounded: a report directory that does not answer
// (a hung network file system) delays the epilog by the lookup's timeout
// only, and the node gets its health facts.
func TestEpilogCulpritLookupBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	saved, savedTimeout := jobReports, culpritLookupTimeout
	defer func() { jobReports, culpritLookupTimeout = saved, savedTimeout }()
	jobReports = func(dir, job string) ([]hangreport.Report, []error, error) {
		<-release
		return nil, nil, nil
	}
	culpritLookupTimeout = 50 * time.Millisecond
	_, conf := setup(t, fmt.Sprintf("checks = [\"t-pass\", \"t-perf-fail\"]\n[watch]\nreport_dir = %q", t.TempDir()))
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	out := runWith(t, conf, decide.ModeEpilog, fs, env{"SLURM_JOB_ID": "1234"}, nil)
	if ran(out.Report) != "t-pass" || len(notesWith(out.Report, "recheck: gave up")) != 1 || len(fs.mutations()) != 0 {
		t.Fatalf("ran %s, calls %v, notes %q", ran(out.Report), fs.calls, out.Report.Notes)
	}
}

// TestEpilogCulpritDryRun: a dry run of the epilog on a culprit notes the
// report, runs the health facts, and changes nothing: no Slurm call, no
// report file, the watcher's report left as it was.
func TestEpilogCulpritDryRun(t *testing.T) {
	hangs := t.TempDir()
	hang := copyReport(t, hangs, "vigil-hang-1234-n1-20261129T103000Z.json")
	before, err := os.ReadFile(hang)
	if err != nil {
		t.Fatal(err)
	}
	dir, conf := setup(t, fmt.Sprintf("checks = [\"t-pass\", \"t-perf-fail\"]\nretries = 0\n[watch]\nreport_dir = %q", hangs))
	jobDir := filepath.Join(dir, "run", "jobs", "1234")
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		t.Fatal(err)
	}
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	out := runWith(t, conf, decide.ModeEpilog, fs, env{"SLURM_JOB_ID": "1234"}, func(o *Options) { o.DryRun = true })
	if ran(out.Report) != "t-pass" || len(notesWith(out.Report, "recheck: named as culprit")) != 1 {
		t.Fatalf("ran %s, notes %q", ran(out.Report), out.Report.Notes)
	}
	if len(fs.calls) != 0 || out.ReportPath != "" || out.Report.Action.Done || out.Report.Action.Reason != "" {
		t.Fatalf("calls %v, report %q, action %+v", fs.calls, out.ReportPath, out.Report.Action)
	}
	if _, err := os.Stat(filepath.Join(dir, "reports")); err == nil {
		t.Error("a dry run wrote the report directory")
	}
	if _, err := os.Stat(jobDir); err != nil {
		t.Errorf("a dry run removed the per-job directory: %v", err)
	}
	after, err := os.ReadFile(hang)
	if err != nil || string(after) != string(before) {
		t.Errorf("the watcher's report changed: %v", err)
	}
	if entries, _ := os.ReadDir(hangs); len(entries) != 1 {
		t.Errorf("the watcher's directory holds %d entries", len(entries))
	}
}

func TestDigestOfLinksTheRecheck(t *testing.T) {
	rep := hangreport.Report{Digest: &hangreport.Digest{Cause: "network",
		Culprits: []hangreport.DigestCulprit{{Host: "gpu04", Reason: "TransportErrors"}}}}
	if got := digestOf(rep, "gpu04"); got != " (digest: network, TransportErrors)" {
		t.Errorf("culprit: %q", got)
	}
	if got := digestOf(rep, "gpu01"); got != " (digest: network)" {
		t.Errorf("other host: %q", got)
	}
	if got := digestOf(hangreport.Report{}, "gpu04"); got != "" {
		t.Errorf("no digest: %q", got)
	}
}
