package rendezvous

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
)

var testKey = []byte("vigil rendezvous test key")

// sim is a simulated job: n nodes named and addressed by rdvtest, sharing
// one port and one HMAC key, each with its own authenticator (its own
// seen-set, as each node has its own munged).
type sim struct {
	t      testing.TB
	names  []string
	addrs  map[string]string
	port   int
	job    string
	join   time.Duration
	logger *logrus.Logger
	hook   *logtest.Hook
}

func newSim(t testing.TB, n int, join time.Duration) *sim {
	t.Helper()
	names, addrs := rdvtest.Cluster(n)
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	return &sim{t: t, names: names, addrs: addrs, port: freePort(t, addrs[names[0]]), job: "4242",
		join: join, logger: logger, hook: hook}
}

// freePort finds a port that is free on addr now.
func freePort(t testing.TB, addr string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatalf("listening on %s: %v", addr, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *sim) config(i int) Config {
	name := s.names[i]
	return Config{Job: s.job, Self: name, Nodes: s.names, Port: s.port, Addrs: s.addrs,
		LocalAddr: s.addrs[name], Auth: rdvtest.New(testKey, 0), Join: s.join, Skew: 2 * time.Second,
		IOTimeout: 2 * time.Second, Offer: []byte("offer-" + name), Log: s.logger,
		LookupHost: func(context.Context, string) ([]string, error) {
			s.t.Errorf("name resolution with an address for every node")
			return nil, io.EOF
		}}
}

func (s *sim) coordAddr() string {
	return net.JoinHostPort(s.addrs[s.names[0]], strconv.Itoa(s.port))
}

type result struct {
	s   *Session
	err error
	at  time.Duration
}

// run meets on every node but those in skip, each in its own goroutine
// where adjust (if any) may change its Config or delay it, and waits for
// all.
func (s *sim) run(skip map[int]bool, adjust func(int, *Config)) []result {
	out := make([]result, len(s.names))
	var wg sync.WaitGroup
	start := time.Now()
	for i := range s.names {
		if skip[i] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := s.config(i)
			if adjust != nil {
				adjust(i, &c)
			}
			ses, err := Meet(context.Background(), c)
			out[i] = result{ses, err, time.Since(start)}
		}()
	}
	wg.Wait()
	s.t.Cleanup(func() {
		for _, r := range out {
			if r.s != nil {
				r.s.Close()
			}
		}
	})
	return out
}

// logged returns the messages of the log lines at Warn or worse.
func (s *sim) logged() []string {
	var out []string
	for _, e := range s.hook.AllEntries() {
		if e.Level <= logrus.WarnLevel {
			msg := e.Message
			if err, ok := e.Data[logrus.ErrorKey].(error); ok {
				msg += ": " + err.Error()
			}
			out = append(out, msg)
		}
	}
	return out
}
