package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/watcher/coord"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

const (
	ncclNetLine = "gpu02:4100:4177 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.3<45123> with status=12 opcode=0 len=0 vendor err 129"
	xidLine     = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."
)

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func TestJobLogsFollowsOutputsAndKeepsMatchedLines(t *testing.T) {
	dir := t.TempDir()
	out, errf := filepath.Join(dir, "slurm-7.out"), filepath.Join(dir, "slurm-7.err")
	appendFile(t, out, "epoch 1 step 10 loss 2.3\nplain line\n")
	log, hook := test.NewNullLogger()
	j := OpenJobLogs(context.Background(), func(context.Context) (string, string, string, error) { return out, errf, "n1", nil },
		filepath.Join(dir, "noroot"), "n1", "7", []string{"n1", "gpu02"}, log)
	defer j.Close()
	if !strings.Contains(hook.AllEntries()[0].Message, "dmesg_restrict=1") {
		t.Errorf("an unreadable kernel log should be said once: %v", hook.AllEntries()[0].Message)
	}
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	got := j.Poll(now)
	if len(got) != 2 || got[0].Log.Stream != trace.StreamLayout || got[0].Log.Line != `{"nodes":["n1","gpu02"]}` {
		t.Fatalf("first poll = %+v, want the layout record first", got)
	}
	// A poll's records are stamped in the order read, a nanosecond apart,
	// just before the poll.
	if !got[0].Time.Before(got[1].Time) || !got[1].Time.Equal(now.Add(-time.Nanosecond)) {
		t.Errorf("stamps %v, %v: want in order, the last a nanosecond before %v", got[0].Time, got[1].Time, now)
	}
	got = got[1:]
	if got[0].Log.Line != "epoch 1 step 10 loss 2.3" || got[0].Log.Stream != trace.StreamStdout || got[0].Host != "n1" {
		t.Fatalf("first poll = %+v", got)
	}
	appendFile(t, errf, "warning: nothing\n"+ncclNetLine+"\nhalf a li")
	got = j.Poll(now.Add(time.Minute))
	// Recorded for the node that read it; the digest attributes it to
	// gpu02 from its text (joblog.Attribute).
	if len(got) != 1 || got[0].Log.Line != ncclNetLine || got[0].Log.Stream != trace.StreamStderr || got[0].Host != "n1" {
		t.Fatalf("second poll = %+v, want the NCCL line, recorded for n1 which read it", got)
	}
	if got := j.Poll(now.Add(2 * time.Minute)); len(got) != 0 {
		t.Errorf("nothing new: %+v", got)
	}
}

func TestJobLogsSameFileOnceAndUnknownOutputs(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "slurm-7.out")
	appendFile(t, out, ncclNetLine+"\n")
	log, _ := test.NewNullLogger()
	j := OpenJobLogs(context.Background(), func(context.Context) (string, string, string, error) { return out, out, "", nil }, dir, "n1", "7", nil, log)
	if got := j.Poll(time.Now()); len(got) != 2 || got[1].Host != "n1" || got[1].Log.Stream == trace.StreamLayout {
		t.Errorf("stdout and stderr in one file: %+v, want the layout and 1 line of n1", got)
	}
	j = OpenJobLogs(context.Background(), func(context.Context) (string, string, string, error) { return "", "", "", os.ErrPermission }, dir, "n1", "7", nil, log)
	if got := j.Poll(time.Now()); len(got) != 0 {
		t.Errorf("no outputs: %+v", got)
	}
	j = OpenJobLogs(context.Background(), func(context.Context) (string, string, string, error) { return out, out, "n2", nil }, dir, "n1", "7", nil, log)
	if got := j.Poll(time.Now()); len(got) != 0 {
		t.Errorf("not the batch host: %+v, want nothing (the batch host's watcher reads the job's output)", got)
	}
}

func TestJobLogsKernelLogWhereReadable(t *testing.T) {
	root := t.TempDir()
	kmsg := filepath.Join(root, "dev", "kmsg")
	if err := os.MkdirAll(filepath.Dir(kmsg), 0o755); err != nil {
		t.Fatal(err)
	}
	appendFile(t, kmsg, "6,1,100,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=old, before the job\n")
	log, _ := test.NewNullLogger()
	j := OpenJobLogs(context.Background(), nil, root, "n1", "7", []string{"n1", "gpu02"}, log)
	defer j.Close()
	appendFile(t, kmsg, "4,2,200,-;"+xidLine+"\n SUBSYSTEM=pci\n6,3,300,-;eth0: link up\n")
	got := j.Poll(time.Now())
	if len(got) != 1 || got[0].Log.Stream != trace.StreamKmsg || got[0].Log.Line != xidLine {
		t.Fatalf("kernel log lines = %+v (only what came after the start)", got)
	}
}

// lineSource gives fixed lines once.
type lineSource struct{ lines []string }

func (s *lineSource) Poll(now time.Time) []trace.Sample {
	var out []trace.Sample
	for _, l := range s.lines {
		out = append(out, trace.Sample{V: 1, Time: now, Host: "n1", Job: "7", Log: &trace.Log{Stream: trace.StreamStderr, Line: l}})
	}
	s.lines = nil
	return out
}

type digestRecorder struct {
	got    []digest.DigestEvent
	notify []bool
}

