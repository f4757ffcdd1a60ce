package nvidia

import (
	"context"
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/cuda"
	"github.com/vigil-hpc/vigil/cgo/dl"
)

// defaultPeers are the peer settings the GEMM check ships with.
var defaultPeers = devcheck.Peers{Fraction: 0.85, Min: 3}

func TestThresholdsLookup(t *testing.T) {
	th := devcheck.Thresholds{
		"H100":      {"tflops_bf16": 600},
		"H100 PCIe": {"tflops_bf16": 400},
		"A100":      {"tflops_tf32": 100},
	}
	tests := []struct {
		name, model, metric string
		want                float64
		key                 string
		ok                  bool
	}{
		{"sxm", "NVIDIA H100 80GB HBM3", "tflops_bf16", 600, "H100", true},
		{"longest key wins", "NVIDIA H100 PCIe", "tflops_bf16", 400, "H100 PCIe", true},
		{"case-insensitive", "nvidia h100 pcie", "tflops_bf16", 400, "H100 PCIe", true},
		{"metric missing", "NVIDIA A100-SXM4-80GB", "tflops_bf16", 0, "", false},
		{"unknown model", "Tesla V100", "tflops_bf16", 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, key, ok := th.Lookup(tt.model, tt.metric)
			if got != tt.want || key != tt.key || ok != tt.ok {
				t.Errorf("Lookup = %v %q %v, want %v %q %v", got, key, ok, tt.want, tt.key, tt.ok)
			}
		})
	}
	merged := th.Merge(devcheck.Thresholds{"H100": {"tflops_fp8": 1000}, "B200": {"tflops_bf16": 1500}})
	if merged["H100"]["tflops_bf16"] != 600 || merged["H100"]["tflops_fp8"] != 1000 || merged["B200"]["tflops_bf16"] != 1500 {
		t.Errorf("merge = %v", merged)
	}
	if _, ok := th["H100"]["tflops_fp8"]; ok {
		t.Error("merge changed its receiver")
	}
}

func TestEvaluate(t *testing.T) {
	th := devcheck.Thresholds{"H100": {"tflops_bf16": 600, "wall_us": 10}}
	higher := devcheck.Metric{Name: "tflops_bf16_8192", Key: "tflops_bf16", Unit: "TFLOPS", Label: "bf16 GEMM"}
	lower := devcheck.Metric{Name: "wall_us", Key: "wall_us", Unit: "us", Lower: true, Label: "launch latency"}
	rs := func(vals ...float64) []devcheck.Reading {
		var out []devcheck.Reading
		for i, v := range vals {
			out = append(out, devcheck.Reading{Device: devName(i), Model: "NVIDIA H100 80GB HBM3", Value: v})
		}
		return out
	}
	tests := []struct {
		name      string
		m         devcheck.Metric
		readings  []devcheck.Reading
		peers     devcheck.Peers
		wantFails []string // "gpuN:threshold" or "gpuN:peers"
	}{
		{"all healthy", higher, rs(700, 710, 705, 695), defaultPeers, nil},
		{"below floor", higher, rs(700, 550, 705, 695), defaultPeers, []string{"gpu1:threshold"}},
		{"above floor, below peers", higher, rs(800, 810, 640, 805), defaultPeers, []string{"gpu2:peers"}},
		{"peers need 3 devices", higher, rs(800, 640), defaultPeers, nil},
		{"peers disabled", higher, rs(800, 810, 640, 805), devcheck.Peers{Fraction: 0, Min: 3}, nil},
		{"lower is better", lower, rs(8, 12, 8.5, 8.2), defaultPeers, []string{"gpu1:threshold"}},
		{"lower: above peers", lower, rs(4, 4.1, 6, 3.9), defaultPeers, []string{"gpu2:peers"}},
		{"NaN fails", higher, rs(math.NaN(), 700, 700), defaultPeers, []string{"gpu0:threshold"}},
		{"no key, peers only", devcheck.Metric{Name: "x", Unit: "u", Label: "x"}, rs(100, 100, 50), defaultPeers, []string{"gpu2:peers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals, fs := devcheck.Evaluate(tt.m, tt.readings, th, tt.peers)
			if len(vals) != len(tt.readings) {
				t.Fatalf("%d values for %d readings", len(vals), len(tt.readings))
			}
			var got []string
			for _, f := range fs {
				kind := "threshold"
				if f.Peers {
					kind = "peers"
				}
				got = append(got, f.Device+":"+kind)
			}
			if strings.Join(got, ",") != strings.Join(tt.wantFails, ",") {
				t.Errorf("findings %v, want %v (%+v)", got, tt.wantFails, fs)
			}
			for _, v := range vals {
				failed := false
				for _, f := range fs {
					failed = failed || f.Device == v.Device
				}
				if (v.Status == benchmarks.StatusFail) != failed {
					t.Errorf("%s status %s, findings %v", v.Device, v.Status, got)
				}
				if tt.m.Key != "" && v.Threshold == nil {
					t.Errorf("%s has no threshold", v.Device)
				}
			}
		})
	}
}

