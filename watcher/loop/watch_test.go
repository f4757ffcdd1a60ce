package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

func TestStartMessage(t *testing.T) {
	c := DefaultSettings().Hang
	c.PulseFactor, c.ConfirmPeriods = 0, 0
	got := StartMessage(c, "2026-11-29T10:30:00Z")
	want := "vigil-watch started; first verdict possible at 2026-11-29T10:30:00Z (the longer of grace 10m and window 30m); " +
		"after that, a node is reported one window after its last I/O progress"
	if got != want {
		t.Errorf("StartMessage =\n%q\nwant\n%q", got, want)
	}
	got = StartMessage(DefaultSettings().Hang, "2026-11-29T10:30:00Z")
	for _, want := range []string{"once 5 progress lines are seen, max(3 × their interval, 2m) after its last one (for a line a minute: 3m)",
		"NCCL RAS naming dead ranks), 2m of flat readings confirm it",
		"a device that cannot recover: XID 79, 74, 95, 119, 154", "is reported at once: within 30s of the event"} {
		if !strings.Contains(got, want) {
			t.Errorf("StartMessage =\n%q\nlacks %q", got, want)
		}
	}
}

func TestStagger(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4"}
	for _, tc := range []struct {
		node   string
		nodes  []string
		period time.Duration
		want   time.Duration
	}{
		{"n1", nodes, time.Minute, 0},
		{"n2", nodes, time.Minute, time.Second},
		{"n4", nodes, time.Minute, 3 * time.Second},
		{"n4", nodes, 4 * time.Second, 1500 * time.Millisecond}, // within half a period
		{"n9", nodes, time.Minute, 0},
		{"n1", []string{"n1"}, time.Minute, 0},
	} {
		if got := Stagger(&slurm.Job{NodeName: tc.node, Nodes: tc.nodes}, tc.period); got != tc.want {
			t.Errorf("Stagger(%s of %v, %v) = %v, want %v", tc.node, tc.nodes, tc.period, got, tc.want)
		}
	}
}

func TestRecordPath(t *testing.T) {
	if got := RecordPath("/scratch/t-%j-%N.jsonl", "42", "gpu07"); got != "/scratch/t-42-gpu07.jsonl" {
		t.Errorf("RecordPath = %q", got)
	}
	if got := RecordPath("100%%-%N", "1", "n"); got != "100%-n" {
		t.Errorf("RecordPath = %q", got)
	}
}

// fixture is a fake node: /proc and a cgroup v1 tree under one root, with
// the job's batch step (the "training", pid 100) and the watcher's own step
// (pid 200, which writes a lot: it must not count).
type fixture struct {
	root   string
	jobDir string
	wchar  uint64
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{root: t.TempDir()}
	f.jobDir = filepath.Join(f.root, "sys/fs/cgroup/freezer/slurm_n1/uid_1000/job_7")
	f.write(t, "sys/fs/cgroup/freezer/slurm_n1/uid_1000/job_7/step_batch/cgroup.procs", "100\n")
	f.write(t, "sys/fs/cgroup/freezer/slurm_n1/uid_1000/job_7/step_0/cgroup.procs", "200\n")
	f.write(t, "proc/100/stat", "100 (python) S 1 100 100 0 -1 4194304 100 0 0 0 500 20 0 0 20 0 1 0 100 1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n")
	f.write(t, "proc/200/stat", "200 (vigil-watch) S 1 200 200 0 -1 4194304 100 0 0 0 5 2 0 0 20 0 1 0 100 1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n")
	f.setIO(t, 200, 1<<40)
	f.setIO(t, 100, 0)
	return f
}

