package action

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/hangreport"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fakeSlurm is a job in a fake scontrol: it records what was done to it.
// The job runs on n1..n4 of partition debug unless fields say otherwise;
// the cluster has nodes (nil: n1..n5 of debug, all idle).
type fakeSlurm struct {
	comment  string
	restarts int
	fields   map[string]string // the job's scontrol fields (State, NumNodes, ExcNodeList ...) over the defaults
	nodes    []slurm.Node
	jobErr   error
	setErr   error
	excErr   error
	calls    []string
}

func (f *fakeSlurm) Job(_ context.Context, id string) (slurm.JobInfo, error) {
	f.calls = append(f.calls, "job "+id)
	if f.jobErr != nil {
		return slurm.JobInfo{}, f.jobErr
	}
	fields := map[string]string{"JobState": "RUNNING", "Partition": "debug", "NumNodes": "4", "NodeList": "n[1-4]",
		"ExcNodeList": "(null)", "ReqNodeList": "(null)"}
	for k, v := range f.fields {
		fields[k] = v
	}
	return slurm.JobInfo{ID: id, Comment: f.comment, Restarts: f.restarts, State: fields["JobState"],
		Partition: fields["Partition"], NodeList: fields["NodeList"], Fields: fields}, nil
}

func (f *fakeSlurm) Nodes(context.Context) ([]slurm.Node, error) {
	f.calls = append(f.calls, "nodes")
	if f.nodes != nil {
		return f.nodes, nil
	}
	var out []slurm.Node
	for _, n := range []string{"n1", "n2", "n3", "n4", "n5"} {
		out = append(out, fakeNode(n, "IDLE", "debug"))
	}
	return out, nil
}

// fakeNode is a node of the fake cluster in state (IDLE, IDLE+DRAIN ...).
func fakeNode(name, state, partitions string) slurm.Node {
	base, flags, _ := strings.Cut(state, "+")
	n := slurm.Node{Name: name, State: base, Fields: map[string]string{"NodeName": name, "State": state, "Partitions": partitions}}
	if flags != "" {
		n.Flags = strings.Split(flags, "+")
	}
	return n
}

func (f *fakeSlurm) SetJobExcludedNodes(_ context.Context, id string, nodes []string) error {
	f.calls = append(f.calls, "exclude "+id+" "+strings.Join(nodes, ","))
	return f.excErr
}

func (f *fakeSlurm) Release(_ context.Context, id string) error {
	f.calls = append(f.calls, "release "+id)
	return nil
}

func (f *fakeSlurm) SetJobComment(_ context.Context, id, c string) error {
	f.calls = append(f.calls, "comment "+id+" "+c)
	if f.setErr != nil {
		return f.setErr
	}
	f.comment = c
	return nil
}

func (f *fakeSlurm) Requeue(_ context.Context, id string, hold bool) error {
	if hold {
		f.calls = append(f.calls, "requeuehold "+id)
		return nil
	}
	f.calls = append(f.calls, "requeue "+id)
	return nil
}

func (f *fakeSlurm) Cancel(_ context.Context, id string) error {
	f.calls = append(f.calls, "cancel "+id)
	return nil
}

func (f *fakeSlurm) count(prefix string) int {
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

type fakeMailer struct {
	argv  [][]string
	stdin []string
}

func (m *fakeMailer) Run(_ context.Context, argv []string, stdin []byte) error {
	m.argv = append(m.argv, argv)
	m.stdin = append(m.stdin, string(stdin))
	return nil
}

// hook is a webhook receiver on loopback that answers with the given codes
// in turn (200 once they run out).
type hook struct {
	*httptest.Server
	mu     sync.Mutex
	codes  []int
	bodies []WebhookBody
}

func newHook(t *testing.T, codes ...int) *hook {
	h := &hook{codes: codes}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		data, _ := io.ReadAll(r.Body)
		var b WebhookBody
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(data, &b) != nil {
			t.Errorf("webhook got %s %s %q", r.Method, r.Header.Get("Content-Type"), data)
		}
		h.bodies = append(h.bodies, b)
		code := http.StatusOK
		if len(h.codes) > 0 {
			code, h.codes = h.codes[0], h.codes[1:]
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hook) received() []WebhookBody {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]WebhookBody(nil), h.bodies...)
}

