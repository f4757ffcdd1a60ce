package coord

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// TestSessionLogQuietOnShutdown: the session's warnings reach the watcher's
// log as warnings, with their fields, until the watcher shuts down; then as
// debug lines (a normal shutdown's closed connections are no warning).
func TestSessionLogQuietOnShutdown(t *testing.T) {
	to, hook := test.NewNullLogger()
	to.SetLevel(logrus.DebugLevel)
	var closing atomic.Bool
	l := sessionLog(to.WithField("part", "coord"), &closing)
	l.WithField("peer", "10.0.0.1:4000").WithError(errors.New("EOF")).Warn("rendezvous: rejected")
	closing.Store(true)
	l.WithError(errors.New("read tcp: use of closed network connection")).Warn("rendezvous: rejected")
	l.Info("left")
	es := hook.AllEntries()
	if len(es) != 3 {
		t.Fatalf("%d entries, want 3", len(es))
	}
	if es[0].Level != logrus.WarnLevel || es[0].Data["peer"] != "10.0.0.1:4000" || es[0].Data["part"] != "coord" || es[0].Data["error"] == nil {
		t.Errorf("before shutdown: %v %v, want a warning with its fields", es[0].Level, es[0].Data)
	}
	if es[1].Level != logrus.DebugLevel || es[1].Message != "rendezvous: rejected" {
		t.Errorf("during shutdown: %v %q, want a debug line", es[1].Level, es[1].Message)
	}
	if es[2].Level != logrus.InfoLevel {
		t.Errorf("info during shutdown: %v", es[2].Level)
	}
}

// TestJobEndStopsWatchersQuietly: when the job ends, its watchers stop
// within moments of each other, the coordinator first: no watcher warns
// (no "use of closed network connection", no lost coordinator).
func TestJobEndStopsWatchersQuietly(t *testing.T) {
	s := startSim(t, 3)
	live := []int{0, 1, 2}
	for k := range 3 {
		s.period(k, live, func(int) hostState { return hostState{procs: 4} })
	}
	s.nodes[0].Close()
	time.Sleep(100 * time.Millisecond) // the members' SIGTERM comes a moment later
	s.nodes[1].Close()
	s.nodes[2].Close()
	for _, e := range s.hook.AllEntries() {
		if e.Level <= logrus.WarnLevel {
			t.Errorf("%v: %s %v", e.Level, e.Message, e.Data)
		}
	}
}
