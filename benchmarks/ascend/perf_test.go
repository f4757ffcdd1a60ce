package ascend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/acl"
	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/hccl"
)

// fakeNPU is one fake device.
type fakeNPU struct {
	tflops float64 // GEMM speed
	wrong  bool    // GEMM returns a corrupted product
	err    error   // every call fails with this
	hang   bool    // every call blocks until ctx ends
	copy   device.CopyOutput
	// eventUs and wallUs are the launch latencies (median), fillBad a zero
	// kernel that leaves values behind.
	eventUs, wallUs float64
	fillBad         bool
}

// fakeNode is a Node of fake NPUs that computes GEMMs on the host.
type fakeNode struct {
	model string
	npus  map[int]*fakeNPU
	order []int
	// busbw is the collective bus bandwidth reported, GB/s.
	busbw   float64
	collErr error
	// corrupt makes the collective deliver one wrong element.
	corrupt bool
	// overlap is what Overlap reports, overlapErr its error.
	overlap    device.OverlapOutput
	overlapErr error
	closed     bool
}

func newFakeNode(n int, model string, tflops float64) *fakeNode {
	f := &fakeNode{model: model, npus: map[int]*fakeNPU{}, busbw: 150,
		overlap: device.OverlapOutput{GEMMAlone: 1, AllReduceAlone: 1, Together: 1.25}}
	for i := 0; i < n; i++ {
		f.npus[i] = &fakeNPU{tflops: tflops, copy: device.CopyOutput{H2D: 24, D2H: 25, D2D: 900, Verified: true}, eventUs: 30, wallUs: 60}
		f.order = append(f.order, i)
	}
	return f
}

func (f *fakeNode) opener(devices []int) Opener {
	return func(ctx context.Context, libs Libraries, want []int) (device.Node, error) {
		if want != nil {
			f.order = want
		}
		return f, nil
	}
}

func (f *fakeNode) Devices() []device.Info {
	var out []device.Info
	for _, i := range f.order {
		out = append(out, device.Info{Index: i, Name: f.model})
	}
	return out
}

func (f *fakeNode) Runtime() string { return "/fake/libascendcl.so" }
func (f *fakeNode) Close() error    { f.closed = true; return nil }

func (f *fakeNode) dev(ctx context.Context, i int) (*fakeNPU, error) {
	d := f.npus[i]
	if d.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return d, d.err
}

func (f *fakeNode) GEMM(ctx context.Context, i int, in device.GEMMInput) (device.GEMMOutput, error) {
	d, err := f.dev(ctx, i)
	if err != nil {
		return device.GEMMOutput{}, err
	}
	out := device.GEMMOutput{Seconds: 2 * float64(in.M*in.N*in.K) / (d.tflops * 1e12), Iters: 10}
	if in.Readback {
		out.D = make([]float32, in.M*in.N)
		for r := 0; r < in.M; r++ {
			for c := 0; c < in.N; c++ {
				var s float32
				for l := 0; l < in.K; l++ {
					s += in.A[r*in.K+l] * in.Bt[c*in.K+l]
				}
				out.D[r+c*in.M] = roundTo(in.DType, s)
			}
		}
		if d.wrong {
			for j := 0; j < in.N; j++ {
				out.D[3+j*in.M] += 1 // one bad row
			}
		}
	}
	return out, nil
}

// roundTo rounds x to the output type, as the device does.
func roundTo(dt device.DType, x float32) float32 {
	if dt == device.FP16 {
		return devcheck.F16ToF32(devcheck.F16FromF32(x))
	}
	return devcheck.BF16ToF32(devcheck.BF16FromF32(x))
}

func (f *fakeNode) Copy(ctx context.Context, i int, bytes, iters int) (device.CopyOutput, error) {
	d, err := f.dev(ctx, i)
	if err != nil {
		return device.CopyOutput{}, err
	}
	return d.copy, nil
}

