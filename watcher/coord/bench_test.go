package coord

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// benchSummaries encodes period k's summaries of n hosts with 8 devices
// each, at the default period; every 16th host has two matched lines (a
// progress line among them) until period stallAt, when the job's I/O and
// progress stop (the pulse's verdict comes a few periods later: its
// judgement of every host's stretch is the costly case), and from period
// hungFrom on every host is hung.
func benchSummaries(b *testing.B, n, k, stallAt, hungFrom int) map[string][]byte {
	out := make(map[string][]byte, n)
	period := watchcfg.DefaultHang().Period
	for i := range n {
		host := fmt.Sprintf("gpu%04d", i+1)
		s := reading(host, k, 12)
		s.Time = t0.Add(time.Duration(k) * period)
		s.IO.WChar = uint64(min(k, stallAt)) << 30
		s.CPUUsec = uint64(k) * 60e6
		s.Accel = s.Accel[:0]
		power := 612.5
		if k >= stallAt {
			power = 120 // spinning in a collective
		}
		for d := range 8 {
			s.Accel = append(s.Accel, trace.Accel{ID: fmt.Sprint(d), Util: 97, MemUsedMiB: 70312, PowerW: power,
				SMClockMHz: 1755 + 15*d, SMClockMaxMHz: 1980, Throttle: trace.ThrottleSwPowerCap})
		}
		sum := Summary{State: digest.StateOK, Sample: &s}
		if k >= hungFrom {
			sum.State, sum.Reason = digest.StateHung, hang.ReasonFlatUsageStuckCollective
		}
		if i%16 == 0 && k < stallAt {
			sum.Logs = []LogLine{
				{Time: s.Time, Stream: trace.StreamStdout, Line: fmt.Sprintf("epoch 3 step %d loss 1.25", 100*k)},
				{Time: s.Time, Stream: trace.StreamStderr, Line: host + ":4100:4177 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.3<45123> with status=12 opcode=0"},
			}
		}
		data, err := sum.Encode()
		if err != nil {
			b.Fatal(err)
		}
		out[host] = data
	}
	return out
}

// BenchmarkCoordinator1024 is the coordinator's work in one period of a
// 1024-node job: decode every node's summary and ingest them (episodes,
// stragglers, the digest when due). The rendezvous' own cost (framing,
// MUNGE) is in rendezvous' benchmarks. It reports the CPU time per
// period, the share of one core at the default period (30 s), and the
// live heap after a window of periods.
func BenchmarkCoordinator1024(b *testing.B) {
	const n = 1024
	c := watchcfg.DefaultHang() // 30 min window, 30 s period
	periods := make([]map[string][]byte, 40)
	for k := range periods {
		periods[k] = benchSummaries(b, n, k, 25, 35)
	}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	base := heapMiB()
	b.ReportAllocs()
	b.ResetTimer()
	var h *Hub
	for i := range b.N {
		k := i % len(periods)
		if k == 0 {
			h = NewHub("42", c, nil, nil, log)
		}
		sums := make(map[string]Summary, n)
		for host, data := range periods[k] {
			s, err := DecodeSummary(data)
			if err != nil {
				b.Fatal(err)
			}
			sums[host] = s
		}
		h.Ingest(t0.Add(time.Duration(k)*c.Period+time.Second), sums)
	}
	b.StopTimer()
	perPeriod := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(perPeriod.Microseconds())/1e3, "ms/period")
	b.ReportMetric(100*perPeriod.Seconds()/c.Period.Seconds(), "%core@"+hangfmt.ShortDuration(c.Period))
	b.ReportMetric(heapMiB()-base, "hubHeapMiB")
	runtime.KeepAlive(h)
	runtime.KeepAlive(periods)
}

// heapMiB is the live heap after a collection, in MiB.
func heapMiB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

// plainAuth seals nothing: it measures the protocol without the cost of
// authentication (MUNGE's is munged's, per credential; rdvtest.HMAC's
// seen-set costs more than the rest together as it grows).
type plainAuth struct{}

func (plainAuth) Seal(p []byte) ([]byte, error)         { return append([]byte(nil), p...), nil }
func (plainAuth) Open(t []byte) ([]byte, uint32, error) { return t, 1000, nil }

// BenchmarkRounds1024 runs whole periods of a 1024-node job over loopback:
// 1024 watchers in this process, each period a tick, 1023 summaries
// gathered, the hub's ingest and the digest broadcast, without
// authentication (plainAuth). The CPU it reports is the whole process's,
// the 1023 members' included: an upper bound of the coordinator's.
func BenchmarkRounds1024(b *testing.B) {
	const n = 1024
	names, addrs := rdvtest.Cluster(n)
	raiseNoFile(b, 2*n+256)
	l, err := net.Listen("tcp", net.JoinHostPort(addrs[names[0]], "0"))
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	c := watchcfg.DefaultHang()
	nodes := make([]*Node, n)
	var wg sync.WaitGroup
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i] = Start(context.Background(), Config{Job: "42", Self: names[i], Nodes: names, UID: 1000, Ports: []int{port},
				Addrs: addrs, Auth: plainAuth{}, Hang: c, Join: 20 * time.Second, Log: log})
		}()
	}
	wg.Wait()
	defer func() {
		for _, nd := range nodes {
			nd.Close()
		}
	}()
	if !nodes[0].Coordinator() {
		b.Fatal("no coordinator")
	}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	for k := range b.N {
		for i, nd := range nodes {
			s := reading(names[i], k, 12)
			s.Accel = append(s.Accel[:0], make([]trace.Accel, 8)...)
			nd.Observe(s, nil)
		}
		nodes[0].Due(context.Background(), t0.Add(time.Duration(k)*c.Period+time.Second))
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / time.Duration(b.N)
	b.ReportMetric(float64(cpu.Microseconds())/1e3, "cpu-ms/period")
	b.ReportMetric(100*cpu.Seconds()/c.Period.Seconds(), "%core@"+hangfmt.ShortDuration(c.Period))
	if st := nodes[0].sess.Stats(); st.Links != n-1 {
		b.Errorf("coordinator holds %d links, want %d", st.Links, n-1)
	}
}

// raiseNoFile raises the soft RLIMIT_NOFILE to need when it is lower.
func raiseNoFile(b *testing.B, need uint64) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		b.Fatal(err)
	}
	if r.Cur >= need {
		return
	}
	if r.Max < need {
		b.Skipf("RLIMIT_NOFILE hard limit %d, the benchmark needs %d", r.Max, need)
	}
	r.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		b.Fatal(err)
	}
}
