package nvidia

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
)

func TestSplitDevices(t *testing.T) {
	for _, tt := range []struct {
		name string
		devs []int
		k    int
		want [][]int
	}{
		{"4 into 2", []int{0, 1, 2, 3}, 2, [][]int{{0, 1}, {2, 3}}},
		{"3 into 2", []int{0, 1, 2}, 2, [][]int{{0, 1}, {2}}},
		{"8 into 3", []int{0, 1, 2, 3, 4, 5, 6, 7}, 3, [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7}}},
		{"more nodes than GPUs", []int{0, 1}, 5, [][]int{{0}, {1}}},
		{"one GPU", []int{0}, 2, [][]int{{0}}},
		{"job devices kept", []int{3, 5, 6}, 2, [][]int{{3, 5}, {6}}},
		{"no GPU", nil, 2, [][]int{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := SplitDevices(tt.devs, tt.k); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SplitDevices(%v, %d) = %v, want %v", tt.devs, tt.k, got, tt.want)
			}
		})
	}
}

// runSelftest runs the multinode-selftest command with a config whose
// [checks.nccl-allreduce-multinode] is settings, and returns its exit
// code, stdout and stderr.
func runSelftest(t *testing.T, settings string, args ...string) (int, string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vigil.toml")
	body := "[checks." + multinodeName + "]\nbytes = 65536\nverify_bytes = 8192\nwarmup = 1\niters = 2\n" + settings
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := selftestCommand(context.Background(), append([]string{"--config", path}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// TestSelftestOnFakeGPU: the machine's GPUs split into simulated nodes
// join one communicator, each GPU as the rank its node's place says, and
// every node passes with busbw and algbw printed.
func TestSelftestOnFakeGPU(t *testing.T) {
	libs := fakeGPULibs(t)
	for _, tt := range []struct {
		name, gpus string
		args       []string
		nodes      [][]int
	}{
		{"4 GPUs as 2 nodes", "4", nil, [][]int{{0, 1}, {2, 3}}},
		{"3 GPUs as 2 nodes", "3", []string{"--nodes", "2"}, [][]int{{0, 1}, {2}}},
		{"more nodes than GPUs", "4", []string{"--nodes", "6"}, [][]int{{0}, {1}, {2}, {3}}},
		{"one GPU, one rank", "1", nil, [][]int{{0}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("FAKEGPU_COUNT", tt.gpus)
			log := filepath.Join(t.TempDir(), "nccl.log")
			t.Setenv("FAKEGPU_NCCL_LOG", log)
			code, out, errs := runSelftest(t, libs, tt.args...)
			if code != selftestPass || errs != "" {
				t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errs, out)
			}
			ranks := 0
			for _, n := range tt.nodes {
				ranks += len(n)
			}
			joins := readJoins(t, log)
			if len(joins) != ranks {
				t.Fatalf("%d ranks joined, want %d: %+v", len(joins), ranks, joins)
			}
			first := 0
			for i, devs := range tt.nodes {
				gpus := make([]string, len(devs))
				for j, d := range devs {
					gpus[j] = devName(d)
					if jn := joins[first+j]; jn.dev != d || jn.nranks != ranks || !jn.group || jn.clique != joins[0].clique {
						t.Errorf("rank %d: %+v, want device %d in a group of one communicator", first+j, jn, d)
					}
				}
				line := fmt.Sprintf("node%d  %-24s ranks %d-%d  pass busbw_gbps=", i, strings.Join(gpus, ","), first, first+len(devs)-1)
				if !strings.Contains(out, line) {
					t.Errorf("no line %q in:\n%s", line, out)
				}
				first += len(devs)
			}
			want := fmt.Sprintf("verdict: pass (%d simulated nodes, %d ranks)\n", len(tt.nodes), ranks)
			if ranks == 1 {
				want = "verdict: pass (1 simulated node, 1 rank)\n"
			}
			if !strings.HasSuffix(out, want) {
				t.Errorf("want verdict %q, got:\n%s", want, out)
			}
			if ranks == 1 && !strings.Contains(out, "busbw_gbps=0 algbw_gbps=") {
				t.Errorf("one rank: busbw should be 0:\n%s", out)
			}
		})
	}
}

// TestSelftestFaults: a rank that fails, hangs or sums wrong fails the
// self-test (every node is this machine), named after the node to blame,
// within the timeout; no library is unknown at once.
func TestSelftestFaults(t *testing.T) {
	libs := fakeGPULibs(t)
	absent := strings.Replace(libs, "libcuda.so.1", "libcuda.so.vigil-absent", 1)
	noNCCL := strings.Replace(libs, "libnccl.so.2", "libnccl.so.vigil-absent", 1)
	for _, tt := range []struct {
		name, env, value, settings string
		code                       int
		within                     time.Duration
		want                       []string
	}{
		{"wrong sum", "FAKEGPU_BAD_COLLECTIVE", "1", libs, selftestFail, 20 * time.Second, []string{
			"node0  gpu0,gpu1                ranks 0-1  pass busbw_gbps=",
			"node1  gpu2,gpu3                ranks 2-3  fail CollectiveWrongResult\n",
			"verdict: fail CollectiveWrongResult: node1: all-reduce across nodes delivered wrong data: gpu3 (rank 3) element 0 = 83, want 82"}},
		{"rank 2 fails to init", "FAKEGPU_NCCL_INIT_FAIL_RANK", "2", libs, selftestFail, 10 * time.Second, []string{
			"node0  gpu0,gpu1                ranks 0-1  unknown MultinodeHung\n",
			"       init over 4 ranks (ranks 0- here) did not finish before the deadline",
			"node1  gpu2,gpu3                ranks 2-3  unknown NCCLError\n",
			"verdict: fail NCCLError: node1: init: ncclCommInitRank: ncclSystemError (2): fake NCCL error"}},
		{"rank 3 never delivers", "FAKEGPU_NCCL_HANG_RANK", "3", libs, selftestFail, 10 * time.Second, []string{
			"verdict: fail MultinodeHung: node0: verification all-reduce over 4 ranks (ranks 0- here) did not finish"}},
		{"no CUDA", "", "", absent, selftestUnknown, 5 * time.Second, []string{
			"verdict: unknown LibraryMissing: "}},
		{"no NCCL", "", "", noNCCL, selftestUnknown, 5 * time.Second, []string{
			"verdict: unknown LibraryMissing: setup: "}},
		{"no GPU", "FAKEGPU_COUNT", "0", libs, selftestUnknown, 5 * time.Second, []string{
			"verdict: unknown NoDevices: "}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv(tt.env, tt.value)
			}
			start := time.Now()
			code, out, _ := runSelftest(t, tt.settings, "--timeout", "1500ms")
			if took := time.Since(start); took > tt.within {
				t.Errorf("took %v, want under %v", took, tt.within)
			}
			if code != tt.code {
				t.Errorf("exit %d, want %d:\n%s", code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
		})
	}
}

func TestSelftestCommandLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, selftestPass, "usage: vigil-prolog multinode-selftest [--config FILE] [--nodes K] [--timeout D]"},
		{[]string{"--nodes", "0"}, selftestBadUsage, "--nodes 0: want 1 or more (see vigil-prolog multinode-selftest --help)"},
		{[]string{"--timeout", "0s"}, selftestBadUsage, "--timeout 0s: must be positive"},
		{[]string{"extra"}, selftestBadUsage, `unexpected argument "extra"`},
		{[]string{"--config", "/nonexistent/vigil.toml"}, selftestUnknown, "/nonexistent/vigil.toml: no such file"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			run, ok := benchmarks.LookupCommand("multinode-selftest") // as vigil-prolog finds it
			if !ok {
				t.Fatal("multinode-selftest is not registered")
			}
			code := run(context.Background(), tt.args, &out, &errb)
			if code != tt.code || !strings.Contains(out.String()+errb.String(), tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and %q", code, out.String(), errb.String(), tt.code, tt.want)
			}
		})
	}
}
