package ascend

import (
	"context"
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/hccl"
)

// mnJob is three "nodes" of the stub's NPUs, each a goroutine with its own
// NPUs and its own ranks of one communicator; the stub's threads stand for
// the hosts' processes.
var mnJob = []struct {
	name  string
	devs  []int
	first int
}{
	{"node-a", []int{0, 1}, 0},
	{"node-b", []int{2, 3}, 2},
	{"node-c", []int{1}, 4},
}

const mnJobRanks = 5

func mnSettings(libs Libraries) string {
	return fmt.Sprintf("[checks.%s]\nbytes = 65536\nverify_bytes = 8192\nwarmup = 1\niters = 2\n[vendor.ascend]\nacl_libraries = [%q]\nhccl_libraries = [%q]\n",
		multinodeName, libs.ACL[0], libs.HCCL[0])
}

// runMNJob makes one root info on node-a and runs every node's part at
// once with it, each under timeout; it returns the results by node.
func runMNJob(t *testing.T, c *multinode, libs Libraries, timeout time.Duration, role func(node int, r device.MultinodeRole) device.MultinodeRole) map[string]benchmarks.Result {
	t.Helper()
	root := settings(t, multinodeName, mnSettings(libs))
	root.Devices = mnJob[0].devs
	id, err := c.newRootInfo(root)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]benchmarks.Result{}
	for i, n := range mnJob {
		env := settings(t, multinodeName, mnSettings(libs))
		env.Node, env.Devices = n.name, n.devs
		r := device.MultinodeRole{ID: id, NRanks: mnJobRanks, FirstRank: n.first}
		if role != nil {
			r = role(i, r)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			res := c.run(ctx, env, r)
			mu.Lock()
			out[n.name] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

type mnJoin struct {
	root, rank, nranks, dev, order int
	thread                         uint64
}

// readMNJoins parses STUBCANN_HCCL_LOG, one line per rank joining, by rank;
// a rank that joined twice fails the test.
func readMNJoins(t *testing.T, path string) map[int]mnJoin {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]mnJoin{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasSuffix(line, " aborted") {
			continue
		}
		var j mnJoin
		if _, err := fmt.Sscanf(line, "root=%d rank=%d nranks=%d dev=%d order=%d thread=%d", &j.root, &j.rank, &j.nranks, &j.dev, &j.order, &j.thread); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if _, dup := out[j.rank]; dup {
			t.Fatalf("rank %d joined twice", j.rank)
		}
		out[j.rank] = j
	}
	return out
}

// TestMultinodeOnStub: three nodes' NPUs meet through one root info; each
// NPU joins as the rank its node's first rank says, on its own thread with
// its own device set, all at once (joined one after the other, the first
// would wait for ever); the all-reduce sums over all five ranks and every
// node reports busbw = algbw × 2(n−1)/n. The exported functions are the
// process-wide ones over the same stub.
func TestMultinodeOnStub(t *testing.T) {
	libs := stubCANN(t)
	log := filepath.Join(t.TempDir(), "hccl.log")
	t.Setenv("STUBCANN_HCCL_LOG", log)
	t.Setenv("HCCL_CONNECT_TIMEOUT", "10")
	c := &multinode{MultinodeCheck: shippedMultinode.MultinodeCheck, cann: &cann{}}
	res := runMNJob(t, c, libs, 20*time.Second, nil)
	for _, n := range mnJob {
		r := res[n.name]
		if r.Status != benchmarks.StatusPass {
			t.Fatalf("%s: %s %s: %s", n.name, r.Status, r.Reason, r.Message)
		}
		want := fmt.Sprintf("all-reduce over 5 NPUs of the job (ranks %d-%d here): ", n.first, n.first+len(n.devs)-1)
		if !strings.HasPrefix(r.Message, want) || !strings.Contains(r.Message, "results verified; HCCL ") {
			t.Errorf("%s: message %q", n.name, r.Message)
		}
		alg, bus := mnValue(t, r, "algbw_gbps"), mnValue(t, r, "busbw_gbps")
		if f := bus / alg; alg > 0.01 && math.Abs(f-1.6) > 0.01*1.6 {
			t.Errorf("%s: busbw/algbw = %g, want 2(n-1)/n = 1.6", n.name, f)
		}
	}
	joins := readMNJoins(t, log)
	if len(joins) != mnJobRanks {
		t.Fatalf("%d ranks joined, want %d: %+v", len(joins), mnJobRanks, joins)
	}
	threads := map[uint64]int{}
	for _, n := range mnJob {
		for i, d := range n.devs {
			rank := n.first + i
			j := joins[rank]
			if j.dev != d || j.nranks != mnJobRanks || j.root != joins[0].root {
				t.Errorf("rank %d: %+v, want device %d of %s, 5 ranks, one root", rank, j, d, n.name)
			}
			if other, seen := threads[j.thread]; seen {
				t.Errorf("ranks %d and %d joined from one thread", other, rank)
			}
			threads[j.thread] = rank
		}
	}

	// The exported pair, over the process's CANN (the stub).
	env := settings(t, multinodeName, mnSettings(libs))
	id, err := shippedMultinode.newRootInfo(env)
	if err != nil || len(id) != hccl.RootInfoBytes {
		t.Fatalf("newRootInfo: %d bytes, %v", len(id), err)
	}
	var wg sync.WaitGroup
	got := make([]benchmarks.Result, 2)
	for i, devs := range [][]int{{0, 1}, {2, 3}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := settings(t, multinodeName, mnSettings(libs))
			e.Devices = devs
			got[i] = shippedMultinode.run(context.Background(), e, device.MultinodeRole{ID: id, NRanks: 4, FirstRank: 2 * i})
		}()
	}
	wg.Wait()
	for i, r := range got {
		if r.Status != benchmarks.StatusPass || !strings.HasPrefix(r.Message, "all-reduce over 4 NPUs of the job") {
			t.Errorf("run %d: %+v", i, r)
		}
	}
}