var t0 = time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)

func hungEvent(host string, at time.Time) hang.Event {
	return hang.Event{Time: at, Host: host, Job: "1234", Event: hang.EventHung, Reason: hang.ReasonFlatUsageStuckCollective,
		Message: "2 devices flat near 100% at 80 W",
		Evidence: map[string]any{"io_bytes": 120, "io_threshold": 1 << 20, "window_s": 1800.0, "coverage": 1.0, "procs": 12, "procs_d": 0,
			"devices": []hang.DeviceStats{
				{ID: "0", Samples: 31, UtilMedian: 100, PowerMedianW: 80.5, PowerStddevW: 0.4, Flat: true},
				{ID: "1", Samples: 31, UtilMedian: 100, PowerMedianW: 79, PowerStddevW: 0.6, Flat: true},
			},
			"cpu_cores_median": 2.0, "cpu_cores_stddev": 0.01}}
}

type fixture struct {
	actor  *Actor
	slurm  *fakeSlurm
	mailer *fakeMailer
	hook   *hook
	logs   *test.Hook
	sleeps []time.Duration
}

func newFixture(t *testing.T, codes ...int) *fixture {
	f := &fixture{slurm: &fakeSlurm{comment: "my run"}, mailer: &fakeMailer{}, hook: newHook(t, codes...)}
	logger, logs := test.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	f.logs = logs
	f.actor = &Actor{
		Config: Config{
			Job: "1234", User: "alice", Host: "n1", Window: 30 * time.Minute,
			ReportDir: t.TempDir(), WebhookURL: f.hook.URL + "/hook", WebhookTimeout: 2 * time.Second,
			Mail: true, MailProg: "/usr/bin/mail", Comment: true,
		},
		Slurm:  f.slurm,
		Mailer: f.mailer,
		Log:    logger,
		Sleep: func(_ context.Context, d time.Duration) error {
			f.sleeps = append(f.sleeps, d)
			return nil
		},
		CommentSleep: func(context.Context, time.Duration) error { return nil },
	}
	return f
}

