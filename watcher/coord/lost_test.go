package coord

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// The coordinator's watcher vanishes without its farewell (its node cut
// off, or down): the members take over, and each records that it lost it,
// with the address it met at, once; until the record is in the job's view
// the member reads what its processes wait on.
func TestLostCoordinatorIsRecorded(t *testing.T) {
	c := testHang()
	c.Period = time.Second // the takeover's wait: 3 periods and a gather
	s := startSimWith(t, 3, c)
	_, addrs := rdvtest.Cluster(3)
	s.nodes[0].mu.Lock()
	s.nodes[0].byeSaid = true // no farewell: it is lost, not stopping
	s.nodes[0].mu.Unlock()
	s.nodes[0].Close()
	s.waitCoordinator(1)
	for _, i := range []int{1, 2} {
		n := s.nodes[i]
		if !n.Suspect() {
			t.Errorf("%s: not suspect before its lost record went in", s.names[i])
		}
		recs := n.LostRecords(s.names[i], "42", t0)
		if len(recs) != 1 || recs[0].Log.Stream != trace.StreamLost {
			t.Fatalf("%s: lost records %+v, want one", s.names[i], recs)
		}
		l, ok := trace.ParseLost(recs[0].Log.Line)
		if !ok || l.Host != s.names[0] || l.Addr != addrs[s.names[0]] || l.AfterS != 3 || l.Unreachable {
			t.Errorf("%s: lost %+v, want %s at %s after 3s, reachable (its kernel refuses the connection)", s.names[i], l, s.names[0], addrs[s.names[0]])
		}
		if again := n.LostRecords(s.names[i], "42", t0); len(again) != 0 {
			t.Errorf("%s: lost records again: %+v", s.names[i], again)
		}
	}
}

// A coordinator stopped by its farewell is not lost: no record.
func TestStoppedCoordinatorIsNotLost(t *testing.T) {
	c := testHang()
	c.Period = time.Second
	s := startSimWith(t, 3, c)
	s.nodes[0].Close()
	s.waitCoordinator(1)
	if recs := s.nodes[1].LostRecords(s.names[1], "42", t0); len(recs) != 0 {
		t.Fatalf("lost records %+v after the coordinator's farewell, want none", recs)
	}
}

// quiet: a coordinator that hears none of its members holds its
// announcements; a member's answer releases them; after the takeover's
// count of deaf rounds it is cut off and announces nothing more, its
// digests kept on its disk. A two-node job's coordinator, whose one member
// is silent, announces as before.
func TestQuietCoordinatorHoldsWhileDeaf(t *testing.T) {
	logger, _ := test.NewNullLogger()
	n := &Node{cfg: Config{Self: "a", Takeover: 3}, log: logger}
	dig := func(k int) []Out {
		return []Out{{Event: digest.DigestEvent{Job: "42", Event: digest.EventDigest, Cause: "network", Time: t0.Add(time.Duration(k) * time.Minute)}, Notify: true}}
	}
	self := map[string]Summary{"a": {}}
	both := map[string]Summary{"a": {}, "b": {}}
	count := func(outs []Out) (notified, kept int) {
		for _, o := range outs {
			if o.Notify {
				notified++
			} else {
				kept++
			}
		}
		return
	}
	if a, k := count(n.quiet(dig(0), 2, both)); a != 1 || k != 0 {
		t.Fatalf("a member answered: %d announced, %d kept; want 1, 0", a, k)
	}
	if a, k := count(n.quiet(dig(1), 2, self)); a != 0 || k != 0 || len(n.held) != 1 {
		t.Fatalf("no member answered: %d announced, %d kept, %d held; want the digest held", a, k, len(n.held))
	}
	if a, k := count(n.quiet(nil, 2, both)); a != 1 || k != 0 {
		t.Fatalf("a member answers again: %d announced, %d kept; want the held digest announced", a, k)
	}
	var kept int
	for r := range 3 {
		a, k := count(n.quiet(dig(2+r), 2, self))
		if a != 0 {
			t.Fatalf("deaf round %d announced %d", r+1, a)
		}
		kept += k
	}
	if !n.cutOff || kept != 3 {
		t.Fatalf("after 3 deaf rounds: cut off %v, %d kept on disk; want cut off, 3 kept", n.cutOff, kept)
	}
	if a, k := count(n.quiet(dig(9), 2, both)); a != 0 || k != 1 {
		t.Fatalf("cut off, a late answer: %d announced, %d kept; want none announced", a, k)
	}
	lone := &Node{cfg: Config{Self: "a", Takeover: 3}, log: logger}
	if a, _ := count(lone.quiet(dig(0), 0, self)); a != 1 {
		t.Fatalf("a meeting without members announced %d, want its digest", a)
	}
	pair := &Node{cfg: Config{Self: "a", Takeover: 3}, log: logger}
	for r := range 5 {
		if a, _ := count(pair.quiet(dig(r), 1, self)); a != 1 {
			t.Fatalf("a two-node job's coordinator, its one member silent (round %d), announced %d: want its digest (the member's node may be down)", r+1, a)
		}
	}
}

