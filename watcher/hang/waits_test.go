package hang

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// The waits records of a trace give, in a replay, the digest they give
// live; without them the same trace names nobody for the network.
func TestWaitsReplay(t *testing.T) {
	l, _ := json.Marshal(joblog.Layout{Nodes: []string{"gpu01", "gpu02", "gpu03"},
		Addrs: map[string]string{"gpu01": "10.0.0.1", "gpu02": "10.0.0.2", "gpu03": "10.0.0.3"}})
	recs := []trace.Sample{logAt("gpu01", 0, trace.StreamLayout, string(l))}
	toN3Retrans := trace.Wait{On: trace.WaitSocket, Syscall: "recvfrom", Peer: "10.0.0.3", Retrans: true, Procs: 4}
	for m := 30; m < 50; m++ {
		for _, h := range []string{"gpu01", "gpu02"} {
			r := trace.WaitsRecord(h, "4242", t0.Add(time.Duration(m)*time.Minute+time.Nanosecond), trace.Waits{Procs: 4, Waits: []trace.Wait{toN3Retrans}})
			recs = append(recs, r)
		}
	}
	host := func(name string, seed int64, ph ...phase) gen {
		return gen{Host: name, Job: "4242", Seed: seed, Period: time.Minute, N: 50, Devs: 2, Phases: ph}
	}
	gens := []gen{host("gpu01", 61, training, at(stuck, 30)), host("gpu02", 62, training, at(stuck, 30)), host("gpu03", 63, training, at(stuck, 30))}
	digests := func(ss []trace.Sample) string {
		var got []string
		for _, e := range replayJobEvents(t, ss) {
			s := e.Cause
			for _, c := range e.Culprits {
				s += " " + c.Host + " " + c.Reason
			}
			got = append(got, s)
		}
		return strings.Join(got, "; ")
	}
	if got, want := digests(withLogs(recs, gens...)), "network gpu03 Retransmitting"; got != want {
		t.Errorf("replay with waits records: %q, want %q", got, want)
	}
	if got := digests(withLogs(recs[:1], gens...)); strings.Contains(got, "Retransmitting") {
		t.Errorf("replay without waits records: %q names retransmits", got)
	}
}

// A job that prints at every poll is suspect from the first round without
// a line, two rounds and more before the pulse's verdict: the members,
// which hear of it at the next round, read what their processes wait on
// in time for the digest. A line ends it.
func TestSuspectFromTheFirstSilentRound(t *testing.T) {
	c := watchcfg.DefaultHang() // 30 s period, pulse floor 2 minutes
	e := NewEpisodes(c)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * c.Period) }
	var suspect []int
	verdict := -1
	for i := range 16 {
		if i < 10 || i == 15 {
			e.Observe(trace.Sample{V: 1, Time: at(i).Add(time.Millisecond), Host: "gpu01", Job: "4242",
				Log: &trace.Log{Stream: trace.StreamStdout, Line: fmt.Sprintf("[rank0]: epoch 0 step %d/100000 loss 0.1234", 10*i)}}, nil)
		}
		for _, h := range []string{"gpu01", "gpu02"} {
			e.Observe(trace.Sample{V: 1, Time: at(i).Add(2 * time.Millisecond), Host: h, Job: "4242", Procs: 4, CPUUsec: uint64(i) * 1000}, nil)
		}
		for _, ev := range e.Due(at(i).Add(3 * time.Millisecond)) {
			if _, ok := ev.(digest.DigestEvent); ok && verdict < 0 {
				verdict = i
			}
		}
		if e.Suspect("4242") {
			suspect = append(suspect, i)
		}
	}
	if !slices.Equal(suspect, []int{10, 11, 12, 13, 14}) {
		t.Errorf("suspect at rounds %v, want 10 to 14: from the first round without a line to the line of round 15", suspect)
	}
	if verdict-10 < 2 {
		t.Errorf("the pulse's verdict at round %d, want two rounds or more after the first suspect one (10)", verdict)
	}
}
