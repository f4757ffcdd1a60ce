package loop

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// rasServer is a loopback RAS service as NCCL's client_support.cc speaks
// it (the handshake, TIMEOUT, then the answer and close), or, with
// answer "", a port that speaks something else; it counts connections.
func rasServer(t *testing.T, answer string) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					switch cmd := strings.ToUpper(strings.TrimSpace(line)); {
					case answer == "":
						io.WriteString(c, "HTTP/1.1 400 Bad Request\r\n\r\n")
						return
					case strings.HasPrefix(cmd, "CLIENT PROTOCOL "):
						io.WriteString(c, "SERVER PROTOCOL 2\n")
					case strings.HasPrefix(cmd, "TIMEOUT "):
						io.WriteString(c, "OK\n")
					case strings.HasSuffix(cmd, "STATUS"):
						io.WriteString(c, answer)
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), &n
}

func TestRASPoller(t *testing.T) {
	answer, err := os.ReadFile("../ncclras/testdata/docs-dead.txt")
	if err != nil {
		t.Fatal(err)
	}
	addr, asked := rasServer(t, string(answer))
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	clock := &fakeRASClock{now: t0}
	p := &RASPoller{Addr: addr, Period: time.Minute, Timeout: 2 * time.Second, Clock: clock}
	at := func(sec int) trace.Sample {
		clock.now = t0.Add(time.Duration(sec) * time.Second)
		return trace.Sample{V: trace.Version, Time: clock.now, Host: "gpu01", Job: "77"}
	}
	ctx := context.Background()
	if recs := p.Poll(ctx, at(0), nil, false); len(recs) != 0 || asked.Load() != 0 {
		t.Fatalf("asked while ok: %v", recs)
	}
	recs := p.Poll(ctx, at(10), []hang.Event{{Event: hang.EventSuspect}}, false)
	if len(recs) != 1 || recs[0].Log.Stream != trace.StreamRAS || !recs[0].Time.After(t0.Add(10*time.Second)) {
		t.Fatalf("suspect: %+v", recs)
	}
	st, ok := trace.ParseRAS(recs[0].Log.Line)
	if !ok || st.DeadCount != 1 || st.Dead[0].Host != "172.16.64.213" {
		t.Errorf("record %s", recs[0].Log.Line)
	}
	if recs := p.Poll(ctx, at(40), []hang.Event{{Event: hang.EventHung}}, false); len(recs) != 0 {
		t.Errorf("asked again within the period: %v", recs)
	}
	if recs := p.Poll(ctx, at(75), nil, false); len(recs) != 1 {
		t.Errorf("not asked after the period: %v", recs)
	}
	if recs := p.Poll(ctx, at(200), []hang.Event{{Event: hang.EventRecovered}}, false); len(recs) != 0 {
		t.Errorf("asked after recovery: %v", recs)
	}
	if recs := p.Poll(ctx, at(300), nil, true); len(recs) != 1 {
		t.Errorf("not asked while the job's view says suspect: %v", recs)
	}
	if n := asked.Load(); n != 3 {
		t.Errorf("asked %d times, want 3", n)
	}
}

// TestRASPollerNotRAS: a port that is not NCCL's is asked once, and said
// once.
func TestRASPollerNotRAS(t *testing.T) {
	addr, asked := rasServer(t, "")
	log, hook := test.NewNullLogger()
	p := &RASPoller{Addr: addr, Period: time.Second, Timeout: time.Second, Log: log}
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for i := range 4 {
		s := trace.Sample{Time: t0.Add(time.Duration(i) * time.Minute), Host: "gpu01", Job: "77"}
		if recs := p.Poll(context.Background(), s, []hang.Event{{Event: hang.EventHung}}, false); len(recs) != 0 {
			t.Fatalf("records from a port that is not RAS: %v", recs)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("asked %d times, want 1", n)
	}
	warned := 0
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d warnings, want 1", warned)
	}
}

type fakeRASClock struct{ now time.Time }

func (c *fakeRASClock) Now() time.Time                         { return c.now }
func (c *fakeRASClock) After(d time.Duration) <-chan time.Time { return nil }
