package crossnet

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
)

// The simulation runs the whole cross-node phase of a job of N nodes in one
// process: N Phases, each on its own loopback address (rdvtest.Addr) with
// its own measurement endpoint and rendezvous, sealed with the HMAC test
// authenticator. One node's endpoint is dead (it accepts and drops every
// connection) while the node itself meets and measures: net-connect must
// fail that node alone, with its peers named, and pass every other node,
// all within the phase's deadline.

// raiseNoFile makes sure this process may hold need file descriptors: the
// simulation holds both ends of every connection. It raises the soft
// RLIMIT_NOFILE up to the hard limit and fails when even that is too low.
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
}

// deadListener is a dead measurement endpoint: the port is open, but every
// connection is dropped as soon as it arrives.
type deadListener struct{ net.Listener }

func (l deadListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c.Close()
	}
}

// countingListener counts the connections its endpoint accepted.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// simFigures are what one simulated phase measured.
type simFigures struct {
	nodes    int
	took     time.Duration // until every node had its results
	budget   time.Duration // the phase's deadline
	data     float64       // measurement connections per node, both ends
	maxData  int64         // most measurement connections at one node
	rdv      float64       // rendezvous connections per node, both ends
	rdvCoord int           // rendezvous links the coordinator held
}

func (f simFigures) String() string {
	return fmt.Sprintf("%d nodes, 1 dead endpoint: every node had its outcome after %s (deadline %s); "+
		"connections per node (both ends): %.2f measurement (at most %d at one node), %.2f rendezvous (coordinator %d)",
		f.nodes, f.took.Round(time.Millisecond), f.budget, f.data, f.maxData, f.rdv, f.rdvCoord)
}

// simSettings are the phase's settings in the simulation: the defaults,
// with net-bandwidth's transfer kept small (1 MiB, 100 ms per direction)
// and connect_timeout raised to 10 s: it bounds a connect and its round
// trips, and here N nodes' thousands of connections share this process'
// cores (round trips of 300 ms at 1024 nodes on 2 cores), which no node's
// own network would. The dead endpoint drops connections at once, so it
// is found as fast either way.
func simSettings(port int) (ConnectSettings, BandwidthSettings) {
	conn := *DefaultConnect()
	conn.Port, conn.ConnectTimeout = port, 10*time.Second
	bw := *DefaultBandwidth()
	bw.SizeMiB, bw.Duration = 1, 100*time.Millisecond
	return conn, bw
}