func mnValue(t *testing.T, r benchmarks.Result, name string) float64 {
	t.Helper()
	for _, v := range r.Values {
		if v.Name == name && v.Device == "" {
			return v.Value
		}
	}
	t.Fatalf("%s: no %s in %+v", r.Check, name, r.Values)
	return 0
}

func TestMultinodeFaults(t *testing.T) {
	libs := stubCANN(t)
	type want struct {
		status         benchmarks.Status
		reason, prefix string
	}
	tests := []struct {
		name, env, value string
		timeout          time.Duration
		want             map[string]want
	}{
		{"wrong sum on the last rank", "STUBCANN_HCCL_BAD_RANK", "4", 20 * time.Second, map[string]want{
			"node-a": {benchmarks.StatusPass, "", "all-reduce over 5 NPUs"},
			"node-c": {benchmarks.StatusFail, device.ReasonCollectiveWrongResult,
				"all-reduce across nodes delivered wrong data: npu1 (rank 4) element 0 = 136, want 135"},
		}},
		{"a rank fails to init, the others wait", "STUBCANN_HCCL_INIT_FAIL_RANK", "2", 1500 * time.Millisecond, map[string]want{
			"node-b": {benchmarks.StatusUnknown, ReasonHCCLError, "init: npu2: HcclCommInitRootInfo: HCCL_E_INTERNAL (4): stub error"},
			"node-a": {benchmarks.StatusUnknown, device.ReasonMultinodeHung, "init over 5 ranks (ranks 0- here) did not finish before the deadline"},
			"node-c": {benchmarks.StatusUnknown, device.ReasonMultinodeHung, "init over 5 ranks (ranks 4- here) did not finish"},
		}},
		{"a rank never delivers", "STUBCANN_HCCL_HANG_RANK", "3", 1500 * time.Millisecond, map[string]want{
			"node-a": {benchmarks.StatusUnknown, device.ReasonMultinodeHung, "verification all-reduce over 5 ranks (ranks 0- here)"},
			"node-b": {benchmarks.StatusUnknown, device.ReasonMultinodeHung, "verification all-reduce over 5 ranks (ranks 2- here)"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Ranks left waiting in HcclCommInitRootInfo end on HCCL's own timeout.
			t.Setenv("HCCL_CONNECT_TIMEOUT", "3")
			t.Setenv(tt.env, tt.value)
			res := runMNJob(t, &multinode{MultinodeCheck: shippedMultinode.MultinodeCheck, cann: &cann{}}, libs, tt.timeout, nil)
			for node, w := range tt.want {
				r := res[node]
				if r.Status != w.status || r.Reason != w.reason || !strings.HasPrefix(r.Message, w.prefix) {
					t.Errorf("%s: %s %s %q, want %s %s %q...", node, r.Status, r.Reason, r.Message, w.status, w.reason, w.prefix)
				}
			}
		})
	}
}

// TestMultinodeAbortEndsWaits: at the deadline each node destroys its
// communicators from its own thread, which ends the all-reduces its ranks
// wait in: every rank of the job comes back, none stays stuck in HCCL.
func TestMultinodeAbortEndsWaits(t *testing.T) {
	libs := stubCANN(t)
	log := filepath.Join(t.TempDir(), "hccl.log")
	t.Setenv("STUBCANN_HCCL_LOG", log)
	t.Setenv("HCCL_CONNECT_TIMEOUT", "3")
	t.Setenv("STUBCANN_HCCL_HANG_RANK", "0")
	for n, r := range runMNJob(t, &multinode{MultinodeCheck: shippedMultinode.MultinodeCheck, cann: &cann{}}, libs, time.Second, nil) {
		if r.Reason != device.ReasonMultinodeHung {
			t.Errorf("%s: %+v", n, r)
		}
	}
	var aborted int
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(log)
		if aborted = strings.Count(string(b), " aborted\n"); aborted == mnJobRanks {
			return
		}
	}
	t.Errorf("%d of %d ranks came back from the all-reduce after the abort", aborted, mnJobRanks)
}

