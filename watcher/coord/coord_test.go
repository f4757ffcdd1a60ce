package coord

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// The tests' time: the coordinator's clock is the fake time each period's
// Due is given; only the meeting's own deadlines run in real time.
var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func testHang() hang.Config {
	c := watchcfg.DefaultHang()
	c.Window, c.Period, c.Grace = 6*time.Minute, time.Minute, 0
	return c
}

// hostState is what one host shows in one period.
type hostState struct {
	procs int
	event string // "" or a detector event of this period
	lines []string
}

func reading(host string, k, procs int) trace.Sample {
	return trace.Sample{V: trace.Version, Time: t0.Add(time.Duration(k) * time.Minute), Host: host, Job: "42",
		IO: trace.IO{WChar: 1 << 30}, Procs: procs, Accel: []trace.Accel{{ID: "0", Util: 100, MemUsedMiB: 30000, PowerW: 80}}}
}

// observe gives a view one period of one host.
func observe(v interface {
	Observe(trace.Sample, []hang.Event)
}, host string, k int, st hostState) {
	s := reading(host, k, st.procs)
	for _, l := range st.lines {
		v.Observe(trace.Sample{V: trace.Version, Time: s.Time, Host: host, Job: "42", Log: &trace.Log{Stream: trace.StreamStderr, Line: l}}, nil)
	}
	var evs []hang.Event
	if st.event != "" {
		evs = []hang.Event{{Time: s.Time, Host: host, Job: "42", Event: st.event, Reason: "FlatUsageStuckCollective"}}
	}
	v.Observe(s, evs)
}

type pendingView struct{ p *pending }

func (v pendingView) Observe(s trace.Sample, evs []hang.Event) { v.p.observe(s, evs) }

func digests(outs []Out) (notified, recorded []digest.DigestEvent) {
	for _, o := range outs {
		if d, ok := o.Event.(digest.DigestEvent); ok {
			if o.Notify {
				notified = append(notified, d)
			} else {
				recorded = append(recorded, d)
			}
		}
	}
	return
}

// The hub alone: a 3-host hang whose third host's ranks are gone gives
// one digest, rank-failed, naming that host, announced once.
func TestHubOneDigestPerEpisode(t *testing.T) {
	h := NewHub("42", testHang(), nil, nil, logrus.New())
	var all []Out
	for k := range 10 {
		sums := map[string]Summary{}
		for i, host := range []string{"n1", "n2", "n3"} {
			p := newPending()
			st := hostState{procs: 4}
			if i == 2 && k >= 3 {
				st.procs = 0
			}
			if k >= 4 {
				st.event = hang.EventHung
			}
			observe(pendingView{p}, host, k, st)
			sums[host] = p.take()
		}
		all = append(all, h.Ingest(t0.Add(time.Duration(k)*time.Minute+time.Second), sums)...)
	}
	n, _ := digests(all)
	if len(n) != 1 || n[0].Cause != digest.CauseRankFailed || len(n[0].Culprits) != 1 || n[0].Culprits[0].Host != "n3" ||
		n[0].Culprits[0].Reason != digest.CulpritProcessesGone {
		t.Fatalf("digests = %+v, want one rank-failed naming n3 (ProcessesGone)", n)
	}
}

// A host whose summaries stop is evidence: its last reading goes stale.
func TestHubSilentHostIsEvidence(t *testing.T) {
	h := NewHub("42", testHang(), nil, nil, logrus.New())
	var all []Out
	for k := range 10 {
		sums := map[string]Summary{}
		for _, host := range []string{"n1", "n2", "n3"} {
			if host == "n3" && k >= 2 {
				continue // its watcher or node is gone
			}
			p := newPending()
			st := hostState{procs: 4}
			if k >= 5 {
				st.event = hang.EventHung
			}
			observe(pendingView{p}, host, k, st)
			sums[host] = p.take()
		}
		all = append(all, h.Ingest(t0.Add(time.Duration(k)*time.Minute+time.Second), sums)...)
	}
	n, _ := digests(all)
	if len(n) != 1 || n[0].Cause != digest.CauseRankFailed || len(n[0].Culprits) != 1 || n[0].Culprits[0].Host != "n3" ||
		n[0].Culprits[0].Reason != digest.CulpritStaleSamples {
		t.Fatalf("digests = %+v, want one rank-failed naming n3 (StaleSamples)", n)
	}
}