// The coordinator's node is cut off: the members take over, record that
// they lost it, read their waits (sim0003's ranks' data to sim0001 is
// being retransmitted) and the new coordinator announces one digest:
// network, sim0001.
func TestCutOffCoordinatorNamedByTheOthers(t *testing.T) {
	s := startSim(t, 3) // a farewell-less Close resets the connections: the takeover comes at once
	_, addrs := rdvtest.Cluster(3)
	var all []Out
	for k := range 2 {
		all = append(all, s.period(k, []int{0, 1, 2}, func(int) hostState { return hostState{procs: 4} })...)
	}
	s.nodes[0].mu.Lock()
	s.nodes[0].byeSaid = true
	s.nodes[0].mu.Unlock()
	s.nodes[0].Close()
	s.waitCoordinator(1)
	live := []int{1, 2}
	for k := 2; k < 8; k++ {
		at := t0.Add(time.Duration(k)*time.Minute + time.Nanosecond)
		for _, i := range live {
			n := s.nodes[i]
			for _, r := range n.LostRecords(s.names[i], "42", at) {
				n.Observe(r, nil)
			}
			w := trace.Waits{Procs: 4, Waits: []trace.Wait{{On: trace.WaitFutex, Syscall: "futex", Procs: 4}}}
			if i == 2 {
				w.RetransTo = []string{addrs[s.names[0]]}
			}
			n.Observe(trace.WaitsRecord(s.names[i], "42", at, w), nil)
		}
		all = append(all, s.period(k, live, func(int) hostState { return hostState{procs: 4} })...)
	}
	n, _ := digests(append(all, s.settle(live)...))
	if len(n) != 1 || n[0].Cause != digest.CauseNetwork || len(n[0].Culprits) != 1 || n[0].Culprits[0].Host != s.names[0] {
		t.Fatalf("announced %+v, want one network digest naming %s", n, s.names[0])
	}
}

// Members that stop before the coordinator (the job's end) are no
// partition: a digest held in a round no member answered goes out at the
// coordinator's end.
func TestHeldDigestGoesOutAtTheEnd(t *testing.T) {
	s := startSim(t, 3)
	var all []Out
	for k := range 6 {
		live := []int{0, 1, 2}
		if k >= 4 {
			if k == 4 {
				s.nodes[1].Close()
				s.nodes[2].Close()
			}
			live = []int{0}
		}
		all = append(all, s.period(k, live, func(i int) hostState {
			st := hostState{procs: 4}
			if i == 2 && k >= 3 {
				st.procs = 0
			}
			if k >= 4 {
				st.event = hang.EventHung
			}
			return st
		})...)
	}
	if n, _ := digests(all); len(n) != 0 {
		t.Fatalf("announced %+v while no member answered, want it held", n)
	}
	end := s.nodes[0].End(context.Background(), t0.Add(7*time.Minute))
	n, _ := digests(end)
	if len(n) != 1 || n[0].Cause != digest.CauseRankFailed {
		t.Fatalf("announced at the end %+v, want the held rank-failed digest", n)
	}
}

