package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

func TestMeetGatherBroadcastScatter(t *testing.T) {
	s := newSim(t, 5, 5*time.Second)
	res := s.run(nil, nil)
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("%s: %v", s.names[i], r.err)
		}
		// All joined: nobody waits for the deadline.
		if r.at > 3*time.Second {
			t.Errorf("%s: roster after %s, before the 5s deadline expected", s.names[i], r.at)
		}
	}
	want := res[0].s.Roster()
	if want.Coordinator != s.names[0] || len(want.Absent()) != 0 || len(want.Present()) != 5 {
		t.Fatalf("roster %+v", want)
	}
	for i, r := range res {
		if got := r.s.Roster(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: roster differs:\n%+v\n%+v", s.names[i], got, want)
		}
		m, _ := want.Member(s.names[i])
		if m.Addr != s.addrs[s.names[i]] || string(m.Offer) != "offer-"+s.names[i] {
			t.Errorf("%s: roster entry %+v, want address %s", s.names[i], m, s.addrs[s.names[i]])
		}
		st := r.s.Stats()
		if i == 0 && (st.Links != 4 || st.Accepted != 4 || st.Dials != 0) {
			t.Errorf("coordinator stats %+v, want 4 links from 4 connections", st)
		}
		// A member may dial before the coordinator listens, but connects once.
		if i > 0 && (st.Links != 1 || st.Connected != 1 || st.Dials < 1 || st.Dials > 5) {
			t.Errorf("%s stats %+v, want 1 connection and 1 link", s.names[i], st)
		}
		if st.Lookups != 0 || st.Rejected != 0 {
			t.Errorf("%s stats %+v, want no lookups or rejections", s.names[i], st)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type out struct {
		gathered  map[string][]byte
		broadcast []byte
		scattered []byte
		err       error
	}
	outs := make([]out, len(res))
	done := make(chan int, len(res))
	for i, r := range res {
		go func() {
			defer func() { done <- i }()
			o := &outs[i]
			if o.gathered, o.err = r.s.Gather(ctx, "measure", []byte("m-"+s.names[i])); o.err != nil {
				return
			}
			var verdicts []byte
			if r.s.Coordinator() {
				verdicts = []byte(fmt.Sprintf("verdicts from %d nodes", len(o.gathered)))
			}
			if o.broadcast, o.err = r.s.Broadcast(ctx, "verdicts", verdicts); o.err != nil {
				return
			}
			var per map[string][]byte
			if r.s.Coordinator() {
				per = map[string][]byte{}
				for _, n := range s.names {
					per[n] = []byte("for-" + n)
				}
			}
			o.scattered, o.err = r.s.Scatter(ctx, "plan", per)
		}()
	}
	for range res {
		<-done
	}
	for i, o := range outs {
		if o.err != nil {
			t.Fatalf("%s: %v", s.names[i], o.err)
		}
		if string(o.broadcast) != "verdicts from 5 nodes" {
			t.Errorf("%s: broadcast %q", s.names[i], o.broadcast)
		}
		if string(o.scattered) != "for-"+s.names[i] {
			t.Errorf("%s: scatter %q", s.names[i], o.scattered)
		}
		if i > 0 && o.gathered != nil {
			t.Errorf("%s: a member's Gather returned %v", s.names[i], o.gathered)
		}
	}
	if len(outs[0].gathered) != 5 {
		t.Fatalf("gathered %d payloads, want 5", len(outs[0].gathered))
	}
	for _, n := range s.names {
		if string(outs[0].gathered[n]) != "m-"+n {
			t.Errorf("gathered[%s] = %q", n, outs[0].gathered[n])
		}
	}
	if l := s.logged(); len(l) != 0 {
		t.Errorf("warnings in a clean run: %q", l)
	}
}

// A meeting held while the job winds down (a takeover after the
// coordinator said it stops) expects nodes to stay away: the absent node
// is still named, at Info, and nothing is warned.
func TestWindingMeetingNamesTheAbsentWithoutAWarning(t *testing.T) {
	const join = time.Second
	s := newSim(t, 3, join)
	res := s.run(map[int]bool{2: true}, func(_ int, c *Config) { c.Winding = true })
	for i := range 2 {
		if res[i].err != nil {
			t.Fatalf("%s: %v", s.names[i], res[i].err)
		}
	}
	if got := res[0].s.Roster().Absent(); !reflect.DeepEqual(got, []string{s.names[2]}) {
		t.Errorf("absent %v, want [%s]", got, s.names[2])
	}
	if l := s.logged(); len(l) != 0 {
		t.Errorf("warnings in a winding meeting: %q", l)
	}
	var named bool
	for _, e := range s.hook.AllEntries() {
		if e.Level == logrus.InfoLevel && strings.Contains(e.Message, "did not join") {
			named = true
		}
	}
	if !named {
		t.Errorf("no Info line names the absent node")
	}
}

func TestAbsentMemberIsReportedAtTheDeadline(t *testing.T) {
	const join = 1500 * time.Millisecond
	s := newSim(t, 6, join)
	res := s.run(map[int]bool{3: true}, nil)
	for i, r := range res {
		if i == 3 {
			continue
		}
		if r.err != nil {
			t.Fatalf("%s: %v", s.names[i], r.err)
		}
		if got := r.s.Roster().Absent(); !reflect.DeepEqual(got, []string{s.names[3]}) {
			t.Errorf("%s: absent %v, want [%s]", s.names[i], got, s.names[3])
		}
		if r.at < join-100*time.Millisecond || r.at > join+time.Second {
			t.Errorf("%s: roster after %s, want about the %s deadline", s.names[i], r.at, join)
		}
	}
	if m, _ := res[0].s.Roster().Member(s.names[3]); m.Present || m.Addr != "" {
		t.Errorf("absent member's entry %+v", m)
	}
	if !strings.Contains(strings.Join(s.logged(), "\n"), "did not join") {
		t.Errorf("no log line names the absent node: %q", s.logged())
	}
	// A Gather goes on without it.
	got := gatherAll(t, res, "after-absent")
	if len(got) != 5 {
		t.Errorf("gathered %d, want 5", len(got))
	}
}

func gatherAll(t *testing.T, res []result, label string) map[string][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got map[string][]byte
	errs := make(chan error, len(res))
	n := 0
	for _, r := range res {
		if r.s == nil {
			continue
		}
		n++
		go func() {
			m, err := r.s.Gather(ctx, label, []byte(label))
			if r.s.Coordinator() {
				got = m
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("Gather: %v", err)
		}
	}
	return got
}

func TestAbsentCoordinatorIsUnknownNotWaitedFor(t *testing.T) {
	const join = time.Second
	s := newSim(t, 4, join)
	res := s.run(map[int]bool{0: true}, nil)
	for i, r := range res[1:] {
		if !errors.Is(r.err, ErrCoordinatorAbsent) {
			t.Fatalf("%s: err = %v, want ErrCoordinatorAbsent", s.names[i+1], r.err)
		}
		want := "unknown: coordinator " + s.names[0] + " absent"
		if !strings.HasPrefix(r.err.Error(), want) {
			t.Errorf("error %q, want it to start %q", r.err, want)
		}
		if r.at > join+500*time.Millisecond {
			t.Errorf("gave up after %s, want within %s", r.at, join)
		}
	}
}

func TestLateMemberLearnsItIsLate(t *testing.T) {
	s := newSim(t, 3, 700*time.Millisecond)
	res := s.run(map[int]bool{2: true}, nil)
	if res[0].err != nil || res[1].err != nil {
		t.Fatal(res[0].err, res[1].err)
	}
	start := time.Now()
	_, err := Meet(context.Background(), s.config(2))
	if !errors.Is(err, ErrLate) || !strings.Contains(err.Error(), "unknown:") {
		t.Fatalf("late Meet: err = %v, want ErrLate", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("late member learned it after %s, want at once", time.Since(start))
	}
}

func TestCoordinatorStartingLateIsWaitedForWithinTheJoin(t *testing.T) {
	s := newSim(t, 3, 3*time.Second)
	res := s.run(nil, func(i int, c *Config) {
		if i == 0 {
			time.Sleep(600 * time.Millisecond)
		}
	})
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("%s: %v", s.names[i], r.err)
		}
		if len(r.s.Roster().Absent()) != 0 {
			t.Errorf("%s: absent %v", s.names[i], r.s.Roster().Absent())
		}
		if i > 0 && r.s.Stats().Dials < 2 {
			t.Errorf("%s dialled %d times; the coordinator was not up at first", s.names[i], r.s.Stats().Dials)
		}
	}
}

func TestGatherMissingMemberIsReportedNotWaitedPast(t *testing.T) {
	s := newSim(t, 3, 3*time.Second)
	res := s.run(nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	// Only node 1 sends; node 2 stays silent.
	if _, err := res[1].s.Gather(ctx, "m", []byte("one")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := res[0].s.Gather(ctx, "m", []byte("zero"))
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("gather took %s, past its 700ms deadline", time.Since(start))
	}
	if _, ok := got[s.names[2]]; ok || len(got) != 2 {
		t.Errorf("gathered %v, want nodes 0 and 1", got)
	}
	if st := res[0].s.Stats(); st.Links != 1 {
		t.Errorf("links after a silent member: %d, want 1", st.Links)
	}
}

func TestMemberGivesUpOnSilentCoordinator(t *testing.T) {
	s := newSim(t, 2, 3*time.Second)
	res := s.run(nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := res[1].s.Broadcast(ctx, "verdicts", nil)
	if !errors.Is(err, ErrCoordinatorLost) || !strings.HasPrefix(err.Error(), "unknown: coordinator") {
		t.Fatalf("err = %v, want ErrCoordinatorLost", err)
	}
}

func TestConfigRejected(t *testing.T) {
	s := newSim(t, 2, time.Second)
	for name, f := range map[string]func(*Config){
		"no job":        func(c *Config) { c.Job = "" },
		"self not in":   func(c *Config) { c.Self = "elsewhere" },
		"no port":       func(c *Config) { c.Port = 0 },
		"no auth":       func(c *Config) { c.Auth = nil },
		"huge messages": func(c *Config) { c.MaxMessage = HardMaxMessage + 1 },
		"no nodes":      func(c *Config) { c.Nodes = nil },
		"empty node":    func(c *Config) { c.Nodes = append(c.Nodes, "") },
		"huge offer":    func(c *Config) { c.Offer = make([]byte, DefaultMaxMessage) },
	} {
		t.Run(name, func(t *testing.T) {
			c := s.config(1)
			f(&c)
			if _, err := Meet(context.Background(), c); err == nil {
				t.Error("Meet accepted the config")
			}
		})
	}
}

func TestCoordinatorIsFirstSorted(t *testing.T) {
	if got := Coordinator([]string{"n3", "n10", "n2"}); got != "n10" {
		t.Errorf("Coordinator = %q, want n10 (byte order, the same on every node)", got)
	}
	if Coordinator(nil) != "" {
		t.Error("Coordinator(nil) not empty")
	}
}

func TestSingleNodeJob(t *testing.T) {
	s := newSim(t, 1, 5*time.Second)
	start := time.Now()
	res := s.run(nil, nil)
	if res[0].err != nil || time.Since(start) > time.Second {
		t.Fatalf("single node: %v after %s", res[0].err, time.Since(start))
	}
	got := gatherAll(t, res, "solo")
	if string(got[s.names[0]]) != "solo" {
		t.Errorf("gathered %v", got)
	}
}

// TestFallbackCoordinatorWhenTheFirstIsDead: the first coordinator never
// starts; with one fallback the other nodes meet the second, which lists
// the first absent, and every round works over the new meeting.
func TestFallbackCoordinatorWhenTheFirstIsDead(t *testing.T) {
	const join = time.Second
	s := newSim(t, 4, join)
	res := s.run(map[int]bool{0: true}, func(_ int, c *Config) { c.Fallbacks = 1 })
	for i, r := range res[1:] {
		if r.err != nil {
			t.Fatalf("%s: %v", s.names[i+1], r.err)
		}
		if got := r.s.Roster(); got.Coordinator != s.names[1] || !slices.Equal(got.Absent(), s.names[:1]) {
			t.Errorf("%s: roster %+v, want coordinator %s and %s absent", s.names[i+1], got, s.names[1], s.names[0])
		}
		if r.s.Epoch() != 1 || len(r.s.Earlier()) != 1 {
			t.Errorf("%s: epoch %d, earlier %v", s.names[i+1], r.s.Epoch(), r.s.Earlier())
		}
		// The fallback waits for nobody: every node after it came.
		if r.at > join+time.Second {
			t.Errorf("%s met after %s, want about the join deadline %s", s.names[i+1], r.at, join)
		}
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, r := range res[2:] {
		wg.Add(1)
		go func() { defer wg.Done(); r.s.Gather(ctx, "links", []byte(r.s.cfg.Self)) }()
	}
	got, err := res[1].s.Gather(ctx, "links", []byte("lead"))
	wg.Wait()
	if err != nil || len(got) != 3 {
		t.Fatalf("gather over the fallback: %v, %v", got, err)
	}
}

// TestCoordinatorAloneTriesTheFallback: the first coordinator is cut off
// (nobody reaches it, it reaches nobody); the others meet the fallback,
// and the cut-off node, alone first, fails to join the fallback and says
// which coordinators it tried.
func TestCoordinatorAloneTriesTheFallback(t *testing.T) {
	const join = time.Second
	s := newSim(t, 4, join)
	res := s.run(nil, func(i int, c *Config) {
		c.Fallbacks = 1
		if i == 0 {
			// Node 0 listens on a loopback address nobody dials, and
			// dials the others at one where nothing listens.
			c.Addrs = map[string]string{}
			for k := range s.addrs {
				c.Addrs[k] = "127.255.255.254"
			}
			c.Addrs[s.names[0]] = "127.255.255.253"
			c.LocalAddr = ""
		}
	})
	if !errors.Is(res[0].err, ErrCoordinatorAbsent) {
		t.Fatalf("cut-off coordinator: err %v, want it absent from the fallback", res[0].err)
	}
	if msg := res[0].err.Error(); !strings.Contains(msg, "met nobody") || !strings.Contains(msg, "coordinator "+s.names[1]) {
		t.Errorf("error %q does not name both coordinators tried", msg)
	}
	for i, r := range res[1:] {
		if r.err != nil {
			t.Fatalf("%s: %v", s.names[i+1], r.err)
		}
		if !slices.Equal(r.s.Roster().Absent(), s.names[:1]) {
			t.Errorf("%s: absent %v, want %v", s.names[i+1], r.s.Roster().Absent(), s.names[:1])
		}
	}
}

// TestNoFallbackForTwoNodes: a fallback needs two nodes that may take
// part; a 2-node job whose coordinator is dead gets the plain error.
func TestNoFallbackForTwoNodes(t *testing.T) {
	s := newSim(t, 2, time.Second)
	res := s.run(map[int]bool{0: true}, func(_ int, c *Config) { c.Fallbacks = 2 })
	if !errors.Is(res[1].err, ErrCoordinatorAbsent) || strings.Contains(res[1].err.Error(), "then") {
		t.Fatalf("err = %v, want the first coordinator absent and no fallback", res[1].err)
	}
}