// A coordinator that takes over a hang already announced does not announce it again.
func TestHubInheritedDigestNotAgain(t *testing.T) {
	prev := digest.DigestEvent{Time: t0, Job: "42", Event: digest.EventDigest, Cause: digest.CauseUnknown}
	h := NewHub("42", testHang(), nil, &prev, logrus.New())
	var all []Out
	for k := 10; k < 20; k++ {
		sums := map[string]Summary{}
		for _, host := range []string{"n2", "n3"} {
			p := newPending()
			observe(pendingView{p}, host, k, hostState{procs: 4, event: hang.EventHung})
			sums[host] = p.take()
		}
		all = append(all, h.Ingest(t0.Add(time.Duration(k)*time.Minute+time.Second), sums)...)
	}
	if n, _ := digests(all); len(n) != 0 {
		t.Fatalf("digests %+v, want none: the previous coordinator announced this hang", n)
	}
}

// sim is a job of n watchers in one process, each on its own loopback
// address, meeting with the HMAC stand-in for MUNGE.
type sim struct {
	t     *testing.T
	names []string
	nodes []*Node
	hook  *test.Hook
}

func startSim(t *testing.T, n int) *sim { return startSimWith(t, n, testHang()) }

// startSimWith is startSim with the watchers' hang settings c.
func startSimWith(t *testing.T, n int, c hang.Config) *sim {
	if testing.Short() {
		t.Skip("meets watchers over loopback")
	}
	names, addrs := rdvtest.Cluster(n)
	l, err := net.Listen("tcp", net.JoinHostPort(addrs[names[0]], "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	logger, hook := test.NewNullLogger()
	s := &sim{t: t, names: names, nodes: make([]*Node, n), hook: hook}
	var wg sync.WaitGroup
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.nodes[i] = Start(context.Background(), Config{Job: "42", Self: names[i], Nodes: names, UID: 1000, Ports: []int{port},
				Addrs: addrs, Auth: rdvtest.New([]byte("the cluster's key"), 1000), Hang: c, Join: 3 * time.Second,
				Log: logger.WithField("node", names[i])})
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, n := range s.nodes {
			n.Close()
		}
	})
	if !s.nodes[0].Coordinator() {
		t.Fatalf("%s is not the coordinator", names[0])
	}
	for _, n := range s.nodes[1:] {
		if !n.Coordinated() || n.Coordinator() {
			t.Fatalf("%s: coordinated %v, coordinator %v", n.cfg.Self, n.Coordinated(), n.Coordinator())
		}
	}
	return s
}

// period gives every live node its host's state of period k, then runs
// every node's Due (the coordinator's runs the rounds); it returns all outs.
func (s *sim) period(k int, live []int, state func(i int) hostState) []Out {
	for _, i := range live {
		observe(s.nodes[i], s.names[i], k, state(i))
	}
	var out []Out
	now := t0.Add(time.Duration(k)*time.Minute + time.Second)
	for _, i := range live {
		if s.nodes[i].Coordinator() {
			out = append(out, s.nodes[i].Due(context.Background(), now)...)
		}
	}
	for _, i := range live {
		if !s.nodes[i].Coordinator() {
			out = append(out, s.nodes[i].Due(context.Background(), now)...)
		}
	}
	return out
}

