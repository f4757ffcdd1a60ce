package crossnet

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
)

var testKey = []byte("crossnet test key")

// job runs a Phase on n in-process nodes, each on its own loopback
// address (rdvtest.Addr), and returns every node's results.
func job(t *testing.T, n int, checks []string, dial func(self string) Dialer) map[string][]benchmarks.Result {
	t.Helper()
	return jobWith(t, n, checks, func(p *Phase) {
		if dial != nil {
			p.Dial = dial(p.Self)
		}
	})
}

// jobWith is job with each node's Phase shaped by tweak.
func jobWith(t *testing.T, n int, checks []string, tweak func(p *Phase)) map[string][]benchmarks.Result {
	t.Helper()
	names, addrs := rdvtest.Cluster(n)
	l, err := net.Listen("tcp", net.JoinHostPort(addrs[names[0]], "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conn := *DefaultConnect()
	conn.Port, conn.Join, conn.ConnectTimeout, conn.Tries = port, 2*time.Second, 300*time.Millisecond, 1
	bw := *DefaultBandwidth()
	bw.SizeMiB, bw.Duration = 8, 300*time.Millisecond
	logger, _ := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[string][]benchmarks.Result{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range names {
		p := Phase{Job: "77", Self: name, Nodes: names, Addrs: addrs, Checks: checks, Connect: conn, Bandwidth: bw,
			Auth: rdvtest.New(testKey, 0), Log: logger}
		if tweak != nil {
			tweak(&p)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.RunJob(ctx).Results
			mu.Lock()
			out[name] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func status(rs []benchmarks.Result, check string) benchmarks.Result {
	for _, r := range rs {
		if r.Check == check {
			return r
		}
	}
	return benchmarks.Result{}
}

func TestPhaseAllPass(t *testing.T) {
	got := job(t, 4, []string{Connect, Bandwidth}, nil)
	for node, rs := range got {
		for _, c := range []string{Connect, Bandwidth} {
			if r := status(rs, c); r.Status != benchmarks.StatusPass || len(r.Values) == 0 {
				t.Errorf("%s %s: %+v", node, c, r)
			}
		}
	}
}

// TestPhaseDeadNode: the data connects towards one node fail both ways
// while it still meets the others (its rendezvous port works); it alone
// fails net-connect, with its peers in the message and the device.
func TestPhaseDeadNode(t *testing.T) {
	names, addrs := rdvtest.Cluster(4)
	dead := names[2]
	got := jobWith(t, 4, []string{Connect}, func(p *Phase) {
		rdv := ":" + strconv.Itoa(p.Connect.Port)
		self := p.Self
		p.Dial = func(ctx context.Context, local, remote string) (net.Conn, error) {
			if (self == dead || strings.HasPrefix(remote, addrs[dead]+":")) && !strings.HasSuffix(remote, rdv) {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return dialTCP(ctx, local, remote)
		}
	})
	for _, n := range names {
		r := status(got[n], Connect)
		if n != dead {
			if r.Status != benchmarks.StatusPass {
				t.Errorf("%s: %+v", n, r)
			}
			continue
		}
		if r.Status != benchmarks.StatusFail || r.Reason != "NetUnreachable" ||
			!strings.HasPrefix(r.Message, "net-connect ") || !strings.Contains(r.Device, ":") {
			t.Fatalf("dead node %s: %+v", n, r)
		}
		d := benchmarks.FormatDrain([]benchmarks.DrainEntry{benchmarks.EntryOf(r)})
		if e, ok := benchmarks.ParseDrain(d); !ok || e[0] != (benchmarks.DrainEntry{Check: Connect, Reason: "NetUnreachable", Device: r.Device}) {
			t.Errorf("drain reason %q does not parse back", d)
		}
	}
}

// slowConn sleeps on every write: a slow path out of or into one node.
type slowConn struct{ net.Conn }

func (c slowConn) Write(b []byte) (int, error) {
	if len(b) > 1024 {
		time.Sleep(20 * time.Millisecond)
	}
	return c.Conn.Write(b)
}

func (c slowConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }

func TestPhaseSlowNode(t *testing.T) {
	names, addrs := rdvtest.Cluster(4)
	slow := names[1]
	dial := func(self string) Dialer {
		return func(ctx context.Context, local, remote string) (net.Conn, error) {
			c, err := dialTCP(ctx, local, remote)
			if err == nil && (self == slow || strings.HasPrefix(remote, addrs[slow]+":")) {
				return slowConn{c}, nil
			}
			return c, err
		}
	}
	got := job(t, 4, []string{Bandwidth}, dial)
	for _, n := range names {
		r := status(got[n], Bandwidth)
		want := benchmarks.StatusPass
		if n == slow {
			want = benchmarks.StatusFail
		}
		if r.Status != want || (n == slow && r.Reason != "NetBandwidthLow") {
			t.Errorf("%s: %+v", n, r)
		}
	}
}

// TestPhaseCoordinatorAbsent: without the coordinator nobody can tell,
// and nobody fails.
func TestPhaseCoordinatorAbsent(t *testing.T) {
	names, addrs := rdvtest.Cluster(3)
	conn := *DefaultConnect()
	conn.Port, conn.Join = 1, time.Second
	p := Phase{Job: "78", Self: names[1], Nodes: names, Addrs: addrs, Checks: []string{Connect, Bandwidth},
		Connect: conn, Bandwidth: *DefaultBandwidth(), Auth: rdvtest.New(testKey, 0)}
	logger, _ := logtest.NewNullLogger()
	p.Log = logger
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, r := range p.RunJob(ctx).Results {
		if r.Status != benchmarks.StatusUnknown || r.Reason != benchmarks.ReasonNoMeeting {
			t.Errorf("%+v", r)
		}
	}
	p.Addrs = map[string]string{}
	if r := p.RunJob(ctx).Results; r[0].Reason != benchmarks.ReasonSetup {
		t.Errorf("no address: %+v", r[0])
	}
}

func TestStatusOf(t *testing.T) {
	if statusOf(context.DeadlineExceeded) != 2-1 || statusOf(errors.New("x")) != 3 {
		t.Error("statusOf")
	}
}

func TestSettingsValidate(t *testing.T) {
	c := DefaultConnect()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.DataPort = c.Port
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "data_port") {
		t.Errorf("%v", err)
	}
	b := DefaultBandwidth()
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	b.SlowFraction = 1
	if err := b.Validate(); err == nil {
		t.Error("slow_fraction 1 passed")
	}
}