func (f *fixture) reports(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(f.actor.ReportDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// onlyReport reads the one report the fixture's actor wrote.
func (f *fixture) onlyReport(t *testing.T) hangreport.Report {
	t.Helper()
	reps := f.reports(t)
	if len(reps) != 1 {
		t.Fatalf("reports %v, want one", reps)
	}
	r, err := hangreport.ReadReport(reps[0])
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestHungActsOncePerEpisode(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.actor
	for i := range 3 {
		if err := a.Handle(ctx, hungEvent("n1", t0.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(f.hook.received()); got != 1 {
		t.Errorf("webhooks after 3 hung events of one episode = %d, want 1", got)
	}
	if got := len(f.mailer.argv); got != 1 {
		t.Errorf("mails = %d, want 1", got)
	}
	if got := len(f.reports(t)); got != 1 {
		t.Errorf("reports = %d, want 1", got)
	}
	if want := "my run; vigil: hung since 2026-11-29T10:00:00Z on n1"; f.slurm.comment != want {
		t.Errorf("comment = %q, want %q", f.slurm.comment, want)
	}
	if got := a.Hung(); len(got) != 1 || got[0] != "n1" {
		t.Errorf("Hung() = %v", got)
	}

	rec := hang.Event{Time: t0.Add(10 * time.Minute), Host: "n1", Job: "1234", Event: hang.EventRecovered, Reason: "IOProgress"}
	if err := a.Handle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if want := "my run; vigil: recovered at 2026-11-29T10:40:00Z on n1 (hung since 2026-11-29T10:00:00Z)"; f.slurm.comment != want {
		t.Errorf("comment after recovery = %q, want %q", f.slurm.comment, want)
	}
	if got := f.hook.received(); len(got) != 2 || got[1].Event != hang.EventRecovered {
		t.Errorf("webhooks after recovery = %+v, want a second one, recovered", got)
	}
	if len(a.Hung()) != 0 {
		t.Errorf("Hung() after recovery = %v", a.Hung())
	}

	// A new episode notifies again.
	if err := a.Handle(ctx, hungEvent("n1", t0.Add(3*time.Hour))); err != nil {
		t.Fatal(err)
	}
	if got := len(f.hook.received()); got != 3 {
		t.Errorf("webhooks after a second episode = %d, want 3", got)
	}
	if got := len(f.mailer.argv); got != 2 {
		t.Errorf("mails after a second episode = %d, want 2", got)
	}
	if want := "my run; vigil: hung since 2026-11-29T13:00:00Z on n1"; f.slurm.comment != want {
		t.Errorf("comment = %q, want %q", f.slurm.comment, want)
	}
}

func TestHungNotifications(t *testing.T) {
	f := newFixture(t)
	if err := f.actor.Handle(context.Background(), hungEvent("n1", t0)); err != nil {
		t.Fatal(err)
	}
	got := f.hook.received()
	if len(got) != 1 {
		t.Fatalf("webhooks = %d, want 1", len(got))
	}
	b := got[0]
	wantText := "vigil: job 1234 (alice) is hung on n1 since 2026-11-29T10:00:00Z (no I/O progress for 30m0s): FlatUsageStuckCollective (2 devices flat near 100% at 80 W); flat: io, accel:0, accel:1; culprits: n1"
	if b.Text != wantText {
		t.Errorf("webhook text =\n %q\nwant\n %q", b.Text, wantText)
	}
	if b.Event != hang.EventHung || b.Job != "1234" || b.Host != "n1" || b.User != "alice" || !b.Since.Equal(t0.Add(-30*time.Minute)) {
		t.Errorf("webhook fields = %+v", b)
	}
	if reps := f.reports(t); len(reps) != 1 || b.ReportPath != reps[0] {
		t.Errorf("webhook report = %q, reports on disk %v", b.ReportPath, reps)
	}
	wantArgv := []string{"/usr/bin/mail", "-s", "vigil: job 1234 hung on n1", "alice"}
	if len(f.mailer.argv) != 1 || strings.Join(f.mailer.argv[0], "\x00") != strings.Join(wantArgv, "\x00") {
		t.Errorf("mail argv = %q, want %q", f.mailer.argv, wantArgv)
	}
	if len(f.mailer.stdin) == 1 && !strings.HasPrefix(f.mailer.stdin[0], wantText+"\n") {
		t.Errorf("mail body starts %q", f.mailer.stdin[0])
	}
	var line *logrus.Entry
	for _, e := range f.logs.AllEntries() {
		if e.Level == logrus.ErrorLevel {
			line = e
		}
	}
	if line == nil || line.Message != "vigil: job 1234 HUNG on n1 since 2026-11-29T10:00:00Z: FlatUsageStuckCollective: 2 devices flat near 100% at 80 W" || line.Data["node"] != "n1" || line.Data["job"] != "1234" {
		t.Errorf("hang log line = %+v", line)
	}
}

func TestReportGolden(t *testing.T) {
	f := newFixture(t)
	f.actor.Control = ControlRequeue
	f.actor.MaxRequeues = 2
	ev := hungEvent("n1", t0)
	ev.Evidence["since"] = "2026-11-29T09:58:00Z"
	ev.Evidence["culprits"] = []any{"n1", "n3"}
	if err := f.actor.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	reps := f.reports(t)
	if len(reps) != 1 || filepath.Base(reps[0]) != "vigil-hang-1234-n1-20261129T103000Z.json" {
		t.Fatalf("reports = %v", reps)
	}
	got, err := os.ReadFile(reps[0])
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("report differs from %s (go test -update to accept):\n%s", golden, got)
	}
	if fi, err := os.Stat(reps[0]); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("report mode: %v %v", fi.Mode(), err)
	}
}

func TestWebhookRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		codes     []int
		attempts  int
		wantPosts int
		wantErr   bool
	}{
		{"ok first time", nil, 3, 1, false},
		{"server error then ok", []int{500, 503}, 3, 3, false},
		{"rate limited then ok", []int{429}, 3, 2, false},
		{"server errors past the limit", []int{500, 500, 500, 500}, 3, 3, true},
		{"client error is not retried", []int{400}, 3, 1, true},
		{"one attempt only", []int{502}, 1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.codes...)
			f.actor.WebhookAttempts = tc.attempts
			err := f.actor.Handle(context.Background(), hungEvent("n1", t0))
			if got := len(f.hook.received()); got != tc.wantPosts {
				t.Errorf("posts = %d, want %d", got, tc.wantPosts)
			}
			if (err != nil) != tc.wantErr {
				t.Errorf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantPosts > 1 && f.sleeps[0] != time.Second || len(f.sleeps) > 1 && f.sleeps[1] != 2*time.Second {
				t.Errorf("backoff = %v, want 1s, 2s ...", f.sleeps)
			}
			// A failed webhook stops nothing else.
			if len(f.mailer.argv) != 1 || len(f.reports(t)) != 1 || f.slurm.count("comment") != 1 {
				t.Errorf("other actions: mails %d, reports %d, comments %d", len(f.mailer.argv), len(f.reports(t)), f.slurm.count("comment"))
			}
		})
	}
}

func TestWebhookTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	f := newFixture(t)
	f.actor.WebhookURL = srv.URL
	f.actor.WebhookTimeout = 50 * time.Millisecond
	f.actor.WebhookAttempts = 2
	start := time.Now()
	err := f.actor.Handle(context.Background(), hungEvent("n1", t0))
	if err == nil || !strings.Contains(err.Error(), "2 attempt(s)") {
		t.Errorf("err = %v, want a timeout after 2 attempts", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Handle took %v with a 50ms webhook timeout", d)
	}
}

func TestControl(t *testing.T) {
	for _, tc := range []struct {
		name     string
		control  Control
		max      int
		restarts int // scontrol's Restarts
		envCount int // SLURM_RESTART_COUNT
		dry      bool
		want     string // the control call, "" for none
	}{
		{"none", ControlNone, 1, 0, 0, false, ""},
		{"cancel", ControlCancel, 0, 0, 0, false, "cancel 1234"},
		{"requeue under the limit", ControlRequeue, 2, 1, 0, false, "requeue 1234"},
		{"requeue at the limit", ControlRequeue, 2, 2, 0, false, ""},
		{"requeue limit from the environment", ControlRequeue, 2, 0, 2, false, ""},
		{"requeue never when max is 0", ControlRequeue, 0, 0, 0, false, ""},
		{"dry-run cancel", ControlCancel, 0, 0, 0, true, ""},
		{"dry-run requeue", ControlRequeue, 3, 0, 0, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.actor.Control = tc.control
			f.actor.MaxRequeues = tc.max
			f.actor.RestartCount = tc.envCount
			f.actor.DryRun = tc.dry
			f.slurm.restarts = tc.restarts
			if err := f.actor.Handle(context.Background(), hungEvent("n1", t0)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range f.slurm.calls {
				if strings.HasPrefix(c, "cancel") || strings.HasPrefix(c, "requeue") {
					got = append(got, c)
				}
			}
			if tc.want == "" && len(got) != 0 || tc.want != "" && (len(got) != 1 || got[0] != tc.want) {
				t.Errorf("control calls = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDryRunActsOnNothing(t *testing.T) {
	f := newFixture(t)
	f.actor.DryRun = true
	f.actor.Control = ControlCancel
	ctx := context.Background()
	if err := f.actor.Handle(ctx, hungEvent("n1", t0)); err != nil {
		t.Fatal(err)
	}
	if err := f.actor.Handle(ctx, hang.Event{Time: t0.Add(time.Hour), Host: "n1", Event: hang.EventRecovered}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.hook.received()); n != 0 {
		t.Errorf("dry run posted %d webhooks", n)
	}
	if n := len(f.mailer.argv); n != 0 {
		t.Errorf("dry run sent %d mails", n)
	}
	if n := len(f.reports(t)); n != 0 {
		t.Errorf("dry run wrote %d reports", n)
	}
	for _, c := range f.slurm.calls {
		if !strings.HasPrefix(c, "job ") {
			t.Errorf("dry run changed the job: %q", c)
		}
	}
	said := map[string]bool{}
	for _, e := range f.logs.AllEntries() {
		if strings.HasPrefix(e.Message, "dry run: would ") {
			said[e.Message] = true
		}
	}
	for _, m := range []string{"dry run: would write the hang report", "dry run: would set the job's comment",
		"dry run: would POST to the webhook", "dry run: would send mail", "dry run: would scancel the job"} {
		if !said[m] {
			t.Errorf("dry run did not say %q", m)
		}
	}
}

func TestFailingActionsDoNotStopOthers(t *testing.T) {
	f := newFixture(t)
	f.slurm.jobErr = errors.New("scontrol: slurmctld down")
	err := f.actor.Handle(context.Background(), hungEvent("n1", t0))
	if err == nil || !strings.Contains(err.Error(), "slurmctld down") {
		t.Errorf("err = %v, want the scontrol error", err)
	}
	if len(f.hook.received()) != 1 || len(f.mailer.argv) != 1 || len(f.reports(t)) != 1 {
		t.Errorf("webhook %d, mail %d, reports %d: want 1 each", len(f.hook.received()), len(f.mailer.argv), len(f.reports(t)))
	}
}

func TestOtherNodeReportedFirst(t *testing.T) {
	f := newFixture(t)
	f.actor.Stagger = 3 * time.Second
	f.slurm.comment = "my run; vigil: hung since 2026-11-29T10:01:00Z on n2"
	if err := f.actor.Handle(context.Background(), hungEvent("n1", t0)); err != nil {
		t.Fatal(err)
	}
	if want := "my run; vigil: hung since 2026-11-29T10:00:00Z on n1,n2"; f.slurm.comment != want {
		t.Errorf("comment = %q, want %q", f.slurm.comment, want)
	}
	if len(f.hook.received()) != 0 || len(f.mailer.argv) != 0 {
		t.Errorf("second node of one episode notified: webhooks %d, mails %d", len(f.hook.received()), len(f.mailer.argv))
	}
	if len(f.reports(t)) != 1 {
		t.Errorf("the second node still writes its own report")
	}
	if len(f.sleeps) != 1 || f.sleeps[0] != 3*time.Second {
		t.Errorf("waits before reading the comment = %v, want the 3s stagger", f.sleeps)
	}
	if err := f.actor.Handle(context.Background(), hang.Event{Time: t0.Add(time.Hour), Host: "n1", Event: hang.EventRecovered}); err != nil {
		t.Fatal(err)
	}
	if len(f.hook.received()) != 0 {
		t.Errorf("a node that did not announce the hang announced its end")
	}
	if want := "my run; vigil: hung since 2026-11-29T10:00:00Z on n2"; f.slurm.comment != want {
		t.Errorf("comment after n1 recovered = %q, want %q", f.slurm.comment, want)
	}
}

func TestComments(t *testing.T) {
	since := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	w := 30 * time.Minute
	for _, tc := range []struct {
		name, old, host string
		want            string
		dup             bool
	}{
		{"empty", "", "n1", "vigil: hung since 2026-11-29T10:00:00Z on n1", false},
		{"user comment kept", "lr=3e-4 run 7", "n1", "lr=3e-4 run 7; vigil: hung since 2026-11-29T10:00:00Z on n1", false},
		{"old episode replaced", "x; vigil: hung since 2026-11-28T10:00:00Z on n4", "n1", "x; vigil: hung since 2026-11-29T10:00:00Z on n1", false},
		{"recovered replaced", "x; vigil: recovered at 2026-11-29T09:00:00Z on n1 (hung since 2026-11-29T08:00:00Z)", "n1", "x; vigil: hung since 2026-11-29T10:00:00Z on n1", false},
		{"same episode merged", "x; vigil: hung since 2026-11-29T09:50:00Z on n3", "n1", "x; vigil: hung since 2026-11-29T09:50:00Z on n1,n3", true},
		{"same host again", "vigil: hung since 2026-11-29T10:00:00Z on n1", "n1", "vigil: hung since 2026-11-29T10:00:00Z on n1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, dup := HungComment(tc.old, tc.host, since, w)
			if got != tc.want || dup != tc.dup {
				t.Errorf("HungComment(%q) = %q, %v; want %q, %v", tc.old, got, dup, tc.want, tc.dup)
			}
		})
	}
	at := since.Add(time.Hour)
	if got, want := RecoveredComment("x; vigil: hung since 2026-11-29T10:00:00Z on n1,n3", "n1", at, since),
		"x; vigil: hung since 2026-11-29T10:00:00Z on n3"; got != want {
		t.Errorf("RecoveredComment with another host still hung = %q, want %q", got, want)
	}
	if got, want := RecoveredComment("vigil: hung since 2026-11-29T10:00:00Z on n1", "n1", at, since),
		"vigil: recovered at 2026-11-29T11:00:00Z on n1 (hung since 2026-11-29T10:00:00Z)"; got != want {
		t.Errorf("RecoveredComment = %q, want %q", got, want)
	}
}

func TestFlat(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   hang.Event
		want string
	}{
		{"devices", hungEvent("n1", t0), "io accel:0 accel:1"},
		{"one device not flat", hang.Event{Event: hang.EventHung, Evidence: map[string]any{"devices": []any{
			map[string]any{"id": "0", "flat": true}, map[string]any{"id": "1", "flat": false}}}}, "io accel:0"},
		{"no devices", hang.Event{Event: hang.EventHung, Evidence: map[string]any{"cpu_cores_median": 0.0}}, "io cpu"},
		{"suspect", hang.Event{Event: hang.EventSuspect, Evidence: map[string]any{"io_bytes": 3}}, "io"},
		{"recovered", hang.Event{Event: hang.EventRecovered}, ""},
		{"explicit", hang.Event{Event: hang.EventHung, Evidence: map[string]any{"flat": []any{"x"}}}, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(Flat(tc.ev), " "); got != tc.want {
				t.Errorf("Flat = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSinceAndCulprits(t *testing.T) {
	ev := hang.Event{Time: t0, Host: "n2"}
	if got := Since(ev, time.Hour); !got.Equal(t0.Add(-time.Hour)) {
		t.Errorf("Since without evidence = %v", got)
	}
	ev.Evidence = map[string]any{"since": "2026-11-29T09:12:00Z", "culprits": []any{"n7"}}
	if got := Since(ev, time.Hour); !got.Equal(time.Date(2026, 11, 29, 9, 12, 0, 0, time.UTC)) {
		t.Errorf("Since from evidence = %v", got)
	}
	if got := Culprits(ev); len(got) != 1 || got[0] != "n7" {
		t.Errorf("Culprits = %v", got)
	}
	ev.Evidence["culprits"] = []digest.Culprit{{Host: "n4", Reason: "ProcessesGone"}, {Host: "n5"}}
	if got := Culprits(ev); strings.Join(got, ",") != "n4,n5" {
		t.Errorf("Culprits from digest.Culprit = %v", got)
	}
	ev.Evidence["culprits"] = []any{map[string]any{"host": "n6", "reason": "ProcessesGone"}}
	if got := Culprits(ev); strings.Join(got, ",") != "n6" {
		t.Errorf("Culprits from JSON = %v", got)
	}
	if got := Culprits(hang.Event{Host: "n2"}); len(got) != 1 || got[0] != "n2" {
		t.Errorf("Culprits without evidence = %v", got)
	}
}

func TestParseControl(t *testing.T) {
	for in, want := range map[string]Control{"": ControlNone, "none": ControlNone, "cancel": ControlCancel, "requeue": ControlRequeue, "requeue-exclude": ControlRequeueExclude} {
		if got, err := ParseControl(in); err != nil || got != want {
			t.Errorf("ParseControl(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseControl("drain"); !errors.Is(err, ErrBadControl) {
		t.Errorf("ParseControl(drain) err = %v", err)
	}
}