// waitCoordinator waits until node i coordinates.
func (s *sim) waitCoordinator(i int) {
	deadline := time.Now().Add(15 * time.Second)
	for !s.nodes[i].Coordinator() {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s did not take over", s.names[i])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle lets the members take in the last digest broadcast.
func (s *sim) settle(live []int) []Out {
	time.Sleep(200 * time.Millisecond)
	var out []Out
	for _, i := range live {
		if !s.nodes[i].Coordinator() {
			out = append(out, s.nodes[i].Due(context.Background(), t0.Add(time.Hour))...)
		}
	}
	return out
}

// Three watchers, one coordinator: a 3-host hang whose third host's ranks
// are gone gives one digest, announced by the coordinator alone, and
// recorded by the others.
func TestThreeHostHangOneDigestOneNotification(t *testing.T) {
	s := startSim(t, 3)
	live := []int{0, 1, 2}
	var all []Out
	for k := range 9 {
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
	all = append(all, s.settle(live)...)
	n, r := digests(all)
	if len(n) != 1 || n[0].Cause != digest.CauseRankFailed || n[0].Culprits[0].Host != "sim0003" || len(n[0].Hosts) != 3 {
		t.Fatalf("announced %+v, want one rank-failed digest naming sim0003", n)
	}
	if len(r) != 2 || r[0].Cause != digest.CauseRankFailed {
		t.Errorf("recorded by the members: %+v, want the digest on each", r)
	}
}

// A member whose summaries stop is evidence against its host.
func TestSilentMemberIsEvidence(t *testing.T) {
	s := startSim(t, 3)
	var all []Out
	for k := range 10 {
		live := []int{0, 1, 2}
		if k >= 2 {
			if k == 2 {
				s.nodes[2].Close() // the watcher is killed
			}
			live = []int{0, 1}
		}
		all = append(all, s.period(k, live, func(i int) hostState {
			if k >= 5 {
				return hostState{procs: 4, event: hang.EventHung}
			}
			return hostState{procs: 4}
		})...)
	}
	n, _ := digests(all)
	if len(n) != 1 || n[0].Cause != digest.CauseRankFailed || n[0].Culprits[0].Host != "sim0003" || n[0].Culprits[0].Reason != digest.CulpritStaleSamples {
		t.Fatalf("announced %+v, want one rank-failed digest naming sim0003 (StaleSamples)", n)
	}
}

// The coordinator stops before the hang: the next node takes over and
// announces the digest, once.
func TestTakeoverBeforeTheHang(t *testing.T) {
	s := startSim(t, 4)
	var all []Out
	for k := range 10 {
		live := []int{0, 1, 2, 3}
		if k >= 2 {
			if k == 2 {
				s.nodes[0].Close()
				s.waitCoordinator(1)
			}
			live = []int{1, 2, 3}
		}
		all = append(all, s.period(k, live, func(i int) hostState {
			st := hostState{procs: 4}
			if i == 3 && k >= 4 {
				st.procs = 0
			}
			if k >= 5 {
				st.event = hang.EventHung
			}
			return st
		})...)
	}
	n, _ := digests(append(all, s.settle([]int{1, 2, 3})...))
	if len(n) != 1 || n[0].Cause != digest.CauseRankFailed || n[0].Culprits[0].Host != "sim0004" {
		t.Fatalf("announced %+v, want one rank-failed digest naming sim0004, from the new coordinator", n)
	}
}

// The coordinator stops after announcing the digest: the next node takes
// over and does not announce it again.
func TestTakeoverAfterTheDigest(t *testing.T) {
	s := startSim(t, 4)
	var all []Out
	for k := range 12 {
		live := []int{0, 1, 2, 3}
		if k >= 7 {
			if k == 7 {
				s.nodes[0].Close()
				s.waitCoordinator(1)
			}
			live = []int{1, 2, 3}
		}
		all = append(all, s.period(k, live, func(i int) hostState {
			st := hostState{procs: 4}
			if i == 3 && k >= 3 {
				st.procs = 0
			}
			if k >= 4 {
				st.event = hang.EventHung
			}
			return st
		})...)
	}
	n, _ := digests(all)
	if len(n) != 1 || n[0].Culprits[0].Host != "sim0004" {
		t.Fatalf("announced %+v, want one digest, from the first coordinator only", n)
	}
	for _, e := range s.hook.AllEntries() {
		if e.Message == "the digest of this hang was announced by the previous coordinator; not again" {
			return
		}
	}
	t.Errorf("the new coordinator did not say why it stays silent")
}

// The batch host's watcher reads the job's output for every rank: a line
// that names its host counts for that host.
func TestHubLineAboutAnotherHost(t *testing.T) {
	h := NewHub("42", testHang(), []string{"n1", "n2", "n3"}, nil, logrus.New())
	line := "n3:4100:4177 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.1<45123> with status=12 opcode=0 len=0 vendor err 129"
	var all []Out
	for k := range 8 {
		sums := map[string]Summary{}
		for _, host := range []string{"n1", "n2", "n3"} {
			p := newPending()
			st := hostState{procs: 4}
			if k >= 4 {
				st.event = hang.EventHung
			}
			observe(pendingView{p}, host, k, st)
			sum := p.take()
			if host == "n1" && k == 3 {
				sum.Logs = append(sum.Logs, LogLine{Time: sum.Sample.Time, Stream: trace.StreamStdout, Line: line, Host: "n3"})
			}
			sums[host] = sum
		}
		all = append(all, h.Ingest(t0.Add(time.Duration(k)*time.Minute+time.Second), sums)...)
	}
	n, _ := digests(all)
	if len(n) != 1 || n[0].Cause != digest.CauseNetwork || len(n[0].Culprits) != 1 || n[0].Culprits[0].Host != "n3" {
		t.Fatalf("digests = %+v, want one network digest naming n3 only", n)
	}
}

// When no host is hung any more after an announced hang, the hub says the
// job recovered, once.
func TestHubJobRecoveredOnce(t *testing.T) {
	var recovered []JobRecovered
	var digestAt time.Time
	for _, o := range hungThenRecovered(14, nil) {
		switch e := o.Event.(type) {
		case JobRecovered:
			if !o.Notify {
				t.Errorf("recovery not announced")
			}
			recovered = append(recovered, e)
		case digest.DigestEvent:
			digestAt = e.Time
		}
	}
	if len(recovered) != 1 || digestAt.IsZero() || !recovered[0].Digest.Equal(digestAt) || recovered[0].Event != hang.EventRecovered {
		t.Fatalf("recovered = %+v (digest at %v), want one, after the digest", recovered, digestAt)
	}
}

// hungThenRecovered feeds a new hub rounds 0 to rounds-1 of three hosts:
// hung in rounds 4 to 7, recovered in round 8. at, when set, changes a
// host's round and may add to its records first (its pending summary).
// It returns every Out the hub gave.
func hungThenRecovered(rounds int, at func(host string, k int, st *hostState, p *pending)) []Out {
	h := NewHub("42", testHang(), nil, nil, logrus.New())
	var all []Out
	for k := range rounds {
		sums := map[string]Summary{}
		for _, host := range []string{"n1", "n2", "n3"} {
			p := newPending()
			st := hostState{procs: 4}
			switch {
			case k >= 4 && k < 8:
				st.event = hang.EventHung
			case k == 8:
				st.event = hang.EventRecovered
			}
			if at != nil {
				at(host, k, &st, p)
			}
			observe(pendingView{p}, host, k, st)
			sums[host] = p.take()
		}
		all = append(all, h.Ingest(t0.Add(time.Duration(k)*time.Minute+time.Second), sums)...)
	}
	return all
}

// A hang that ends with the job (the test's scancel of a hung job, a
// requeue) is not a recovery: the coordinator's end record comes with the
// readings whose processes are gone, and no JobRecovered is announced.
func TestHubNoRecoveryAtTheJobsEnd(t *testing.T) {
	all := hungThenRecovered(9, func(host string, k int, st *hostState, p *pending) {
		if k != 8 {
			return
		}
		st.procs = 0 // the job's processes are gone
		if host == "n1" {
			b, _ := json.Marshal(trace.End{Role: trace.RoleCoordinator, Why: trace.EndSignalled})
			p.observe(trace.Sample{V: trace.Version, Time: reading(host, k, 0).Time, Host: host, Job: "42",
				Log: &trace.Log{Stream: trace.StreamEnd, Line: string(b)}}, nil)
		}
	})
	if n, _ := digests(all); len(n) != 1 {
		t.Fatalf("digests = %+v, want the hang's", n)
	}
	for _, o := range all {
		if e, ok := o.Event.(JobRecovered); ok {
			t.Errorf("announced %+v as the job ended", e)
		}
	}
}

// Seen is given every host's reading the hub takes in, once, with the
// state change it carries, and no log line.
func TestHubSeen(t *testing.T) {
	h := NewHub("42", testHang(), nil, nil, logrus.New())
	readings := map[string]int{}
	var changes []hang.Event
	h.Seen = func(s trace.Sample, evs []hang.Event) {
		if s.IsLog() || s.Job != "42" {
			t.Errorf("seen %+v", s)
		}
		readings[s.Host]++
		changes = append(changes, evs...)
	}
	pend := map[string]*pending{"n1": newPending(), "n2": newPending()} // each watcher's, kept across periods
	for k := range 6 {
		sums := map[string]Summary{}
		for _, host := range []string{"n1", "n2"} {
			p := pend[host]
			st := hostState{procs: 4, lines: []string{"NCCL WARN x"}}
			if k == 3 {
				st.event = hang.EventHung
			}
			observe(pendingView{p}, host, k, st)
			sums[host] = p.take()
		}
		h.Ingest(t0.Add(time.Duration(k)*time.Minute+time.Second), sums)
		h.Ingest(t0.Add(time.Duration(k)*time.Minute+2*time.Second), sums) // the same summaries again: nothing new
	}
	if readings["n1"] != 6 || readings["n2"] != 6 || len(readings) != 2 {
		t.Errorf("readings seen %v, want 6 of each host", readings)
	}
	if len(changes) != 2 || changes[0].Event != hang.EventHung || changes[0].Host != "n1" || changes[1].Host != "n2" ||
		!changes[0].Time.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("state changes seen %+v, want n1 and n2 hung at 10:03", changes)
	}
}

// The job fails as it ends: the coordinator's view holds srun's word that
// sim0002's task was killed while the others' exited. At the watchers'
// end (Slurm's SIGTERM: the loop's context is done), the coordinator
// announces the failed job's digest, and each member, still in the
// session, receives it with the coordinator's farewell and records it,
// so that every node's epilog finds its report.
func TestFailedJobDigestReachesTheMembers(t *testing.T) {
	s := startSim(t, 3)
	live := []int{0, 1, 2}
	for k := range 3 {
		s.period(k, live, func(i int) hostState { return hostState{procs: 4} })
	}
	end := t0.Add(3 * time.Minute)
	lines := []string{"srun: error: sim0002: task 1: Killed", "srun: error: sim0001: task 0: Exited with exit code 1",
		"srun: error: sim0003: task 2: Exited with exit code 1"}
	for i, name := range s.names {
		role := s.nodes[i].Role()
		if i == 0 {
			for _, l := range lines {
				s.nodes[i].Observe(trace.Sample{V: trace.Version, Time: end, Host: name, Job: "42", Log: &trace.Log{Stream: trace.StreamStdout, Line: l}}, nil)
			}
		}
		b, _ := json.Marshal(trace.End{Role: role, Why: trace.EndSignalled})
		s.nodes[i].Observe(trace.Sample{V: trace.Version, Time: end, Host: name, Job: "42", Log: &trace.Log{Stream: trace.StreamEnd, Line: string(b)}}, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	outs := make([][]Out, 3)
	var wg sync.WaitGroup
	for i := range s.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); outs[i] = s.nodes[i].End(ctx, end.Add(time.Second)) }()
	}
	wg.Wait()
	for i, o := range outs {
		n, r := digests(o)
		got := append(n, r...)
		if len(got) != 1 || got[0].Event != digest.EventFailed || len(got[0].Culprits) != 1 || got[0].Culprits[0].Host != "sim0002" ||
			got[0].Culprits[0].Reason != digest.DigestRankKilled || (len(n) == 1) != (i == 0) {
			t.Errorf("%s: announced %+v, recorded %+v; want the failed digest naming sim0002 (RankKilled), announced by the coordinator only",
				s.names[i], n, r)
		}
	}
}

// TestHubLateRoundKeepsEveryReading: a member that took two readings
// between two rounds sends both (Earlier, then Sample); the hub sees each
// once, in order.
func TestHubLateRoundKeepsEveryReading(t *testing.T) {
	h := NewHub("42", testHang(), nil, nil, logrus.New())
	var seen []time.Time
	h.Seen = func(s trace.Sample, _ []hang.Event) {
		if s.Host == "n2" {
			seen = append(seen, s.Time)
		}
	}
	p := newPending()
	for k := range 6 {
		observe(pendingView{p}, "n2", k, hostState{procs: 4})
		if k%3 != 2 { // rounds after readings 2 and 5 only: 1 and 4 come late
			continue
		}
		sum := p.take()
		if len(sum.Earlier) != 2 {
			t.Errorf("round after reading %d: %d earlier readings, want 2", k, len(sum.Earlier))
		}
		h.Ingest(t0.Add(time.Duration(k)*time.Minute+time.Second), map[string]Summary{"n2": sum})
	}
	if len(seen) != 6 {
		t.Fatalf("hub saw %d readings of n2 (%v), want 6", len(seen), seen)
	}
	for k, at := range seen {
		if !at.Equal(t0.Add(time.Duration(k) * time.Minute)) {
			t.Errorf("reading %d at %v", k, at)
		}
	}
}

// TestHubInheritedPulseDigest: a hang the previous coordinator announced
// from the job's pulse shows in no host's state; the new hub announces
// neither its digest again nor an end it has not seen.
func TestHubInheritedPulseDigest(t *testing.T) {
	prev := digest.DigestEvent{Time: t0, Job: "42", Event: digest.EventDigest, Cause: digest.CauseUnknown,
		Detection: &digest.Detection{By: digest.DetectedPulse}}
	h := NewHub("42", testHang(), nil, &prev, logrus.New())
	var all []Out
	for k := 10; k < 30; k++ {
		sums := map[string]Summary{}
		for _, host := range []string{"n2", "n3"} {
			p := newPending()
			st := hostState{procs: 4}
			if k >= 20 {
				st.event = hang.EventHung // the window's verdict of the same hang
			}
			observe(pendingView{p}, host, k, st)
			sums[host] = p.take()
		}
		all = append(all, h.Ingest(t0.Add(time.Duration(k)*time.Minute+time.Second), sums)...)
	}
	for _, o := range all {
		switch o.Event.(type) {
		case digest.DigestEvent, JobRecovered:
			t.Errorf("announced %+v: the previous coordinator announced this hang", o.Event)
		}
	}
}