func (f *fakeNode) Collective(ctx context.Context, in device.CollectiveInput) (device.CollectiveOutput, error) {
	for _, i := range in.Devices {
		if _, err := f.dev(ctx, i); err != nil {
			return device.CollectiveOutput{}, err
		}
	}
	if f.collErr != nil {
		return device.CollectiveOutput{}, f.collErr
	}
	n := len(in.Devices)
	out := device.CollectiveOutput{Library: "/fake/libhccl.so"}
	out.Seconds = devcheck.SizeBytes(in.Op, in.Count, n) * devcheck.BusFactor(in.Op, n) / (f.busbw * 1e9)
	if in.Inputs != nil {
		for _, b := range devcheck.CollExpected(in.Op, in.Inputs) {
			out.Outputs = append(out.Outputs, append([]float32(nil), b...))
		}
		if f.corrupt {
			out.Outputs[n-1][5]++
		}
	}
	return out, nil
}

func (f *fakeNode) Launch(ctx context.Context, i int, n int) (device.LaunchOutput, error) {
	d, err := f.dev(ctx, i)
	if err != nil {
		return device.LaunchOutput{}, err
	}
	out := device.LaunchOutput{FillOK: !d.fillBad}
	for k := 0; k < n; k++ {
		jitter := float64(k%5) * 0.01
		out.EventUs = append(out.EventUs, d.eventUs+jitter)
		out.WallUs = append(out.WallUs, d.wallUs+jitter)
	}
	return out, nil
}

func (f *fakeNode) Overlap(ctx context.Context, in device.OverlapInput) (device.OverlapOutput, error) {
	for _, i := range in.Devices {
		if _, err := f.dev(ctx, i); err != nil {
			return device.OverlapOutput{}, err
		}
	}
	return f.overlap, f.overlapErr
}

// gemmEnv keeps GEMMs small so the host reference is fast.
func gemmEnv(t *testing.T, extra string) *benchmarks.Env {
	return settings(t, "npu-gemm", "[checks.npu-gemm]\nsizes = [64]\nverify_samples = 64\n"+extra)
}

func TestGEMMCheck(t *testing.T) {
	tests := []struct {
		name   string
		model  string
		tflops float64
		break_ func(f *fakeNode)
		extra  string
		status benchmarks.Status
		reason string
		device string
		msgs   []string
	}{
		{name: "healthy 910B3", model: "Ascend910B3", tflops: 260, break_: func(*fakeNode) {}, status: benchmarks.StatusPass,
			msgs: []string{"8 NPUs: matmul throughput and results as expected"}},
		{name: "slow node below floor", model: "Ascend910B3", tflops: 150, break_: func(*fakeNode) {}, status: benchmarks.StatusFail,
			reason: "NPUGEMMBelowThreshold", device: "npu0", msgs: []string{"npu0 fp16 matmul 64 150 TFLOPS, limit >= 188"}},
		{name: "one slow device below peers", model: "Ascend910B3", tflops: 260, break_: func(f *fakeNode) { f.npus[6].tflops = 200 },
			status: benchmarks.StatusFail, reason: "NPUGEMMBelowPeers", device: "npu6", msgs: []string{"npu6 fp16 matmul 64 200 TFLOPS is 77% of the node median 260"}},
		{name: "wrong answers", model: "Ascend910B3", tflops: 260, break_: func(f *fakeNode) { f.npus[2].wrong = true },
			status: benchmarks.StatusFail, reason: ReasonGEMMWrongResult, device: "npu2", msgs: []string{"npu2 fp16 64:"}},
		{name: "aicore exception", model: "Ascend910B3", tflops: 260, break_: func(f *fakeNode) {
			f.npus[1].err = &acl.Error{Op: "aclrtSynchronizeStream", Code: acl.ErrRTAICoreException}
		}, status: benchmarks.StatusFail, reason: device.ReasonDeviceFault, device: "npu1", msgs: []string{"ACL_ERROR_RT_AICORE_EXCEPTION"}},
		{name: "out of memory is not a fault", model: "Ascend910B3", tflops: 260, break_: func(f *fakeNode) {
			f.npus[1].err = &acl.Error{Op: "aclrtMalloc", Code: acl.ErrRTMemoryAllocation}
		}, status: benchmarks.StatusUnknown, reason: device.ReasonCheckerError, device: "npu1"},
		{name: "operator library missing", model: "Ascend910B3", tflops: 260, break_: func(f *fakeNode) {
			for _, d := range f.npus {
				d.err = fmt.Errorf("libopapi.so not found (searched: x): %w", dl.ErrNotFound)
			}
		}, status: benchmarks.StatusUnknown, reason: device.ReasonLibraryMissing, msgs: []string{"libopapi.so not found"}},
		{name: "unknown model: peers only", model: "Ascend910C", tflops: 100, break_: func(*fakeNode) {}, status: benchmarks.StatusPass},
		{name: "threshold from config", model: "Ascend910B3", tflops: 260, break_: func(*fakeNode) {},
			extra: "[checks.npu-gemm.thresholds.Ascend910B3]\ntflops_fp16 = 300\n", status: benchmarks.StatusFail, reason: "NPUGEMMBelowThreshold", device: "npu0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeNode(8, tt.model, tt.tflops)
			tt.break_(f)
			c := withOpener(t, "npu-gemm", f.opener(nil))
			r := run1(t, c, gemmEnv(t, tt.extra))
			expect(t, r, tt.status, tt.reason, tt.device, tt.msgs...)
			if !f.closed {
				t.Error("node not closed")
			}
		})
	}
}

