package nvidia

import (
	"context"
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/cgo/dl"
)

// fakeJob is three "nodes" of the emulated GPU, each a goroutine with its
// own OpenCUDA, its own GPUs and its own ranks of one communicator.
var fakeJob = []struct {
	name  string
	devs  []int
	first int
}{
	{"node-a", []int{0, 1}, 0},
	{"node-b", []int{2, 3}, 2},
	{"node-c", []int{1}, 4},
}

const fakeJobRanks = 5

// runFakeJob runs the check on every node of fakeJob at once with one id,
// each under timeout, and returns the results by node.
func runFakeJob(t *testing.T, libs string, timeout time.Duration, role func(node int, r MultinodeRole) MultinodeRole) map[string]benchmarks.Result {
	t.Helper()
	settings := "[checks." + multinodeName + "]\nbytes = 65536\nverify_bytes = 8192\nwarmup = 1\niters = 2\n" + libs
	id, err := NewUniqueID(envWith(t, multinodeName, settings))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]benchmarks.Result{}
	for i, n := range fakeJob {
		env := envWith(t, multinodeName, settings)
		env.Node, env.Devices = n.name, n.devs
		r := MultinodeRole{ID: id, NRanks: fakeJobRanks, FirstRank: n.first}
		if role != nil {
			r = role(i, r)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			res := shippedMultinode.run(ctx, env, r)
			mu.Lock()
			out[n.name] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// TestMultinodeOnFakeGPU: three nodes' GPUs meet through the unique id; each
// GPU joins as the rank its node's first rank says, in a group, with its
// own device current; the all-reduce sums over all five ranks and every
// node reports busbw = algbw × 2(n−1)/n.
func TestMultinodeOnFakeGPU(t *testing.T) {
	libs := fakeGPULibs(t)
	log := filepath.Join(t.TempDir(), "nccl.log")
	t.Setenv("FAKEGPU_NCCL_LOG", log)
	res := runFakeJob(t, libs, 20*time.Second, nil)
	for _, n := range fakeJob {
		r := res[n.name]
		if r.Status != benchmarks.StatusPass {
			t.Fatalf("%s: %s %s: %s", n.name, r.Status, r.Reason, r.Message)
		}
		want := fmt.Sprintf("all-reduce over 5 GPUs of the job (ranks %d-%d here): ", n.first, n.first+len(n.devs)-1)
		if !strings.HasPrefix(r.Message, want) || !strings.Contains(r.Message, "results verified; NCCL ") {
			t.Errorf("%s: message %q", n.name, r.Message)
		}
		alg, bus := valueOf(t, r, "", "algbw_gbps").Value, valueOf(t, r, "", "busbw_gbps").Value
		if f := bus / alg; math.Abs(f-1.6) > 0.01*1.6 && alg > 0.01 {
			t.Errorf("%s: busbw/algbw = %g, want 2(n-1)/n = 1.6", n.name, f)
		}
	}
	joins := readJoins(t, log)
	if len(joins) != fakeJobRanks {
		t.Fatalf("%d ranks joined, want %d: %+v", len(joins), fakeJobRanks, joins)
	}
	for _, n := range fakeJob {
		last := -1
		for i, d := range n.devs {
			j := joins[n.first+i]
			if j.dev != d || j.nranks != fakeJobRanks || !j.group || j.clique != joins[0].clique {
				t.Errorf("rank %d: %+v, want device %d of %s in a group", n.first+i, j, d, n.name)
			}
			if j.order <= last {
				t.Errorf("%s joined rank %d (order %d) after a later rank (order %d)", n.name, n.first+i, j.order, last)
			}
			last = j.order
		}
	}
}

type join struct {
	clique, rank, nranks, dev, order int
	group                            bool
}

// readJoins parses the fake's FAKEGPU_NCCL_LOG, one line per rank joined,
// by rank; a rank that joined twice fails the test.
func readJoins(t *testing.T, path string) map[int]join {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]join{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var j join
		var g int
		if _, err := fmt.Sscanf(line, "clique=%d rank=%d nranks=%d dev=%d order=%d group=%d", &j.clique, &j.rank, &j.nranks, &j.dev, &j.order, &g); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		j.group = g == 1
		if _, dup := out[j.rank]; dup {
			t.Fatalf("rank %d joined twice", j.rank)
		}
		out[j.rank] = j
	}
	return out
}

func TestMultinodeFaults(t *testing.T) {
	libs := fakeGPULibs(t)
	type want struct {
		status         benchmarks.Status
		reason, prefix string
	}
	tests := []struct {
		name, env, value string
		timeout          time.Duration
		role             func(int, MultinodeRole) MultinodeRole
		want             map[string]want
	}{
		{"wrong sum on the last rank", "FAKEGPU_BAD_COLLECTIVE", "1", 20 * time.Second, nil, map[string]want{
			"node-a": {benchmarks.StatusPass, "", "all-reduce over 5 GPUs"},
			"node-c": {benchmarks.StatusFail, ReasonCollectiveWrongResult,
				"all-reduce across nodes delivered wrong data: gpu1 (rank 4) element 0 = 136, want 135"},
		}},
		{"a rank fails to init, the others wait", "FAKEGPU_NCCL_INIT_FAIL_RANK", "2", 1500 * time.Millisecond, nil, map[string]want{
			"node-b": {benchmarks.StatusUnknown, ReasonNCCLError, "init: ncclCommInitRank: ncclSystemError (2): fake NCCL error"},
			"node-a": {benchmarks.StatusUnknown, device.ReasonMultinodeHung, "init over 5 ranks (ranks 0- here) did not finish before the deadline"},
			"node-c": {benchmarks.StatusUnknown, device.ReasonMultinodeHung, "init over 5 ranks (ranks 4- here) did not finish"},
		}},
		{"a rank never delivers", "FAKEGPU_NCCL_HANG_RANK", "3", 1500 * time.Millisecond, nil, map[string]want{
			"node-a": {benchmarks.StatusUnknown, device.ReasonMultinodeHung, "verification all-reduce over 5 ranks"},
			"node-b": {benchmarks.StatusUnknown, device.ReasonMultinodeHung, "verification all-reduce over 5 ranks (ranks 2- here)"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv(tt.env, tt.value)
			}
			res := runFakeJob(t, libs, tt.timeout, tt.role)
			for node, w := range tt.want {
				r := res[node]
				if r.Status != w.status || r.Reason != w.reason || !strings.HasPrefix(r.Message, w.prefix) {
					t.Errorf("%s: %s %s %q, want %s %s %q...", node, r.Status, r.Reason, r.Message, w.status, w.reason, w.prefix)
				}
			}
		})
	}
}

// TestMultinodeDuplicateRank: the fake refuses a rank taken twice
// (ncclInvalidUsage), as NCCL's bootstrap does.
func TestMultinodeDuplicateRank(t *testing.T) {
	libs := fakeGPULibs(t)
	res := runFakeJob(t, libs, 1500*time.Millisecond, func(i int, r MultinodeRole) MultinodeRole {
		if i == 2 {
			r.FirstRank = 1
		}
		return r
	})
	var dup []string
	for n, r := range res {
		if r.Reason == ReasonNCCLError && strings.Contains(r.Message, "ncclInvalidUsage") {
			dup = append(dup, n)
		}
	}
	sort.Strings(dup)
	if len(dup) != 1 {
		t.Errorf("want one node refused for a duplicate rank, got %v in %+v", dup, res)
	}
}

func TestMultinodeRoleAndAlone(t *testing.T) {
	libs := fakeGPULibs(t)
	env := envWith(t, multinodeName, "[checks."+multinodeName+"]\n"+libs)
	c, ok := benchmarks.Lookup(multinodeName)
	if !ok || c.Spec().Default || c.Spec().Vendor != benchmarks.VendorNVIDIA {
		t.Fatalf("%s: registered %v, in the default suite or not NVIDIA's", multinodeName, ok)
	}
	if r := c.Run(context.Background(), env); r.Status != benchmarks.StatusUnknown || r.Reason != device.ReasonNeedsJobNodes ||
		r.Message != "needs the job's other nodes: runs in the prolog's cross-node phase" {
		t.Errorf("alone: %+v", r)
	}
	id, err := NewUniqueID(env)
	if err != nil {
		t.Fatal(err)
	}
	env.Devices = []int{0, 1}
	for _, tt := range []struct {
		role MultinodeRole
		msg  string
	}{
		{MultinodeRole{ID: id, NRanks: 0}, "0 ranks in all: a communicator needs at least 1"},
		{MultinodeRole{ID: id, NRanks: 4, FirstRank: 3}, "ranks 3-4 for this node's 2 GPUs do not fit in 4"},
		{MultinodeRole{NRanks: 4}, "no communicator id"},
	} {
		r := shippedMultinode.run(context.Background(), env, tt.role)
		if r.Status != benchmarks.StatusUnknown || r.Reason != device.ReasonInvalidRole || r.Message != tt.msg {
			t.Errorf("%+v: %+v", tt.role.NRanks, r)
		}
	}
	_, err = NewUniqueID(envWith(t, multinodeName, "[vendor.nvidia]\nnccl_libraries = [\"libnccl.so.vigil-absent\"]\npython_prefixes = []\n"))
	if !errors.Is(err, dl.ErrNotFound) {
		t.Errorf("NewUniqueID without NCCL: %v", err)
	}
}