func (f *fixture) write(t *testing.T, rel, body string) {
	t.Helper()
	p := filepath.Join(f.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) setIO(t *testing.T, pid int, wchar uint64) {
	f.write(t, fmt.Sprintf("proc/%d/io", pid), fmt.Sprintf("rchar: 0\nwchar: %d\nsyscr: 0\nsyscw: 0\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n", wchar))
}

// fakeScontrol answers scontrol like Slurm 22.05 does and keeps the comment.
type fakeScontrol struct {
	mu      sync.Mutex
	comment string
	argv    [][]string
}

func (s *fakeScontrol) Run(_ context.Context, argv []string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.argv = append(s.argv, argv)
	args := strings.Join(argv[1:], " ")
	switch {
	case args == "show job -o 7":
		c := s.comment
		if c == "" {
			c = "(null)"
		}
		return []byte("JobId=7 JobName=train UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A Priority=1 Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 Partition=debug NodeList=n1 BatchHost=n1 NumNodes=1 Command=/home/alice/job.sh WorkDir=/home/alice Comment=" + c + " StdErr=/home/alice/o StdIn=/dev/null StdOut=/home/alice/o Power=\n"), nil
	case strings.HasPrefix(args, "update JobId=7 Comment="):
		s.comment = strings.TrimPrefix(args, "update JobId=7 Comment=")
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected command %q", argv)
}

func TestWatchOnFixtureTree(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()

	// Accelerators: one device flat at 100% and 80 W.
	var tr bytes.Buffer
	if err := trace.NewWriter(&tr).Write(trace.Sample{Time: t0, Host: "any", Accel: []trace.Accel{{ID: "0", Util: 100, MemUsedMiB: 1000, PowerW: 80}}}); err != nil {
		t.Fatal(err)
	}
	accel := filepath.Join(dir, "accel.jsonl")
	if err := os.WriteFile(accel, tr.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var hooks []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		hooks = append(hooks, b)
		mu.Unlock()
	}))
	defer srv.Close()

	// The training writes for 3 minutes, then stops; the watcher's own step
	// writes all the time. After 20 minutes the job's cgroup goes away.
	clock := &fakeClock{now: t0}
	clock.onWait = func() {
		el := clock.now.Sub(t0)
		if el <= 3*time.Minute {
			f.wchar += 100 << 20
		}
		f.setIO(t, 100, f.wchar)
		f.setIO(t, 200, 1<<40+uint64(el/time.Second)<<30)
		if el >= 20*time.Minute {
			if err := os.RemoveAll(f.jobDir); err != nil {
				t.Error(err)
			}
		}
	}
	s := DefaultSettings()
	s.Window = 5 * time.Minute
	s.Period = time.Minute
	s.PeriodIsDefault = false
	s.WebhookURL = srv.URL
	s.ReportDir = dir
	scontrol := &fakeScontrol{comment: "baseline run"}
	var stdout bytes.Buffer
	logger := logrus.New()
	var logs bytes.Buffer
	logger.SetOutput(&logs)
	record := filepath.Join(dir, "rec-%j-%N.jsonl")
	err := Watch(context.Background(), Options{
		Settings: s, Record: record, AccelTrace: accel, Root: f.root,
		Lookup: func(k string) (string, bool) {
			v, ok := map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_UID": "1000", "SLURM_JOB_USER": "alice",
				"SLURMD_NODENAME": "n1", "SLURM_STEP_ID": "0"}[k]
			return v, ok
		},
		Stdout: &stdout, Log: logger, Clock: clock,
		Slurm: &slurm.Client{Runner: scontrol, BinDir: "/usr/bin"},
	})
	if err != nil {
		t.Fatalf("Watch = %v, want nil once the job's cgroup is gone", err)
	}

	var kinds []string
	var hungAt time.Time
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var ev struct {
			Time  time.Time
			Event string
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event line %q: %v", line, err)
		}
		kinds = append(kinds, ev.Event)
		if ev.Event == "hung" && hungAt.IsZero() {
			hungAt = ev.Time
		}
	}
	if hungAt.IsZero() {
		t.Fatalf("no hung event; events %v", kinds)
	}
	// Writes stop at 3m, so the window after the last write ends at
	// 3m+1m+5m = 9m; but the grace (10m by default) is longer than the
	// window, so nothing can come before +10m, the first verdict the log
	// announced.
	if el := hungAt.Sub(t0); el < 10*time.Minute || el > 12*time.Minute {
		t.Errorf("hung at +%v, want between +10m and +12m", el)
	}
	if want := "first verdict possible at 2026-11-29T10:10:00Z (the longer of grace 10m and window 5m)"; !strings.Contains(logs.String(), want) ||
		!strings.Contains(logs.String(), "first_verdict=\"2026-11-29T10:10:00Z\"") || !strings.Contains(logs.String(), "grace=10m0s") {
		t.Errorf("start-up log lacks the first verdict %q:\n%s", want, logs.String())
	}
	mu.Lock()
	if len(hooks) != 1 || hooks[0]["event"] != "hung" || hooks[0]["job"] != "7" || !strings.Contains(fmt.Sprint(hooks[0]["text"]), "job 7 (alice) is hung on n1") {
		t.Errorf("webhooks = %v, want one hung", hooks)
	}
	mu.Unlock()
	if !strings.HasPrefix(scontrol.comment, "baseline run; vigil: hung since ") || !strings.HasSuffix(scontrol.comment, " on n1") {
		t.Errorf("comment = %q", scontrol.comment)
	}
	for _, a := range scontrol.argv {
		if a[0] != "/usr/bin/scontrol" {
			t.Errorf("ran %q, want only /usr/bin/scontrol", a)
		}
	}
	// One report: the node's hang. The lone watcher's digest one period
	// later blames nobody (cause unknown) and is only logged.
	if !strings.Contains(logs.String(), "vigil: job 7 hang digest: unknown: no host stands out") {
		t.Errorf("the lone watcher's digest is not in its log:\n%s", logs.String())
	}
	reps, _ := filepath.Glob(filepath.Join(dir, "vigil-hang-7-n1-*.json"))
	if len(reps) != 1 {
		t.Errorf("reports %v, want one", reps)
	} else if data, err := os.ReadFile(reps[0]); err != nil {
		t.Error(err)
	} else {
		// The report says when the first verdict could come, and with which grace.
		var rep struct {
			Window   string
			Evidence map[string]any
		}
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Window != "5m0s" || rep.Evidence["first_verdict"] != "2026-11-29T10:10:00Z" || rep.Evidence["grace_s"] != float64(600) || rep.Evidence["window_s"] != float64(300) {
			t.Errorf("report window %q, evidence first_verdict %v grace_s %v window_s %v; want 5m0s, 10:10, 600, 300",
				rep.Window, rep.Evidence["first_verdict"], rep.Evidence["grace_s"], rep.Evidence["window_s"])
		}
	}
	rec, err := os.ReadFile(filepath.Join(dir, "rec-7-n1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(rec), "\n") - strings.Count(string(rec), `"stream":"layout"`) - strings.Count(string(rec), `"stream":"end"`); n != 20 {
		t.Errorf("recorded %d samples, want 20 (0m to 19m), beside the layout and end records", n)
	}
	if !strings.Contains(string(rec), `"stream":"end","line":"{\"role\":\"lone\",\"why\":\"job-gone\"}"`) {
		t.Errorf("the trace lacks the watcher's end record:\n%s", rec[max(0, len(rec)-400):])
	}
	// The watcher's own step (pid 200, terabytes written) never shows.
	r := trace.NewReader(bytes.NewReader(rec))
	for {
		smp, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if smp.IsLog() {
			continue
		}
		if smp.IO.WChar >= 1<<40 || smp.Procs != 1 {
			t.Fatalf("sample counts the watcher's own step: %+v", smp)
		}
	}
}