func TestGEMMValues(t *testing.T) {
	f := newFakeNode(2, "Ascend910B1", 300)
	r := run1(t, withOpener(t, "npu-gemm", f.opener(nil)), gemmEnv(t, ""))
	var names []string
	for _, v := range r.Values {
		names = append(names, v.Device+":"+v.Name)
		if v.Threshold == nil || *v.Threshold != 248 || v.Op != ">=" || math.Abs(v.Value-300) > 1e-6 {
			t.Errorf("value %+v", v)
		}
	}
	if strings.Join(names, ",") != "npu0:tflops_fp16_64,npu1:tflops_fp16_64,npu0:tflops_bf16_64,npu1:tflops_bf16_64" {
		t.Errorf("values %v", names)
	}
}

func TestGEMMHung(t *testing.T) {
	f := newFakeNode(2, "Ascend910B3", 260)
	f.npus[1].hang = true
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r := withOpener(t, "npu-gemm", f.opener(nil)).Run(ctx, gemmEnv(t, ""))
	if r.Status != benchmarks.StatusFail || r.Reason != device.ReasonDeviceHung || r.Device != "npu1" {
		t.Errorf("got %s/%s/%s: %s", r.Status, r.Reason, r.Device, r.Message)
	}
}

func TestCopyCheck(t *testing.T) {
	f := newFakeNode(4, "Ascend910B3", 260)
	expect(t, run1(t, withOpener(t, "npu-copy", f.opener(nil)), nil), benchmarks.StatusPass, "", "", "4 NPUs: copy bandwidth as expected")

	f = newFakeNode(4, "Ascend910B3", 260)
	f.npus[2].copy.H2D = 9
	expect(t, run1(t, withOpener(t, "npu-copy", f.opener(nil)), nil), benchmarks.StatusFail, "NPUCopyBandwidthBelowThreshold", "npu2", "npu2 host-to-device 9 GB/s, limit >= 15")

	f = newFakeNode(4, "Ascend910B4", 260)
	f.npus[0].copy.D2D = 300 // above the 910B4 floor of 280, below the 910B family's 560
	expect(t, run1(t, withOpener(t, "npu-copy", f.opener(nil)), settings(t, "npu-copy", "[checks.npu-copy]\npeer_fraction = 0.0\n")), benchmarks.StatusPass, "", "")

	f = newFakeNode(4, "Ascend910B3", 260)
	f.npus[3].copy.Verified = false
	expect(t, run1(t, withOpener(t, "npu-copy", f.opener(nil)), nil), benchmarks.StatusFail, ReasonCopyWrongResult, "npu3")
}

