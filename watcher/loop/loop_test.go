package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/watcher/coord"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hangview"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// fakeClock advances only when the loop waits: After moves now forward by d
// and fires at once, so a loop over hours of fake time runs in microseconds.
type fakeClock struct {
	now    time.Time
	waits  []time.Duration
	onWait func() // called after each wait (e.g. to cancel the context)
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	if c.onWait != nil {
		c.onWait()
	}
	return ch
}

// fakeSampler hands out samples whose I/O grows while writing is true; it
// can take a while (moving the fake clock) to model a slow sample.
type fakeSampler struct {
	clock *fakeClock
	cost  time.Duration
	times []time.Time
	wchar uint64
	write func(t time.Time) bool
}

func (s *fakeSampler) Sample(now time.Time) trace.Sample {
	s.times = append(s.times, now)
	if s.write == nil || s.write(now) {
		s.wchar += 10 << 20
	}
	if s.clock != nil {
		s.clock.now = s.clock.now.Add(s.cost)
	}
	return trace.Sample{V: 1, Time: now, Host: "n1", Job: "7", IO: trace.IO{WChar: s.wchar}, Procs: 3,
		Accel: []trace.Accel{{ID: "0", Util: 100, MemUsedMiB: 30000, PowerW: 80}}}
}

// scriptDetector returns the events scripted for the n-th observation.
type scriptDetector struct {
	n      int
	events map[int][]hang.Event
	seen   []trace.Sample
}

func (d *scriptDetector) Observe(s trace.Sample) []hang.Event {
	d.seen = append(d.seen, s)
	d.n++
	return d.events[d.n]
}

type recordingHandler struct {
	events []hang.Event
	err    error
}

func (h *recordingHandler) Handle(_ context.Context, ev hang.Event) error {
	h.events = append(h.events, ev)
	return h.err
}

func quiet() logrus.FieldLogger {
	l, _ := test.NewNullLogger()
	return l
}

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func TestLoopStopsWhenJobGone(t *testing.T) {
	clock := &fakeClock{now: t0}
	s := &fakeSampler{}
	det := &scriptDetector{events: map[int][]hang.Event{
		3: {{Time: t0.Add(2 * time.Minute), Host: "n1", Event: "hung", Reason: "FlatIdle"}},
	}}
	h := &recordingHandler{err: errors.New("webhook down")}
	var rec, events bytes.Buffer
	calls := 0
	logger, logs := test.NewNullLogger()
	l := &Loop{
		Clock: clock, Period: time.Minute, Sampler: s, Detector: det,
		Alive: func() error {
			calls++
			switch {
			case calls == 2:
				return errors.New("cgroup unreadable") // logged, not fatal
			case calls > 5:
				return fmt.Errorf("cgroup: %w", ErrJobGone)
			}
			return nil
		},
		Record: trace.NewWriter(&rec), Events: &events, Actions: h, Log: logger,
	}
	if err := l.Run(context.Background()); err != nil {
		t.Fatalf("Run = %v, want nil when the job is gone", err)
	}
	if len(s.times) != 5 {
		t.Fatalf("samples = %d, want 5", len(s.times))
	}
	for i, tm := range s.times {
		if want := t0.Add(time.Duration(i) * time.Minute); !tm.Equal(want) {
			t.Errorf("sample %d at %v, want %v", i, tm, want)
		}
	}
	if lines := strings.Count(rec.String(), "\n"); lines != 5 {
		t.Errorf("recorded %d lines, want 5", lines)
	}
	r := trace.NewReader(&rec)
	first, err := r.Next()
	if err != nil || first.Host != "n1" || first.IO.WChar != 10<<20 {
		t.Errorf("first recorded sample = %+v, %v", first, err)
	}
	if len(h.events) != 1 || h.events[0].Event != "hung" {
		t.Errorf("handled %+v, want the one hung event", h.events)
	}
	var ev hang.Event
	if err := json.Unmarshal(events.Bytes(), &ev); err != nil || ev.Event != "hung" || ev.Reason != "FlatIdle" {
		t.Errorf("printed event %q: %v", events.String(), err)
	}
	var sawActionErr, sawAliveErr bool
	for _, e := range logs.AllEntries() {
		sawActionErr = sawActionErr || e.Level == logrus.ErrorLevel && e.Data[logrus.ErrorKey] != nil
		sawAliveErr = sawAliveErr || strings.Contains(e.Message, "could not tell whether the job is still here")
	}
	if !sawActionErr || !sawAliveErr {
		t.Errorf("log lacks the failed action (%v) or the unreadable cgroup (%v)", sawActionErr, sawAliveErr)
	}
}

func TestLoopStopsOnSignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := &fakeClock{now: t0}
	n := 0
	clock.onWait = func() {
		n++
		if n == 3 {
			cancel() // SIGTERM arrives during the third wait
		}
	}
	s := &fakeSampler{}
	l := &Loop{Clock: clock, Period: 10 * time.Second, Sampler: s, Detector: &scriptDetector{}, Log: quiet()}
	if err := l.Run(ctx); err != nil {
		t.Fatalf("Run = %v, want nil on SIGTERM", err)
	}
	if len(s.times) != 3 {
		t.Errorf("samples = %d, want 3", len(s.times))
	}
}