func (d *digestRecorder) HandleJobRecovered(context.Context, time.Time, time.Time, time.Time) error {
	return nil
}

func (d *digestRecorder) HandleDigest(_ context.Context, ev digest.DigestEvent, notify bool) error {
	d.got, d.notify = append(d.got, ev), append(d.notify, notify)
	return nil
}

// The live loop records the matched lines as trace log records, and a
// lone watcher's digest reads them: a fault XID makes it bad-device.
func TestLoopRecordsLogLinesAndLoneDigestReadsThem(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: start}
	var rec, events bytes.Buffer
	c := DefaultSettings().Hang
	c.Window, c.Period, c.Grace = 6*time.Second, time.Second, 0
	det := &scriptDetector{events: map[int][]hang.Event{3: {{Time: start.Add(2 * time.Second), Host: "n1", Job: "7", Event: hang.EventHung, Reason: "FlatUsage"}}}}
	digests := &digestRecorder{}
	l := &Loop{Clock: clock, Period: time.Second, Sampler: &fakeSampler{}, Detector: det, Record: trace.NewWriter(&rec),
		Events: &events, Logs: &lineSource{lines: []string{xidLine}}, Job: coord.NewLone(c), Digests: digests,
		Log: logrus.New()}
	for i := range 6 {
		if _, err := l.Step(context.Background(), start.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		clock.now = start.Add(time.Duration(i)*time.Second + 10*time.Millisecond)
	}
	r := trace.NewReader(&rec)
	var logs int
	for {
		s, err := r.Next()
		if err != nil {
			break
		}
		if s.IsLog() {
			logs++
			if s.Log.Line != xidLine || s.Log.Stream != trace.StreamStderr {
				t.Errorf("log record %+v", s.Log)
			}
		}
	}
	if logs != 1 {
		t.Errorf("%d log records, want 1", logs)
	}
	if len(digests.got) != 1 || digests.got[0].Cause != digest.CauseBadDevice || digests.notify[0] {
		t.Fatalf("digests = %+v (notify %v), want one bad-device, recorded only", digests.got, digests.notify)
	}
	var printed int
	for _, line := range strings.Split(strings.TrimSpace(events.String()), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil && ev["event"] == digest.EventDigest {
			printed++
		}
	}
	if printed != 1 {
		t.Errorf("%d digest lines printed, want 1:\n%s", printed, events.String())
	}
}

// Polling the real kernel log never waits for the kernel to say something.
func TestJobLogsRealKernelLogDoesNotBlock(t *testing.T) {
	log, _ := test.NewNullLogger()
	j := OpenJobLogs(context.Background(), nil, "/", "n1", "7", nil, log)
	defer j.Close()
	if j.kmsg < 0 {
		t.Skip("/dev/kmsg is not readable here (dmesg_restrict=1 and not root)")
	}
	done := make(chan struct{})
	go func() {
		j.Poll(time.Now())
		j.Poll(time.Now())
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a poll of /dev/kmsg blocked")
	}
}

// The kernel's and the devices' lines of a poll come before the job's own
// output of the same poll, each stream in the order it was written.
func TestJobLogsPollOrder(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	rec := func(stream, line string) trace.Sample {
		return trace.Sample{V: 1, Time: now, Host: "n1", Job: "7", Log: &trace.Log{Stream: stream, Line: line}}
	}
	got := inOrder([]trace.Sample{rec(trace.StreamStdout, "a"), rec(trace.StreamStderr, "b"), rec(trace.StreamKmsg, "x"),
		rec(trace.StreamStdout, "c"), rec(trace.StreamDevice, "y"), rec(trace.StreamLayout, "l")}, now)
	var order []string
	for i, r := range got {
		order = append(order, r.Log.Line)
		if i > 0 && !got[i-1].Time.Before(r.Time) || !r.Time.Before(now) {
			t.Errorf("record %d stamped %v", i, r.Time)
		}
	}
	if strings.Join(order, "") != "lxyabc" {
		t.Errorf("order %v, want the layout, the kernel's and devices' lines, then the job's output", order)
	}
}

// ctxRecorder records whether the context it was handed was done.
type ctxRecorder struct{ errs []error }

func (d *ctxRecorder) HandleJobRecovered(context.Context, time.Time, time.Time, time.Time) error {
	return nil
}

func (d *ctxRecorder) HandleDigest(ctx context.Context, _ digest.DigestEvent, _ bool) error {
	d.errs = append(d.errs, ctx.Err())
	return nil
}

// TestDigestActionsOutliveTheStop: the loop told to stop (Slurm ended the
// job, the watcher signalled) just as a digest comes: its actions (the
// webhook) still run with a live context, bounded by FinishTimeout.
func TestDigestActionsOutliveTheStop(t *testing.T) {
	rec := &ctxRecorder{}
	l := &Loop{Digests: rec, Events: &bytes.Buffer{}, Log: logrus.New()}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l.jobEvents(ctx, []coord.Out{{Event: digest.DigestEvent{Job: "7", Event: digest.EventDigest, Cause: digest.CauseNetwork}, Notify: true}})
	if len(rec.errs) != 1 || rec.errs[0] != nil {
		t.Fatalf("the digest's actions ran with %v, want one live context", rec.errs)
	}
}