func TestCollectiveChecks(t *testing.T) {
	small := func(t *testing.T, name string) *benchmarks.Env {
		return settings(t, name, fmt.Sprintf("[checks.%s]\nbytes = 65536\nverify_bytes = 4096\n", name))
	}
	floors := map[device.CollOp]string{device.AllReduce: "100", device.AllGather: "100", device.AllToAll: "80"}
	slow := map[device.CollOp]string{device.AllReduce: "NPUAllReduceBelowThreshold", device.AllGather: "NPUAllGatherBelowThreshold",
		device.AllToAll: "NPUAllToAllBelowThreshold"}
	for _, op := range []device.CollOp{device.AllReduce, device.AllGather, device.AllToAll} {
		name := "npu-" + string(op)
		t.Run(name, func(t *testing.T) {
			f := newFakeNode(8, "Ascend910B3", 260)
			c := withOpener(t, name, f.opener(nil))
			r := run1(t, c, small(t, name))
			expect(t, r, benchmarks.StatusPass, "", "", "over 8 NPUs: 150 GB/s bus bandwidth, results verified")

			f = newFakeNode(8, "Ascend910B3", 260)
			f.busbw = 60
			c = withOpener(t, name, f.opener(nil))
			expect(t, run1(t, c, small(t, name)), benchmarks.StatusFail, slow[op], "", "bus bandwidth over 8 NPUs 60 GB/s, limit >= "+floors[op])

			f = newFakeNode(8, "Ascend910B3", 260)
			f.corrupt = true
			c = withOpener(t, name, f.opener(nil))
			expect(t, run1(t, c, small(t, name)), benchmarks.StatusFail, ReasonCollectiveWrongResult, "", "npu7: 1 of")

			f = newFakeNode(8, "Ascend910B3", 260)
			f.collErr = &hccl.Error{Op: "HcclAllReduce", Code: hccl.ERoCETransfer, Name: "HCCL_E_ROCE_TRANSFER"}
			c = withOpener(t, name, f.opener(nil))
			expect(t, run1(t, c, small(t, name)), benchmarks.StatusFail, ReasonCollectiveLink, "")

			f = newFakeNode(1, "Ascend910B3", 260)
			c = withOpener(t, name, f.opener(nil))
			expect(t, run1(t, c, small(t, name)), benchmarks.StatusUnknown, device.ReasonSingleDevice, "")
		})
	}
}

func TestBusBandwidth(t *testing.T) {
	// nccl-tests: 8 ranks, all-reduce busbw = algbw × 2·7/8, all-gather × 7/8.
	if got := devcheck.BusFactor(devcheck.AllReduce, 8); got != 1.75 {
		t.Errorf("all-reduce factor %v", got)
	}
	if got := devcheck.BusFactor(devcheck.AllGather, 8); got != 0.875 {
		t.Errorf("all-gather factor %v", got)
	}
	if devcheck.BusFactor(devcheck.AllReduce, 1) != 0 {
		t.Error("one rank has no bus")
	}
	if devcheck.SizeBytes(devcheck.AllGather, 1024, 8) != 32768 || devcheck.SizeBytes(devcheck.AllReduce, 1024, 8) != 4096 {
		t.Error("sizeBytes")
	}
}

func TestComputeChecksWithoutCANN(t *testing.T) {
	// The real opener on a machine without CANN: unknown, naming the search.
	for _, name := range []string{"npu-gemm", "npu-copy", "npu-allreduce", "npu-allgather", "npu-alltoall", "npu-kernel-launch", "npu-overlap"} {
		t.Run(name, func(t *testing.T) {
			c := withOpener(t, name, freshOpener())
			env := settings(t, name, "[vendor.ascend]\nacl_libraries = [\"libascendcl.so.vigil-test-absent\"]\n")
			r := run1(t, c, env)
			expect(t, r, benchmarks.StatusUnknown, device.ReasonLibraryMissing, "", "libascendcl.so.vigil-test-absent not found (searched:", "/usr/local/Ascend/ascend-toolkit/latest/lib64")
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err    error
		status benchmarks.Status
		reason string
	}{
		{fmt.Errorf("x: %w", dl.ErrSymbol), benchmarks.StatusUnknown, device.ReasonLibraryMissing},
		{fmt.Errorf("%w: none", errNoDevices), benchmarks.StatusUnknown, device.ReasonNoDevices},
		{&acl.Error{Op: "aclrtSetDevice", Code: acl.ErrRTInvalidDeviceID}, benchmarks.StatusUnknown, device.ReasonNoDevices},
		{fmt.Errorf("%w: deadline", devcheck.ErrHung), benchmarks.StatusFail, device.ReasonDeviceHung},
		{&acl.Error{Op: "aclrtSynchronizeStream", Code: acl.ErrRTAICPUException}, benchmarks.StatusFail, device.ReasonDeviceFault},
		{&hccl.Error{Op: "HcclAllReduce", Code: hccl.ERemote}, benchmarks.StatusFail, ReasonCollectiveLink},
		{&hccl.Error{Op: "HcclAllReduce", Code: hccl.EPara}, benchmarks.StatusUnknown, device.ReasonCheckerError},
		{errors.New("odd"), benchmarks.StatusUnknown, device.ReasonCheckerError},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			st, reason := classify(tt.err)
			r := benchmarks.Result{Status: st, Reason: reason}
			if r.Status != tt.status || r.Reason != tt.reason {
				t.Errorf("got %s/%s, want %s/%s", r.Status, r.Reason, tt.status, tt.reason)
			}
		})
	}
}

