package hangview

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

func reading(host string, t time.Time, io uint64) trace.Sample {
	return trace.Sample{V: trace.Version, Time: t, Host: host, Job: "7", IO: trace.IO{WChar: io}, CPUUsec: io,
		Accel: []trace.Accel{{ID: "0", Util: 100, PowerW: 80}}}
}

func TestRecentKeepsTheLastWindows(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	r := NewRecent(10 * time.Minute) // keeps 25 minutes
	for i := range 40 {
		at := t0.Add(time.Duration(i) * time.Minute)
		r.Observe(reading("a", at, uint64(i)), nil)
		r.Observe(reading("a", at, uint64(i)), nil) // the same reading through the coordinator
		r.Observe(trace.Sample{Time: at, Host: "a", Job: "7", Log: &trace.Log{Stream: trace.StreamStderr, Line: "x"}}, nil)
	}
	r.Observe(reading("b", t0.Add(39*time.Minute), 1), nil)
	d := r.Data()
	if d.Window != 10*time.Minute || len(d.Hosts) != 2 {
		t.Fatalf("data: window %v, hosts %d", d.Window, len(d.Hosts))
	}
	a := d.Hosts["a"]
	if len(a) != 26 || !a[0].Time.Equal(t0.Add(14*time.Minute)) || !a[25].Time.Equal(t0.Add(39*time.Minute)) {
		t.Errorf("host a: %d points from %v to %v, want 26 from 10:14 to 10:39", len(a), a[0].Time, a[len(a)-1].Time)
	}
	a[0].IOBytes = 999 // a copy: the next page is not changed by this one
	if r.Data().Hosts["a"][0].IOBytes == 999 {
		t.Error("Data returns the kept points, not a copy")
	}
}

func TestRecentEvents(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	r := NewRecent(time.Minute) // keeps 2.5 minutes
	ev := func(host, kind string, min int) hang.Event {
		return hang.Event{Time: t0.Add(time.Duration(min) * time.Minute), Host: host, Job: "7", Event: kind, Reason: "R" + kind}
	}
	r.Observe(reading("a", t0, 1), []hang.Event{ev("a", hang.EventSuspect, 0)})
	r.Observe(reading("b", t0, 1), []hang.Event{ev("b", hang.EventSuspect, 0)})
	r.Observe(reading("a", t0.Add(time.Minute), 1), []hang.Event{ev("a", hang.EventHung, 1)})
	// The coordinator's view of the same change, a moment later: no second event.
	r.Observe(reading("a", t0.Add(70*time.Second), 1), []hang.Event{ev("a", hang.EventHung, 1)})
	r.Observe(reading("a", t0.Add(10*time.Minute), 1), []hang.Event{ev("a", hang.EventRecovered, 10), {Host: "a", Event: hang.EventStraggler}})
	evs := r.Data().Events
	// a's suspect and hung are older than 2.5 minutes before its recovery:
	// gone; b's suspect is its latest event: kept.
	if len(evs) != 2 || evs[0].Host != "b" || evs[0].Event != hang.EventSuspect || evs[1].Host != "a" || evs[1].Event != hang.EventRecovered || evs[1].Reason != "Rrecovered" {
		t.Errorf("events %+v, want b's suspect and a's recovery", evs)
	}
}

func TestRecentPageWithDigest(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	r := NewRecent(5 * time.Minute)
	for i := range 12 {
		at := t0.Add(time.Duration(i) * time.Minute)
		for _, h := range []string{"gpu01", "gpu02"} {
			io := uint64(min(i, 4)) << 20
			var evs []hang.Event
			if i == 10 {
				evs = []hang.Event{{Time: at, Host: h, Job: "7", Event: hang.EventHung, Reason: hang.ReasonFlatUsageStuckCollective}}
			}
			r.Observe(reading(h, at, io), evs)
		}
	}
	d := r.Data()
	d.Title = "vigil hang report"
	d.Events = append(d.Events, DigestOf(digest.DigestEvent{Time: t0.Add(11 * time.Minute), Job: "7", Event: digest.EventDigest,
		Cause: digest.CauseRankFailed, Culprits: []digest.DigestCulprit{{Host: "gpu02", Reason: "ProcessesGone"}}, Hosts: []string{"gpu01", "gpu02"}}))
	page := string(Render(d))
	checkPage(t, page, []string{"gpu01", "gpu02"}, []string{"gpu02"})
	for _, want := range []string{"<title>vigil hang report: job 7</title>", "rank-failed", "ProcessesGone", `class="event hung"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// DigestOf is a digest as an event of the page: how the tests draw one.
func DigestOf(d digest.DigestEvent) Event {
	return Event{Time: d.Time, Job: d.Job, Event: digest.EventDigest, Cause: d.Cause, Culprits: d.Culprits, Hint: d.Hint, Hosts: d.Hosts}
}
