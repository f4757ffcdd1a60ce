package nvidia

import (
	"context"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/crossnet"
	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
)

// runPhaseJob runs the prolog's cross-node phase with only
// nccl-allreduce-multinode on the three nodes of fakeJob, each on its own
// loopback address with its own GPUs of the emulated GPU; settings gives
// each node's [checks.nccl-allreduce-multinode].
func runPhaseJob(t *testing.T, settings func(node string) string) map[string]benchmarks.Result {
	t.Helper()
	names := make([]string, len(fakeJob))
	addrs := map[string]string{}
	for i, n := range fakeJob {
		names[i], addrs[n.name] = n.name, rdvtest.Addr(i)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(addrs[names[0]], "0"))
	if err != nil {
		t.Fatal(err)
	}
	conn := *crossnet.DefaultConnect()
	conn.Port, conn.Join = l.Addr().(*net.TCPAddr).Port, 2*time.Second
	l.Close()
	logger, _ := logtest.NewNullLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]benchmarks.Result{}
	for _, n := range fakeJob {
		env := envWith(t, multinodeName, "[checks."+multinodeName+"]\n"+settings(n.name))
		p := crossnet.Phase{Job: "31", Self: n.name, Nodes: names, Addrs: addrs, Checks: []string{multinodeName},
			Connect: conn, Bandwidth: *crossnet.DefaultBandwidth(), Auth: rdvtest.New([]byte("k"), 0), Log: logger,
			Devices: n.devs, Timeouts: map[string]time.Duration{multinodeName: 3 * time.Second},
			Settings:  func(string) func(v any) error { return env.Settings },
			Libraries: func(string) func(v any) error { return env.Libraries }}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := p.RunJob(ctx).Results
			if len(rs) != 1 {
				t.Errorf("%s: %+v", n.name, rs)
				return
			}
			mu.Lock()
			out[n.name] = rs[0]
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// TestMultinodeInPhase: the coordinator's prolog makes the id, every node
// learns its first rank (the GPUs of the nodes before it in sorted order),
// and the all-reduce over the job's 5 GPUs passes on every node, each
// rank joined once.
func TestMultinodeInPhase(t *testing.T) {
	libs := fakeGPULibs(t)
	log := filepath.Join(t.TempDir(), "nccl.log")
	t.Setenv("FAKEGPU_NCCL_LOG", log)
	small := "bytes = 65536\nverify_bytes = 8192\nwarmup = 1\niters = 2\n"
	res := runPhaseJob(t, func(string) string { return small + libs })
	for _, n := range fakeJob {
		r := res[n.name]
		want := fmt.Sprintf("all-reduce over 5 GPUs of the job (ranks %d-%d here): ", n.first, n.first+len(n.devs)-1)
		if r.Status != benchmarks.StatusPass || !strings.HasPrefix(r.Message, want) || len(r.Values) == 0 {
			t.Errorf("%s: %s %s %q", n.name, r.Status, r.Reason, r.Message)
		}
	}
	if joins := readJoins(t, log); len(joins) != fakeJobRanks {
		t.Errorf("%d ranks joined, want %d", len(joins), fakeJobRanks)
	}
}

// TestMultinodeInPhaseNeverJoined: one node finds no NCCL; it never
// joins, and the others' unknown results name it.
func TestMultinodeInPhaseNeverJoined(t *testing.T) {
	libs := fakeGPULibs(t)
	small := "bytes = 65536\nverify_bytes = 8192\nwarmup = 1\niters = 2\n"
	res := runPhaseJob(t, func(node string) string {
		if node == "node-c" {
			return small + strings.Replace(libs, "libnccl.so.2", "libnccl.so.vigil-absent", 1)
		}
		return small + libs
	})
	if r := res["node-c"]; r.Status != benchmarks.StatusUnknown || r.Reason != device.ReasonLibraryMissing {
		t.Errorf("node-c: %+v", r)
	}
	for _, n := range []string{"node-a", "node-b"} {
		r := res[n]
		if r.Status != benchmarks.StatusUnknown || r.Reason != device.ReasonMultinodeHung ||
			!strings.HasSuffix(r.Message, "never joined: node-c ("+device.ReasonLibraryMissing+")") {
			t.Errorf("%s: %s %s %q", n, r.Status, r.Reason, r.Message)
		}
	}
}