func TestDefaultsAreValid(t *testing.T) {
	g := withOpener(t, "npu-gemm", OpenACL).Spec().Settings().(*device.GEMMSettings)
	if err := g.Validate(); err != nil {
		t.Error(err)
	}
	for _, m := range []string{"Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4"} {
		for _, k := range []string{"tflops_fp16", "tflops_bf16"} {
			if v, key, ok := g.Thresholds.Lookup(m, k); !ok || key != m || v <= 0 {
				t.Errorf("%s %s: %v %q %v", m, k, v, key, ok)
			}
		}
		if _, _, ok := withOpener(t, "npu-copy", OpenACL).Spec().Settings().(*device.CopySettings).Thresholds.Lookup(m, "d2d_gbps"); !ok {
			t.Errorf("%s has no copy floor", m)
		}
		if _, _, ok := allReduceThresholds.Lookup(m, "busbw_gbps"); !ok {
			t.Errorf("%s has no all-reduce floor", m)
		}
	}
	if v, key, _ := withOpener(t, "npu-copy", OpenACL).Spec().Settings().(*device.CopySettings).Thresholds.Lookup("Ascend910B4", "d2d_gbps"); v != 280 || key != "Ascend910B4" {
		t.Errorf("910B4 d2d floor %v from %q, want its own", v, key)
	}
	bad := withOpener(t, "npu-gemm", OpenACL).Spec().Settings().(*device.GEMMSettings)
	bad.DTypes = []string{"fp8"}
	if bad.Validate() == nil {
		t.Error("fp8 accepted on Ascend")
	}
}

func TestExpandPath(t *testing.T) {
	t.Setenv("ASCEND_HOME_PATH", "")
	if _, ok := expandPath("$ASCEND_HOME_PATH/lib64"); ok {
		t.Error("unset variable kept")
	}
	t.Setenv("ASCEND_HOME_PATH", "/opt/cann")
	if p, ok := expandPath("$ASCEND_HOME_PATH/lib64"); !ok || p != "/opt/cann/lib64" {
		t.Errorf("got %q %v", p, ok)
	}
}

func TestLaunchCheck(t *testing.T) {
	env := func(t *testing.T) *benchmarks.Env {
		return settings(t, "npu-kernel-launch", "[checks.npu-kernel-launch]\nlaunches = 50\n")
	}
	tests := []struct {
		name   string
		break_ func(f *fakeNode)
		status benchmarks.Status
		reason string
		device string
		msgs   []string
	}{
		{"healthy", func(*fakeNode) {}, benchmarks.StatusPass, "", "", []string{"8 NPUs: launch latency as expected; ACL /fake/libascendcl.so"}},
		{"slow wall", func(f *fakeNode) { f.npus[1].wallUs = 250 }, benchmarks.StatusFail, "NPULaunchLatencyAboveThreshold", "npu1",
			[]string{"npu1 launch latency (wall) 250 us, limit <= 200"}},
		{"slow event", func(f *fakeNode) { f.npus[2].eventUs = 120 }, benchmarks.StatusFail, "NPULaunchLatencyAboveThreshold", "npu2", nil},
		{"above peers", func(f *fakeNode) { f.npus[3].wallUs = 150 }, benchmarks.StatusFail, "NPULaunchLatencyAbovePeers", "npu3", nil},
		{"zero kernel wrong", func(f *fakeNode) { f.npus[0].fillBad = true }, benchmarks.StatusFail, ReasonKernelWrongResult, "npu0", nil},
		{"aicore exception", func(f *fakeNode) {
			f.npus[4].err = &acl.Error{Op: "aclrtSynchronizeStream", Code: acl.ErrRTAICoreException}
		}, benchmarks.StatusFail, device.ReasonDeviceFault, "npu4", []string{"ACL_ERROR_RT_AICORE_EXCEPTION"}},
		{"out of memory is not a fault", func(f *fakeNode) {
			f.npus[5].err = &acl.Error{Op: "aclrtMalloc", Code: acl.ErrRTMemoryAllocation}
		}, benchmarks.StatusUnknown, device.ReasonCheckerError, "npu5", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeNode(8, "Ascend910B3", 260)
			tt.break_(f)
			expect(t, run1(t, withOpener(t, "npu-kernel-launch", f.opener(nil)), env(t)), tt.status, tt.reason, tt.device, tt.msgs...)
		})
	}
	f := newFakeNode(1, "Ascend910B4", 260)
	r := run1(t, withOpener(t, "npu-kernel-launch", f.opener(nil)), env(t))
	for _, want := range []struct {
		name  string
		value float64
		limit float64
	}{{"event_us", 30.02, 100}, {"wall_us", 60.02, 200}} {
		var found bool
		for _, v := range r.Values {
			if v.Device == "npu0" && v.Name == want.name {
				found = true
				if math.Abs(v.Value-want.value) > 1e-9 || v.Threshold == nil || *v.Threshold != want.limit || v.Op != "<=" {
					t.Errorf("%s = %+v, want median %v, limit <= %v", want.name, v, want.value, want.limit)
				}
			}
		}
		if !found {
			t.Errorf("no %s in %+v", want.name, r.Values)
		}
	}
}