// simulate runs the phase on n in-process nodes, the middle one with a
// dead endpoint, within budget, and checks every node's outcome.
func simulate(t testing.TB, n int, budget time.Duration, checks []string) simFigures {
	t.Helper()
	raiseNoFile(t, uint64(16*n+512))
	names, addrs := rdvtest.Cluster(n)
	dead := names[n/2]
	l, err := net.Listen("tcp", net.JoinHostPort(addrs[names[0]], "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conn, bw := simSettings(port)
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	dials := make([]atomic.Int64, n)
	accepts := make([]atomic.Int64, n)
	out := make([][]benchmarks.Result, n)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start := time.Now()
	var took atomic.Int64
	var wg sync.WaitGroup
	for i, name := range names {
		p := Phase{Job: "4242", Self: name, Nodes: names, Addrs: addrs, Checks: checks, Connect: conn,
			Bandwidth: bw, Auth: rdvtest.New(testKey, 0), Log: logger,
			Dial: func(ctx context.Context, local, remote string) (net.Conn, error) {
				dials[i].Add(1)
				return dialTCP(ctx, local, remote)
			},
			Listen: func(addr string) (net.Listener, error) {
				l, err := net.Listen("tcp", addr)
				if err != nil || name != dead {
					return countingListener{l, &accepts[i]}, err
				}
				return deadListener{l}, nil
			}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = p.RunJob(ctx).Results
			for d := int64(time.Since(start)); ; {
				if old := took.Load(); d <= old || took.CompareAndSwap(old, d) {
					break
				}
			}
		}()
	}
	wg.Wait()
	f := simFigures{nodes: n, took: time.Duration(took.Load()), budget: budget}
	checkOutcomes(t, names, dead, out)
	var data int64
	for i := range names {
		c := dials[i].Load() + accepts[i].Load()
		data += c
		f.maxData = max(f.maxData, c)
	}
	f.data = float64(data) / float64(n)
	links := 0
	for _, e := range hook.AllEntries() {
		if e.Message == "cross-node: met" {
			links += e.Data["rdv_links"].(int)
			if e.Data["coordinator"].(bool) {
				f.rdvCoord = e.Data["rdv_links"].(int)
			}
		}
	}
	f.rdv = float64(links) / float64(n)
	if f.took >= budget {
		t.Errorf("%d nodes: the phase took %s, past its %s deadline", n, f.took, budget)
	}
	if f.rdvCoord != n-1 {
		t.Errorf("the coordinator held %d rendezvous links, want %d", f.rdvCoord, n-1)
	}
	return f
}

// checkOutcomes: the dead node alone fails net-connect, naming the peers
// that could not reach it, and every other node passes net-connect. Every
// node has an outcome from the coordinator for every check. Throughput is
// not judged here: N nodes' transfers share this process' cores, not a
// fabric each, so who reads slow is chance.
func checkOutcomes(t testing.TB, names []string, dead string, out [][]benchmarks.Result) {
	t.Helper()
	bad := 0
	for i, n := range names {
		r := status(out[i], Connect)
		switch {
		case n == dead:
			drain := benchmarks.FormatDrain([]benchmarks.DrainEntry{benchmarks.EntryOf(r)})
			if r.Status != benchmarks.StatusFail || r.Reason != "NetUnreachable" ||
				!strings.HasPrefix(r.Device, "from:") || !strings.Contains(r.Message, "unreachable from") {
				t.Errorf("dead node %s: %+v", n, r)
			} else if !strings.HasPrefix(drain, "vigil: net-connect NetUnreachable from:") {
				t.Errorf("dead node %s: drain reason %q", n, drain)
			}
		case r.Status != benchmarks.StatusPass:
			bad++
			if bad <= 5 {
				t.Errorf("%s: %+v", n, r)
			}
		}
		for _, r := range out[i] {
			if r.Reason == benchmarks.ReasonNoMeeting || r.Reason == benchmarks.ReasonSetup || strings.HasPrefix(r.Message, "no outcome") {
				t.Errorf("%s %s: no outcome: %s", n, r.Check, r.Message)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%d healthy nodes did not pass net-connect", bad)
	}
}

// TestSimulation256 runs the phase (net-connect and net-bandwidth) on 256
// nodes in one process, one of them with a dead endpoint.
func TestSimulation256(t *testing.T) {
	if testing.Short() {
		t.Skip("256 nodes in one process: skipped under -short")
	}
	t.Log(simulate(t, 256, 15*time.Second, []string{Connect, Bandwidth}))
}

// BenchmarkPhase runs the simulated phase on 256 and 1024 nodes, one with
// a dead endpoint, with net-connect alone and with net-bandwidth too (1 MiB
// for at most 100 ms per direction), and reports the seconds until every
// node had its outcome and the connections per node (both ends counted)
// of the measurements and of the rendezvous.
func BenchmarkPhase(b *testing.B) {
	for _, c := range []struct {
		n      int
		budget time.Duration
	}{{256, 15 * time.Second}, {1024, 40 * time.Second}} {
		for _, checks := range [][]string{{Connect}, {Connect, Bandwidth}} {
			b.Run(fmt.Sprintf("nodes=%d/%s", c.n, strings.Join(checks, "+")), func(b *testing.B) {
				var f simFigures
				for range b.N {
					f = simulate(b, c.n, c.budget, checks)
				}
				b.ReportMetric(f.took.Seconds(), "phase-s")
				b.ReportMetric(c.budget.Seconds(), "deadline-s")
				b.ReportMetric(f.data, "data-conns/node")
				b.ReportMetric(float64(f.maxData), "max-data-conns")
				b.ReportMetric(f.rdv, "rdv-conns/node")
				b.Log(f)
			})
		}
	}
}