// TestBusBandwidth checks the nccl-tests formulas against rows in the form
// nccl-tests prints them (size in bytes, time in µs, algbw and busbw in
// GB/s, rounded to two decimals).
func TestBusBandwidth(t *testing.T) {
	tests := []struct {
		op           device.CollOp
		ranks        int
		size         float64 // nccl-tests "size" column, bytes
		timeUs       float64
		algbw, busbw float64
	}{
		{device.AllReduce, 8, 8589934592, 36590, 234.76, 410.83},
		{device.AllReduce, 2, 1073741824, 12000, 89.48, 89.48},
		{device.AllReduce, 4, 268435456, 2250, 119.30, 178.96},
		{device.AllGather, 8, 8589934592, 26000, 330.38, 289.08},
		{device.AllToAll, 8, 1073741824, 4500, 238.61, 208.78},
		{device.AllToAll, 16, 536870912, 3000, 178.96, 167.77},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.op, tt.ranks), func(t *testing.T) {
			alg := devcheck.AlgBW(tt.size, tt.timeUs/1e6)
			bus := alg * devcheck.BusFactor(tt.op, tt.ranks)
			if math.Abs(alg-tt.algbw) > 0.005 || math.Abs(bus-tt.busbw) > 0.005 {
				t.Errorf("algbw %.2f busbw %.2f, want %.2f %.2f", alg, bus, tt.algbw, tt.busbw)
			}
		})
	}
	// The size S of each op from per-rank counts.
	if got := devcheck.SizeBytes(device.AllGather, 1<<20, 8); got != 8*4<<20 {
		t.Errorf("all-gather size %v", got)
	}
	if got := devcheck.SizeBytes(device.AllReduce, 1<<20, 8); got != 4<<20 {
		t.Errorf("all-reduce size %v", got)
	}
	if devcheck.BusFactor(device.AllReduce, 1) != 0 {
		t.Error("one rank moves nothing over the bus")
	}
}