// TestMultinodeDuplicateRank: a rank taken twice is refused (HCCL_E_PARA);
// the node that asked for it says so.
func TestMultinodeDuplicateRank(t *testing.T) {
	libs := stubCANN(t)
	t.Setenv("HCCL_CONNECT_TIMEOUT", "3")
	res := runMNJob(t, &multinode{MultinodeCheck: shippedMultinode.MultinodeCheck, cann: &cann{}}, libs, 1500*time.Millisecond, func(i int, r device.MultinodeRole) device.MultinodeRole {
		if i == 2 {
			r.FirstRank = 1
		}
		return r
	})
	var dup []string
	for n, r := range res {
		if r.Reason == ReasonHCCLError && strings.Contains(r.Message, "HCCL_E_PARA") {
			dup = append(dup, n)
		}
	}
	if len(dup) != 1 {
		t.Errorf("want one node refused for a duplicate rank, got %v in %+v", dup, res)
	}
}

func TestMultinodeRoleAndAlone(t *testing.T) {
	libs := stubCANN(t)
	env := settings(t, multinodeName, mnSettings(libs))
	c, ok := benchmarks.Lookup(multinodeName)
	if !ok || c.Spec().Default || c.Spec().Vendor != benchmarks.VendorAscend || c.Spec().Kind != benchmarks.KindPerf {
		t.Fatalf("%s: registered %v, in the default suite, not Ascend's or not perf", multinodeName, ok)
	}
	if r := c.Run(context.Background(), env); r.Status != benchmarks.StatusUnknown || r.Reason != device.ReasonNeedsJobNodes ||
		r.Message != "needs the job's other nodes: runs in the prolog's cross-node phase" {
		t.Errorf("alone: %+v", r)
	}
	m := &multinode{MultinodeCheck: shippedMultinode.MultinodeCheck, cann: &cann{}}
	id, err := m.newRootInfo(env)
	if err != nil {
		t.Fatal(err)
	}
	env.Devices = []int{0, 1}
	for _, tt := range []struct {
		role device.MultinodeRole
		msg  string
	}{
		{device.MultinodeRole{ID: id, NRanks: 1}, "1 ranks in all: an all-reduce needs at least 2"},
		{device.MultinodeRole{ID: id, NRanks: 4, FirstRank: 3}, "ranks 3-4 for this node's 2 NPUs do not fit in 4"},
		{device.MultinodeRole{NRanks: 4}, "no communicator id"},
		{device.MultinodeRole{ID: make([]byte, hccl.RootInfoBytes), NRanks: 4}, "no communicator id"},
		{device.MultinodeRole{ID: id[:128], NRanks: 4}, "communicator id of 128 bytes, want 4108"},
	} {
		r := m.run(context.Background(), env, tt.role)
		if r.Status != benchmarks.StatusUnknown || r.Reason != device.ReasonInvalidRole || r.Message != tt.msg {
			t.Errorf("%q: %+v", tt.msg, r)
		}
	}
	bad := settings(t, multinodeName, fmt.Sprintf("[checks.%s]\nbytes = 16\n[vendor.ascend]\nhccl_libraries = [%q]\n", multinodeName, libs.HCCL[0]))
	if r := m.run(context.Background(), bad, device.MultinodeRole{ID: id, NRanks: 4}); r.Reason != devcheck.ReasonInvalidSettings {
		t.Errorf("bytes = 16: %+v", r)
	}
	absent := settings(t, multinodeName, "[vendor.ascend]\nacl_libraries = [\"libascendcl.so.vigil-absent\"]\n")
	if _, err := (&multinode{MultinodeCheck: shippedMultinode.MultinodeCheck, cann: &cann{}}).newRootInfo(absent); !errors.Is(err, dl.ErrNotFound) {
		t.Errorf("newRootInfo without CANN: %v", err)
	}
	if r := (&multinode{MultinodeCheck: shippedMultinode.MultinodeCheck, cann: &cann{}}).run(context.Background(), absent, device.MultinodeRole{ID: id, NRanks: 4}); r.Status != benchmarks.StatusUnknown || r.Reason != device.ReasonLibraryMissing {
		t.Errorf("run without CANN: %+v", r)
	}
}