func TestLaunchHung(t *testing.T) {
	f := newFakeNode(2, "Ascend910B3", 260)
	f.npus[1].hang = true
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r := withOpener(t, "npu-kernel-launch", f.opener(nil)).Run(ctx, nil)
	if r.Status != benchmarks.StatusFail || r.Reason != device.ReasonDeviceHung || r.Device != "npu1" {
		t.Errorf("got %s/%s/%s: %s", r.Status, r.Reason, r.Device, r.Message)
	}
}

func TestOverlapCheck(t *testing.T) {
	f := newFakeNode(8, "Ascend910B3", 260)
	r := run1(t, withOpener(t, "npu-overlap", f.opener(nil)), nil)
	expect(t, r, benchmarks.StatusPass, "", "", "8 NPUs: GEMM and all-reduce overlap with efficiency 1.6")
	if len(r.Values) != 4 || r.Values[0].Name != "overlap_efficiency" || r.Values[0].Value != 1.6 || *r.Values[0].Threshold != 0.9 {
		t.Errorf("values %+v", r.Values)
	}

	f.overlap = device.OverlapOutput{GEMMAlone: 1, AllReduceAlone: 1, Together: 2.5}
	expect(t, run1(t, withOpener(t, "npu-overlap", f.opener(nil)), nil), benchmarks.StatusFail, "NPUOverlapBelowThreshold", "",
		"GEMM+all-reduce together took 2.5e+03 ms, alone 1e+03 + 1e+03 ms: efficiency 0.8 < 0.9")

	f = newFakeNode(8, "Ascend910B3", 260)
	f.overlapErr = &hccl.Error{Op: "HcclAllReduce", Code: hccl.ERoCETransfer, Name: "HCCL_E_ROCE_TRANSFER"}
	expect(t, run1(t, withOpener(t, "npu-overlap", f.opener(nil)), nil), benchmarks.StatusFail, ReasonCollectiveLink, "")

	f = newFakeNode(8, "Ascend910B3", 260)
	f.overlap = device.OverlapOutput{}
	expect(t, run1(t, withOpener(t, "npu-overlap", f.opener(nil)), nil), benchmarks.StatusUnknown, device.ReasonCheckerError, "", "overlap reported times")

	f = newFakeNode(1, "Ascend910B3", 260)
	expect(t, run1(t, withOpener(t, "npu-overlap", f.opener(nil)), nil), benchmarks.StatusUnknown, device.ReasonSingleDevice, "", "1 NPU: overlap needs")

	bad := settings(t, "npu-overlap", "[checks.npu-overlap]\ndtype = \"tf32\"\n")
	expect(t, run1(t, withOpener(t, "npu-overlap", f.opener(nil)), bad), benchmarks.StatusUnknown, devcheck.ReasonInvalidSettings, "", `dtype = "tf32": want fp16 or bf16`)
}