func TestLoopKeepsItsGrid(t *testing.T) {
	clock := &fakeClock{now: t0}
	s := &fakeSampler{clock: clock}
	calls := 0
	l := &Loop{Clock: clock, Period: time.Minute, Sampler: s, Detector: &scriptDetector{}, Log: quiet(),
		Alive: func() error {
			calls++
			switch calls {
			case 2:
				s.cost = 150 * time.Second // this sample overruns two periods
			case 3:
				s.cost = 0
			case 5:
				return ErrJobGone
			}
			return nil
		}}
	if err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, time.Minute, 4 * time.Minute, 5 * time.Minute}
	if len(s.times) != len(want) {
		t.Fatalf("sample times %v", s.times)
	}
	for i, w := range want {
		if got := s.times[i].Sub(t0); got != w {
			t.Errorf("sample %d at +%v, want +%v", i, got, w)
		}
	}
}

func TestLoopRejectsZeroPeriod(t *testing.T) {
	l := &Loop{Sampler: &fakeSampler{}, Detector: &scriptDetector{}}
	if err := l.Run(context.Background()); err == nil {
		t.Error("Run with period 0 returned no error")
	}
}

// viewAtHandle is a Handler that notes how many readings and events the
// view held when it was called.
type viewAtHandle struct {
	view           *hangview.Recent
	points, events int
}

func (h *viewAtHandle) Handle(_ context.Context, ev hang.Event) error {
	d := h.view.Data()
	h.points, h.events = len(d.Hosts["n1"]), len(d.Events)
	return nil
}

// The view has the reading and the event of a verdict before the actions
// run, so that the hang report's page shows them.
func TestLoopViewBeforeActions(t *testing.T) {
	det := &scriptDetector{events: map[int][]hang.Event{
		3: {{Time: t0.Add(2 * time.Minute), Host: "n1", Job: "7", Event: "hung", Reason: "FlatIdle"}},
	}}
	view := hangview.NewRecent(time.Hour)
	h := &viewAtHandle{view: view}
	l := &Loop{Period: time.Minute, Sampler: &fakeSampler{}, Detector: det, Actions: h, View: view, Log: quiet()}
	for i := range 4 {
		if _, err := l.Step(context.Background(), t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if h.points != 3 || h.events != 1 {
		t.Errorf("the view held %d readings and %d events when the hung event was handled, want 3 and 1", h.points, h.events)
	}
	if n := len(view.Data().Hosts["n1"]); n != 4 {
		t.Errorf("the view holds %d readings, want 4", n)
	}
}

// lostAtEnd is a job's view (a new coordinator) holding the record of the
// coordinator it lost at a takeover the loop has not stepped since.
type lostAtEnd struct {
	pending  []trace.Sample
	observed []trace.Sample
	ended    bool
	endAt    time.Time
}

func (v *lostAtEnd) Observe(s trace.Sample, _ []hang.Event) {
	if !v.ended {
		v.observed = append(v.observed, s)
	}
}
func (v *lostAtEnd) Due(context.Context, time.Time) []coord.Out { return nil }
func (v *lostAtEnd) Role() string                               { return trace.RoleCoordinator }
func (v *lostAtEnd) End(_ context.Context, now time.Time) []coord.Out {
	v.ended, v.endAt = true, now
	return nil
}
func (v *lostAtEnd) LostRecords(host, job string, at time.Time) []trace.Sample {
	out := v.pending
	v.pending = nil
	for i := range out {
		out[i].Time = at
	}
	return out
}

// A takeover between the loop's last step and the job's end (Slurm's
// NODE_FAIL for the node cut off, seconds after its watcher was found
// lost): the loss goes into the job's view before its end record, so the
// new coordinator's digest of the failed job knows who stopped answering.
func TestLoopFinishTakesTheLossOfATakeover(t *testing.T) {
	lost := trace.LostRecord("n1", "7", t0, trace.Lost{Host: "n0", Addr: "10.0.0.1", Unreachable: true, AfterS: 97})
	v := &lostAtEnd{pending: []trace.Sample{lost}}
	waits := &WaitsPoller{Read: func() (trace.Waits, bool) {
		return trace.Waits{Procs: 1, Waits: []trace.Wait{{On: trace.WaitRunning, Procs: 1}}}, true
	}}
	l := &Loop{Period: time.Minute, Sampler: &fakeSampler{}, Detector: &scriptDetector{}, Job: v, Waits: waits, Log: quiet()}
	if _, err := l.Step(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	v.pending = []trace.Sample{lost} // the takeover comes after the step
	v.observed = nil
	l.finish(trace.EndSignalled)
	var streams []string
	for _, s := range v.observed {
		if s.Log != nil {
			streams = append(streams, s.Log.Stream)
		}
		// A live view does not judge the instant of its latest record
		// (more may come then): the end comes after them all. CI run 15's
		// new coordinator ended at its waits record's very instant and
		// gave no digest.
		if !v.endAt.After(s.Time) {
			t.Errorf("End at %s, not after the %s record at %s", v.endAt.Format(time.RFC3339Nano), s.Log.Stream, s.Time.Format(time.RFC3339Nano))
		}
	}
	if want := []string{trace.StreamLost, trace.StreamWaits, trace.StreamEnd}; !slices.Equal(streams, want) {
		t.Errorf("the view observed %v at the end, want %v", streams, want)
	}
}
