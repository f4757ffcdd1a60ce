package hang

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// cutOffTrace is the view of the two hosts left when gpu03, the job's
// coordinator, is cut off at minute 5: gpu01 (the new coordinator) says
// gpu03's watcher is lost, and from minute 6 both hosts' waits show
// gpu02's data to gpu03 being retransmitted while gpu01's ranks only
// wait (a ring collective). gpu03 is never heard again.
func cutOffTrace(n int) []trace.Sample { return cutOffTraceWith(n, false, true) }

// cutOffTraceWith is cutOffTrace with the lost record's word that gpu03's
// address answered no connection (unreachable), and with gpu02's data to
// it retransmitted or not (retrans).
func cutOffTraceWith(n int, unreachable, retrans bool) []trace.Sample {
	host := func(name string, seed int64, ph ...phase) gen {
		return gen{Host: name, Job: "4242", Seed: seed, Period: time.Minute, N: n, Devs: 8, Phases: ph}
	}
	at := func(m int) time.Time { return t0.Add(time.Duration(m)*time.Minute + time.Second) }
	logs := []trace.Sample{trace.LostRecord("gpu01", "4242", at(5), trace.Lost{Host: "gpu03", Addr: "10.0.0.3", AfterS: 90, Unreachable: unreachable})}
	var to []string
	if retrans {
		to = []string{"10.0.0.3"}
	}
	for m := 6; m < n; m++ {
		logs = append(logs,
			trace.WaitsRecord("gpu01", "4242", at(m), trace.Waits{Procs: 4, Waits: []trace.Wait{{On: trace.WaitFutex, Syscall: "futex", Procs: 4}}}),
			trace.WaitsRecord("gpu02", "4242", at(m), trace.Waits{Procs: 4, Waits: []trace.Wait{{On: trace.WaitFutex, Syscall: "futex", Procs: 4}},
				RetransTo: to}))
	}
	return withLogs(logs, host("gpu01", 1, training, at0(stuck, 5)), host("gpu02", 2, training, at0(stuck, 5)))
}

func at0(p phase, from int) phase { return at(p, from) }

// TestCutOffHostNamed: the hosts left name the host cut off from the
// evidence (its watcher lost, their data to it retransmitted), confirmed by
// flat readings, long before the window: one digest, network, gpu03.
func TestCutOffHostNamed(t *testing.T) {
	evs := replayJobEvents(t, cutOffTrace(14))
	var got []string
	for _, e := range evs {
		s := e.Event + " " + e.Cause
		for _, c := range e.Culprits {
			s += " " + c.Host + ":" + c.Reason
		}
		got = append(got, s)
		if e.Detection == nil || e.Detection.By != digest.DetectedEvidence || e.Time.After(t0.Add(11*time.Minute)) {
			t.Errorf("digest at %v detected by %+v: want the evidence's, some 3 periods after minute 6", e.Time.Sub(t0), e.Detection)
		}
	}
	if strings.Join(got, "; ") != "digest network gpu03:Retransmitting" {
		t.Fatalf("job events %q, want one digest naming gpu03 cut off", got)
	}
}

// TestCutOffHostEndsTheJob: Slurm ends the job once gpu03 stops
// answering (NODE_FAIL) before the evidence is confirmed: the digest of the
// failed job, with no line of the job's output, names gpu03.
func TestCutOffHostEndsTheJob(t *testing.T) {
	ss := cutOffTrace(8)
	last := ss[len(ss)-1].Time
	ss = append(ss, trace.Sample{V: 1, Time: last.Add(time.Second), Host: "gpu01", Job: "4242",
		Log: &trace.Log{Stream: trace.StreamEnd, Line: `{"role":"coordinator","why":"signalled"}`}})
	e := NewEpisodes(testConfig())
	for _, x := range ss {
		e.Observe(x, nil)
	}
	var got []string
	for _, ev := range e.Due(time.Time{}) {
		d, ok := ev.(digest.DigestEvent)
		if !ok {
			continue
		}
		s := d.Event + " " + d.Cause
		for _, c := range d.Culprits {
			s += " " + c.Host
		}
		got = append(got, s)
	}
	if strings.Join(got, "; ") != "failed network gpu03" {
		t.Fatalf("job events %q, want the failed job's digest naming gpu03", got)
	}
}

// TestUnreachableHostNamed: no data was in flight to gpu03 when it was cut
// off (a ring whose sends had all been acknowledged), but its address
// answered no connection from the peer that lost it: one digest,
// network, gpu03, Unreachable. A lost watcher whose node answers names
// nobody before the window.
func TestUnreachableHostNamed(t *testing.T) {
	for _, tc := range []struct {
		unreachable bool
		want        string
	}{{true, "digest network gpu03:Unreachable"}, {false, ""}} {
		var got []string
		for _, e := range replayJobEvents(t, cutOffTraceWith(14, tc.unreachable, false)) {
			s := e.Event + " " + e.Cause
			for _, c := range e.Culprits {
				s += " " + c.Host + ":" + c.Reason
			}
			got = append(got, s)
		}
		if strings.Join(got, "; ") != tc.want {
			t.Errorf("unreachable %v: job events %q, want %q", tc.unreachable, got, tc.want)
		}
	}
}