// answers: a listener answers, a closed port refuses (the kernel is
// there), a connection that does not complete in time does not.
func TestAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := l.Addr().String()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := closed.Addr().String()
	closed.Close()
	defer l.Close()
	ctx := context.Background()
	if !answers(ctx, open, time.Second) || !answers(ctx, refused, time.Second) {
		t.Fatalf("a listening or closed port on a live host: answers %v, %v; want both", answers(ctx, open, time.Second), answers(ctx, refused, time.Second))
	}
	// A connection that does not complete within the wait is no answer
	// (the realjob e2e's row i cuts a node off for real: its peers' lost
	// records say unreachable).
	if answers(ctx, open, 0) {
		t.Fatal("a connection given no time answers")
	}
}

// TestMemberSpeaksWhenTheJobEndsWithItsCoordinatorSilent: the
// coordinator's node is cut off (it falls silent, no connection reset) and
// Slurm ends the job (NODE_FAIL) before the takeover's wait has passed.
// The member next in line records the coordinator's loss at its end and
// gives the failed job's digest from its own view: network, the cut-off
// node, whose data its ranks were retransmitting. The other member stays
// quiet: one digest.
func TestMemberSpeaksWhenTheJobEndsWithItsCoordinatorSilent(t *testing.T) {
	// Slurm's end before the takeover's wait; and at its end, while the
	// members wait for a farewell (Slurm 24.11 under load: its NODE_FAIL
	// signalled the watchers 4 s before their rounds saw the loss).
	for _, silent := range []time.Duration{6500 * time.Millisecond, 11 * time.Second} {
		t.Run(silent.String(), func(t *testing.T) { memberSpeaksAtTheEnd(t, silent) })
	}
}