func TestStepDirs(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"freezer/job_7/step_batch/task_0", "freezer/job_7/step_0", "freezer/job_7/step_extern", "cpuacct/job_7/step_batch", "cpuacct/job_7/step_0"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	jobs := []string{filepath.Join(root, "freezer/job_7"), filepath.Join(root, "cpuacct/job_7")}
	got, err := StepDirs(jobs, "0")
	if err != nil {
		t.Fatal(err)
	}
	rel := make([]string, len(got))
	for i, g := range got {
		rel[i], _ = filepath.Rel(root, g)
	}
	if want := "freezer/job_7/step_batch freezer/job_7/step_extern cpuacct/job_7/step_batch"; strings.Join(rel, " ") != want {
		t.Errorf("StepDirs = %v, want %s", rel, want)
	}
	if got, _ := StepDirs(jobs, ""); len(got) != 2 {
		t.Errorf("StepDirs outside a step = %v, want the job dirs", got)
	}
	if _, err := StepDirs([]string{filepath.Join(root, "gone")}, "0"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("vanished job dir: %v", err)
	}
}

// TestStepDirsV2: under cgroup v2 a step's slurmstepd sits in
// step_*/slurm beside its tasks in step_*/user (the real layout of Slurm
// 22.05 and 24.11): only the user directory is the job's.
func TestStepDirsV2(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"job_7/step_batch/slurm", "job_7/step_batch/user/task_special", "job_7/step_0/slurm",
		"job_7/step_0/user/task_0", "job_7/step_1/slurm", "job_7/step_1/user/task_0"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := StepDirs([]string{filepath.Join(root, "job_7")}, "1")
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	for _, g := range got {
		r, _ := filepath.Rel(root, g)
		rel = append(rel, r)
	}
	if want := "job_7/step_0/user job_7/step_batch/user"; strings.Join(rel, " ") != want {
		t.Errorf("StepDirs = %v, want %s", rel, want)
	}
}