func TestCollectiveVerification(t *testing.T) {
	devs := []int{0, 1, 2, 4}
	for _, op := range []device.CollOp{device.AllReduce, device.AllGather, device.AllToAll} {
		t.Run(string(op), func(t *testing.T) {
			in := devcheck.CollInputs(4, 64)
			good := devcheck.CollExpected(op, in)
			if err := devcheck.VerifyCollective(op, devNames(devs), in, good); err != nil {
				t.Fatal(err)
			}
			bad := make([][]float32, len(good))
			for r := range good {
				bad[r] = append([]float32(nil), good[r]...)
			}
			bad[3][10] += 1
			err := devcheck.VerifyCollective(op, devNames(devs), in, bad)
			if err == nil || !strings.Contains(err.Error(), "gpu4") {
				t.Errorf("corruption not caught or not attributed to gpu4: %v", err)
			}
			if err := devcheck.VerifyCollective(op, devNames(devs), in, bad[:2]); err == nil {
				t.Error("missing outputs not caught")
			}
		})
	}
	// Expected values by hand: 2 ranks, all-to-all swaps halves.
	in := [][]float32{{1, 2}, {3, 4}}
	if got := devcheck.CollExpected(device.AllToAll, in); fmt.Sprint(got) != "[[1 3] [2 4]]" {
		t.Errorf("all-to-all expected %v", got)
	}
	if got := devcheck.CollExpected(device.AllReduce, in); fmt.Sprint(got) != "[[4 6] [4 6]]" {
		t.Errorf("all-reduce expected %v", got)
	}
	if got := devcheck.CollExpected(device.AllGather, in); fmt.Sprint(got) != "[[1 2 3 4] [1 2 3 4]]" {
		t.Errorf("all-gather expected %v", got)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status benchmarks.Status
		reason string
	}{
		{"library missing", &dl.NotFoundError{Names: []string{"libcuda.so.1"}, Tried: []string{"libcuda.so.1"}}, benchmarks.StatusUnknown, device.ReasonLibraryMissing},
		{"symbol missing", fmt.Errorf("x: %w", dl.ErrSymbol), benchmarks.StatusUnknown, device.ReasonLibraryMissing},
		{"no devices", fmt.Errorf("%w: none", errNoDevices), benchmarks.StatusUnknown, device.ReasonNoDevices},
		{"driver says no device", &cuda.Error{Op: "cuInit", Code: cuda.ErrNoDevice, Name: "CUDA_ERROR_NO_DEVICE"}, benchmarks.StatusUnknown, device.ReasonNoDevices},
		{"hung", fmt.Errorf("%w: x", devcheck.ErrHung), benchmarks.StatusFail, device.ReasonDeviceHung},
		{"device fault", &cuda.Error{Op: "cuStreamSynchronize", Code: cuda.ErrIllegalAddress, Name: "CUDA_ERROR_ILLEGAL_ADDRESS"}, benchmarks.StatusFail, device.ReasonDeviceFault},
		{"other", errors.New("boom"), benchmarks.StatusUnknown, device.ReasonCheckerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := classify("gemm", tt.err)
			if r.Status != tt.status || r.Reason != tt.reason {
				t.Errorf("classify = %s %s, want %s %s", r.Status, r.Reason, tt.status, tt.reason)
			}
		})
	}
}

func TestRunRespectsDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	block := make(chan struct{})
	defer close(block)
	t0 := time.Now()
	err := devcheck.Run(ctx, func() error { <-block; return nil })
	if !errors.Is(err, devcheck.ErrHung) {
		t.Fatalf("err = %v, want ErrHung", err)
	}
	if time.Since(t0) > 5*time.Second {
		t.Error("run did not return at the deadline")
	}
}

// TestChecksWithoutCUDA runs every registered compute check the way the
// prolog does on a machine without the NVIDIA libraries: each reports
// unknown, names the library it looked for and never panics.
func TestChecksWithoutCUDA(t *testing.T) {
	settings := "[vendor.nvidia]\n" + `cuda_libraries = ["libcuda.so.1.vigil-test-absent"]` + "\n"
	for _, name := range []string{"gemm", "kernel-launch", "copy", "allreduce", "allgather", "alltoall", "multi-allreduce", "overlap"} {
		t.Run(name, func(t *testing.T) {
			c, ok := benchmarks.Lookup(name)
			if !ok {
				t.Fatalf("check %s is not registered", name)
			}
			if !c.Spec().Isolated {
				t.Error("compute checks call into the GPU and must run isolated")
			}
			env := envWith(t, name, "[checks."+name+"]\n"+settings)
			r := c.Run(context.Background(), env)
			if r.Status != benchmarks.StatusUnknown || r.Reason != device.ReasonLibraryMissing {
				t.Fatalf("result %+v, want unknown %s", r, device.ReasonLibraryMissing)
			}
			if !strings.Contains(r.Message, "libcuda.so.1.vigil-test-absent not found (searched:") {
				t.Errorf("message %q does not name the library and the search", r.Message)
			}
		})
	}
	// With the shipped settings: the default name is what the message names
	// when this machine has no driver (CI has none).
	if _, err := dl.Open(dl.Options{Names: cuda.DefaultNames}); err != nil {
		c, _ := benchmarks.Lookup("gemm")
		r := c.Run(context.Background(), nil)
		if r.Status != benchmarks.StatusUnknown || !strings.Contains(r.Message, "libcuda.so.1 not found") {
			t.Errorf("default settings: %+v", r)
		}
	}
}