func memberSpeaksAtTheEnd(t *testing.T, silent time.Duration) {
	c := testHang()
	c.Period = 4 * time.Second // silent after 6 s (a period and the gather); the takeover at 14 s
	s := startSimWith(t, 3, c)
	_, addrs := rdvtest.Cluster(3)
	all := []int{0, 1, 2}
	for k := range 2 {
		s.period(k, all, func(int) hostState { return hostState{procs: 4} })
	}
	time.Sleep(200 * time.Millisecond) // the members take in the last tick
	for _, i := range []int{1, 2} {
		observe(s.nodes[i], s.names[i], 2, hostState{procs: 4})
	}
	time.Sleep(silent) // node 0 ticks no more
	end := t0.Add(3 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	recs := make([][]trace.Sample, 3)
	var wg sync.WaitGroup
	for _, i := range []int{1, 2} {
		wg.Add(1)
		go func() { defer wg.Done(); recs[i] = s.nodes[i].EndRecords(ctx, s.names[i], "42", end) }()
	}
	wg.Wait()
	if len(recs[2]) != 0 {
		t.Errorf("%s, not next in line: end records %+v, want none", s.names[2], recs[2])
	}
	if len(recs[1]) != 1 {
		t.Fatalf("%s: end records %+v, want its coordinator's loss", s.names[1], recs[1])
	}
	if l, ok := trace.ParseLost(recs[1][0].Log.Line); !ok || l.Host != s.names[0] || l.Addr != addrs[s.names[0]] || l.AfterS < 6 {
		t.Errorf("lost %+v, want %s at %s, silent 6 s or more", l, s.names[0], addrs[s.names[0]])
	}
	endOfJob(s, recs[:], addrs[s.names[0]], end)
	n1, _ := digests(s.nodes[1].End(ctx, end.Add(time.Second)))
	if len(n1) != 1 || n1[0].Event != digest.EventFailed || n1[0].Cause != digest.CauseNetwork || len(n1[0].Culprits) != 1 || n1[0].Culprits[0].Host != s.names[0] {
		t.Errorf("%s announced %+v, want the failed job's digest naming %s (network)", s.names[1], n1, s.names[0])
	}
	if n2, _ := digests(s.nodes[2].End(ctx, end.Add(time.Second))); len(n2) != 0 {
		t.Errorf("%s announced %+v, want nothing", s.names[2], n2)
	}
}

// TestTakeoverAsTheJobEnds: the coordinator's node is cut off, the members
// take over, and Slurm ends the job (NODE_FAIL) seconds later, before the
// new coordinator's first round. The new coordinator gives the failed
// job's digest from the loss it recorded at the takeover (the loop takes
// it at the end: LostRecords) and its ranks' data to the lost node in
// flight: network, the lost node. The member that reports to it waits for
// its farewell: the new coordinator has not been silent (its meeting was
// its first word), so the member does not speak for the job and names
// nobody.
func TestTakeoverAsTheJobEnds(t *testing.T) {
	c := testHang()
	c.Period = time.Second
	s := startSimWith(t, 3, c)
	_, addrs := rdvtest.Cluster(3)
	for k := range 2 {
		s.period(k, []int{0, 1, 2}, func(int) hostState { return hostState{procs: 4} })
	}
	time.Sleep(200 * time.Millisecond) // the members take in the last tick
	time.Sleep(3 * c.Period)           // node 0 ticks no more (its node cut off): silent longer than a period and the gather
	s.nodes[0].mu.Lock()
	s.nodes[0].byeSaid = true // no farewell: it is lost, not stopping
	s.nodes[0].mu.Unlock()
	s.nodes[0].Close()
	s.waitCoordinator(1)
	// The job ends at once, before the new coordinator's first tick.
	end := t0.Add(3 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var recs [3][]trace.Sample
	var wg sync.WaitGroup
	for _, i := range []int{1, 2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs[i] = append(s.nodes[i].LostRecords(s.names[i], "42", end), s.nodes[i].EndRecords(ctx, s.names[i], "42", end)...)
		}()
	}
	wg.Wait()
	if len(recs[1]) != 1 {
		t.Fatalf("%s, the new coordinator: end records %+v, want the loss it recorded at the takeover", s.names[1], recs[1])
	}
	if l, ok := trace.ParseLost(recs[1][0].Log.Line); !ok || l.Host != s.names[0] {
		t.Errorf("%s: lost %+v, want %s", s.names[1], l, s.names[0])
	}
	for _, r := range recs[2] {
		if l, ok := trace.ParseLost(r.Log.Line); !ok || l.Host != s.names[0] {
			t.Errorf("%s: end record %+v, want only the loss of %s (its new coordinator %s just met it)", s.names[2], l, s.names[0], s.names[1])
		}
	}
	endOfJob(s, recs[:], addrs[s.names[0]], end)
	var n2 []digest.DigestEvent
	done := make(chan struct{})
	go func() { defer close(done); n2, _ = digests(s.nodes[2].End(ctx, end.Add(time.Second))) }()
	n1, _ := digests(s.nodes[1].End(ctx, end.Add(time.Second)))
	<-done
	if len(n1) != 1 || n1[0].Event != digest.EventFailed || n1[0].Cause != digest.CauseNetwork || len(n1[0].Culprits) != 1 || n1[0].Culprits[0].Host != s.names[0] {
		t.Errorf("%s, the new coordinator, announced %+v, want the failed job's digest naming %s (network)", s.names[1], n1, s.names[0])
	}
	for _, d := range n2 {
		for _, cu := range d.Culprits {
			if cu.Host == s.names[1] {
				t.Errorf("%s's digest names its live coordinator %s: %+v", s.names[2], s.names[1], d)
			}
		}
	}
}

// endOfJob gives nodes 1 and 2 of s what their loops give them as the job
// ends: their end records recs[i], what their ranks wait on (data to
// lostAddr, node 0's, in flight: the loop's last poll) and their end record.
func endOfJob(s *sim, recs [][]trace.Sample, lostAddr string, end time.Time) {
	for _, i := range []int{1, 2} {
		for _, r := range recs[i] {
			s.nodes[i].Observe(r, nil)
		}
		w := trace.Waits{Procs: 4, Waits: []trace.Wait{{On: trace.WaitFutex, Syscall: "futex", Procs: 4}}, RetransTo: []string{lostAddr}}
		s.nodes[i].Observe(trace.WaitsRecord(s.names[i], "42", end, w), nil)
		b, _ := json.Marshal(trace.End{Role: s.nodes[i].Role(), Why: trace.EndSignalled})
		s.nodes[i].Observe(trace.Sample{V: trace.Version, Time: end, Host: s.names[i], Job: "42", Log: &trace.Log{Stream: trace.StreamEnd, Line: string(b)}}, nil)
	}
}
