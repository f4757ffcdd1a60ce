package rendezvous

import (
	"fmt"
	"reflect"
	"syscall"
	"testing"
	"time"
)

// raiseNoFile makes sure this process may hold need file descriptors: a
// simulation holds both ends of every connection (2 per member) plus the
// listener. It raises the soft RLIMIT_NOFILE up to the hard limit and
// fails when even that is too low.
func raiseNoFile(t testing.TB, need uint64) {
	t.Helper()
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		t.Fatal(err)
	}
	if r.Cur >= need {
		return
	}
	if r.Max < need {
		t.Fatalf("RLIMIT_NOFILE hard limit %d, the simulation needs %d descriptors", r.Max, need)
	}
	r.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		t.Fatalf("raising RLIMIT_NOFILE to %d: %v", need, err)
	}
	t.Logf("raised RLIMIT_NOFILE to %d", need)
}

// simFigures are what a simulated rendezvous measured.
type simFigures struct {
	nodes      int
	joined     time.Duration // coordinator: the last present member joined
	roster     time.Duration // every present node had the roster
	connsNode  float64       // connections per node (both ends counted)
	coordConns int           // connections the coordinator accepted
	maxDials   int           // most connection attempts by one member
}

// simulate meets n nodes, each on its own loopback address, with the
// middle node never started, and checks that every other node has the
// roster, with that node absent, within the join deadline.
func simulate(t testing.TB, n int, join time.Duration) simFigures {
	t.Helper()
	raiseNoFile(t, uint64(2*n+256))
	s := newSim(t, n, join)
	dead := n / 2
	res := s.run(map[int]bool{dead: true}, nil)
	defer func() {
		if t.Failed() {
			l := s.logged()
			t.Logf("%d warnings, first: %q", len(l), l[:min(len(l), 5)])
		}
	}()
	f := simFigures{nodes: n}
	conns := 0
	want := []string{s.names[dead]}
	for i, r := range res {
		if i == dead {
			continue
		}
		if r.err != nil {
			t.Fatalf("%s: %v", s.names[i], r.err)
		}
		if got := r.s.Roster().Absent(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: absent %v, want %v", s.names[i], got, want)
		}
		f.roster = max(f.roster, r.at)
		st := r.s.Stats()
		if r.s.Coordinator() {
			f.joined = st.Joined
			f.coordConns = st.Accepted
			conns += st.Accepted
			if st.Links != n-2 {
				t.Errorf("coordinator holds %d links, want %d", st.Links, n-2)
			}
		} else {
			conns += st.Connected
			f.maxDials = max(f.maxDials, st.Dials)
			if st.Connected != 1 {
				t.Errorf("%s made %d connections, want 1", s.names[i], st.Connected)
			}
		}
	}
	f.connsNode = float64(conns) / float64(n)
	// A member waits for the roster until Join+Skew; the coordinator sends
	// it at Join. Both bounds are checked, not just implied by no error.
	if budget := join + s.config(0).Skew; f.roster > budget {
		t.Errorf("%d nodes: the roster reached everyone after %s, past the %s budget", n, f.roster, budget)
	}
	if f.roster < join-100*time.Millisecond {
		t.Errorf("%d nodes: roster after %s, before the %s deadline: the absent node was not waited for", n, f.roster, join)
	}
	if f.coordConns != n-2 {
		t.Errorf("coordinator accepted %d connections, want %d (O(N), not all pairs)", f.coordConns, n-2)
	}
	return f
}

func (f simFigures) String() string {
	return fmt.Sprintf("%d nodes, 1 absent: present joined in %s, roster everywhere in %s; %.2f connections per node (coordinator %d, members 1), at most %d dials per member",
		f.nodes, f.joined.Round(time.Millisecond), f.roster.Round(time.Millisecond), f.connsNode, f.coordConns, f.maxDials)
}

func TestSimulation256(t *testing.T) {
	t.Log(simulate(t, 256, 3*time.Second))
}

// TestSimulation1024 waits its 5 s join deadline for the absent node in
// real time (1024 nodes need that long to meet on a loaded machine), so it
// runs without -short only; TestSimulation256 checks the same bounds under
// -short.
func TestSimulation1024(t *testing.T) {
	if testing.Short() {
		t.Skip("waits a 5 s join deadline in real time; TestSimulation256 covers -short")
	}
	t.Log(simulate(t, 1024, 5*time.Second))
}

// BenchmarkRendezvous runs the simulation of 256 and 1024 nodes, one
// absent, and reports the time until every present node had the roster
// (which includes waiting the join deadline for the absent node), the
// time until the present ones had all joined, and the connections per
// node.
func BenchmarkRendezvous(b *testing.B) {
	for _, c := range []struct {
		n    int
		join time.Duration
	}{{256, 3 * time.Second}, {1024, 5 * time.Second}} {
		b.Run(fmt.Sprintf("nodes=%d", c.n), func(b *testing.B) {
			var f simFigures
			for range b.N {
				f = simulate(b, c.n, c.join)
			}
			b.ReportMetric(f.roster.Seconds(), "roster-s")
			b.ReportMetric(f.joined.Seconds(), "joined-s")
			b.ReportMetric(c.join.Seconds(), "deadline-s")
			b.ReportMetric(f.connsNode, "conns/node")
			b.ReportMetric(float64(f.coordConns), "coord-conns")
			b.ReportMetric(1, "member-conns")
			b.Log(f)
		})
	}
}