func TestBadSettingsAreUnknown(t *testing.T) {
	tests := []struct{ check, toml string }{
		{"gemm", "dtypes = [\"int4\"]"},
		{"gemm", "sizes = [100]"},
		{"gemm", "peer_fraction = 1.5"},
		{"gemm", "no_such_key = 1"},
		{"kernel-launch", "launches = 1"},
		{"copy", "bytes = 10"},
		{"allreduce", "iters = 0"},
		{"overlap", "dtype = \"fp64\""},
	}
	for _, tt := range tests {
		t.Run(tt.check+"/"+tt.toml, func(t *testing.T) {
			c, _ := benchmarks.Lookup(tt.check)
			r := c.Run(context.Background(), envWith(t, tt.check, "[checks."+tt.check+"]\n"+tt.toml+"\n"))
			if r.Status != benchmarks.StatusUnknown || r.Reason != benchmarks.ReasonInvalidSettings {
				t.Errorf("result %+v, want unknown %s", r, benchmarks.ReasonInvalidSettings)
			}
		})
	}
}

func TestDefaultsAreValid(t *testing.T) {
	for _, name := range []string{"gemm", "kernel-launch", "copy", "allreduce", "allgather", "alltoall", "multi-allreduce", "overlap"} {
		c, _ := benchmarks.Lookup(name)
		d := c.Spec().Settings
		if d == nil {
			t.Errorf("%s has no Settings", name)
			continue
		}
		if d() == nil {
			t.Errorf("%s: nil defaults", name)
		}
	}
	s := withOpener(t, "gemm", OpenCUDA).Spec().Settings().(*device.CrossCheckedGEMMSettings)
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
	for _, model := range []string{"NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA B200"} {
		if _, _, ok := s.Thresholds.Lookup(model, "tflops_bf16"); !ok {
			t.Errorf("no shipped bf16 GEMM floor for %s", model)
		}
		if _, _, ok := allReduceThresholds.Lookup(model, "busbw_gbps"); !ok {
			t.Errorf("no shipped all-reduce floor for %s", model)
		}
		if _, _, ok := launchThresholds.Lookup(model, "wall_us"); !ok {
			t.Errorf("no shipped launch limit for %s", model)
		}
		if _, _, ok := copyThresholds.Lookup(model, "h2d_gbps"); !ok {
			t.Errorf("no shipped copy floor for %s", model)
		}
	}
}

// TestGEMMRunValidatesLikeTheLoader: gemm refuses sizes = [17] before it
// opens a device, with the error the config loader reports for the key.
func TestGEMMRunValidatesLikeTheLoader(t *testing.T) {
	opened := false
	c := withOpener(t, "gemm", func(ctx context.Context, libs Libraries, devices []int) (device.Node, error) {
		opened = true
		return nil, errors.New("not here")
	})
	env := &benchmarks.Env{Settings: func(v any) error { v.(*device.CrossCheckedGEMMSettings).Sizes = []int{17}; return nil }}
	r := c.Run(context.Background(), env)
	if r.Status != benchmarks.StatusUnknown || r.Reason != benchmarks.ReasonInvalidSettings || !strings.Contains(r.Message, "sizes = 17: want a multiple of 16 from 16 to 32768") || opened {
		t.Fatalf("result %+v, device opened %v", r, opened)
	}
	s := c.Spec().Settings().(*device.CrossCheckedGEMMSettings)
	s.Sizes = []int{17}
	var se *benchmarks.SettingError
	if err := s.Validate(); !errors.As(err, &se) || se.Key != "sizes" {
		t.Fatalf("Validate() = %v", err)
	}
}

// devNames names each of the device indices as results do.
func devNames(idx []int) []string {
	out := make([]string, len(idx))
	for i, d := range idx {
		out[i] = devName(d)
	}
	return out
}
