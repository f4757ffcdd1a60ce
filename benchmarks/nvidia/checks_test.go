package nvidia

import (
	"context"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// Small GEMMs keep the fake's host matmul fast.
const smallGEMM = `
[checks.gemm]
sizes = [64]
dtypes = ["bf16", "fp8"]
verify_samples = 64
[checks.gemm.thresholds."H100"]
tflops_bf16 = 500
tflops_fp8 = 500
`

func TestGEMMCheck(t *testing.T) {
	const h100 = "NVIDIA H100 80GB HBM3"
	tests := []struct {
		name   string
		setup  func(f *fakeNode)
		env    string
		status benchmarks.Status
		reason string
		device string
		msg    string
	}{
		{"healthy", func(f *fakeNode) {}, smallGEMM, benchmarks.StatusPass, "", "", "4 devices"},
		{"slow device below floor", func(f *fakeNode) { f.tflops[2] = 400 }, smallGEMM, benchmarks.StatusFail, "GEMMBelowThreshold", "gpu2", "gpu2 bf16 GEMM 64 400 TFLOPS, limit >= 500"},
		{"slow device below peers", func(f *fakeNode) { f.tflops[1] = 560 }, smallGEMM, benchmarks.StatusFail, "GEMMBelowPeers", "gpu1", "of the node median"},
		{"wrong but fast", func(f *fakeNode) {
			f.tflops[3] = 2000
			f.corrupt[3] = func(d []float32) { d[17] += 25 }
		}, smallGEMM, benchmarks.StatusFail, ReasonGEMMWrongResult, "gpu3", "gpu3 bf16 64"},
		{"all zeros", func(f *fakeNode) {
			f.corrupt[0] = func(d []float32) {
				for i := range d {
					d[i] = 0
				}
			}
		}, smallGEMM, benchmarks.StatusFail, ReasonGEMMWrongResult, "gpu0", "sampled elements"},
		{"fp8 skipped before 8.9", func(f *fakeNode) {
			for i := range f.devs {
				f.devs[i].Major, f.devs[i].Minor = 8, 0
			}
		}, smallGEMM, benchmarks.StatusPass, "", "", "fp8 skipped on gpu0, gpu1, gpu2, gpu3 (compute capability 8.0 < 8.9)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(4, h100)
			tt.setup(f)
			c := withOpener(t, "gemm", f.opener())
			r := c.Run(context.Background(), envWith(t, "gemm", tt.env))
			if r.Status != tt.status || r.Reason != tt.reason || r.Device != tt.device {
				t.Fatalf("result %s %s %s (%s), want %s %s %s", r.Status, r.Reason, r.Device, r.Message, tt.status, tt.reason, tt.device)
			}
			if !strings.Contains(r.Message, tt.msg) {
				t.Errorf("message %q lacks %q", r.Message, tt.msg)
			}
			if !f.closed {
				t.Error("node not closed")
			}
		})
	}
}

func TestGEMMCheckValues(t *testing.T) {
	f := newFake(2, "NVIDIA H100 80GB HBM3")
	f.tflops[1] = 650
	r := withOpener(t, "gemm", f.opener()).Run(context.Background(), envWith(t, "gemm", smallGEMM))
	if r.Status != benchmarks.StatusPass {
		t.Fatalf("%+v", r)
	}
	v := valueOf(t, r, "gpu1", "tflops_bf16_64")
	if v.Value != 650 || v.Unit != "TFLOPS" || v.Threshold == nil || *v.Threshold != 500 || v.Op != ">=" {
		t.Errorf("value %+v", v)
	}
	valueOf(t, r, "gpu0", "tflops_fp8_64")
}

func TestGEMMCheckJobDevices(t *testing.T) {
	f := newFake(4, "NVIDIA H100 80GB HBM3")
	f.tflops[0] = 100 // not the job's: must not be measured
	env := envWith(t, "gemm", smallGEMM)
	env.Devices = []int{2, 3}
	r := withOpener(t, "gemm", f.opener()).Run(context.Background(), env)
	if r.Status != benchmarks.StatusPass {
		t.Fatalf("%+v", r)
	}
	for _, v := range r.Values {
		if v.Device != "gpu2" && v.Device != "gpu3" {
			t.Errorf("value for %s, which the job does not have", v.Device)
		}
	}
}

func TestGEMMCheckHungDevice(t *testing.T) {
	f := newFake(2, "NVIDIA H100 80GB HBM3")
	f.hang[1] = true
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	r := withOpener(t, "gemm", f.opener()).Run(ctx, envWith(t, "gemm", smallGEMM))
	if time.Since(t0) > 10*time.Second {
		t.Errorf("the check ignored its deadline (%v)", time.Since(t0))
	}
	if r.Status != benchmarks.StatusFail || r.Reason != device.ReasonDeviceHung || r.Device != "gpu1" {
		t.Errorf("result %+v, want fail %s gpu1", r, device.ReasonDeviceHung)
	}
}

func TestLaunchCheck(t *testing.T) {
	const a100 = "NVIDIA A100-SXM4-80GB"
	env := "[checks.kernel-launch]\nlaunches = 50\n"
	tests := []struct {
		name   string
		setup  func(f *fakeNode)
		status benchmarks.Status
		reason string
		device string
	}{
		{"healthy", func(f *fakeNode) {}, benchmarks.StatusPass, "", ""},
		{"slow wall", func(f *fakeNode) { f.wallUs[1] = 12 }, benchmarks.StatusFail, "LaunchLatencyAboveThreshold", "gpu1"},
		{"slow event", func(f *fakeNode) { f.eventUs[2] = 7 }, benchmarks.StatusFail, "LaunchLatencyAboveThreshold", "gpu2"},
		{"above peers", func(f *fakeNode) {
			for i := range f.devs {
				f.eventUs[i], f.wallUs[i] = 1, 2
			}
			f.wallUs[3] = 5
		}, benchmarks.StatusFail, "LaunchLatencyAbovePeers", "gpu3"},
		{"fill kernel wrong", func(f *fakeNode) { f.fillBad[0] = true }, benchmarks.StatusFail, ReasonKernelWrongResult, "gpu0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(4, a100)
			tt.setup(f)
			r := withOpener(t, "kernel-launch", f.opener()).Run(context.Background(), envWith(t, "kernel-launch", env))
			if r.Status != tt.status || r.Reason != tt.reason || r.Device != tt.device {
				t.Fatalf("result %+v, want %s %s %s", r, tt.status, tt.reason, tt.device)
			}
		})
	}
	f := newFake(1, a100)
	r := withOpener(t, "kernel-launch", f.opener()).Run(context.Background(), envWith(t, "kernel-launch", env))
	v := valueOf(t, r, "gpu0", "event_us")
	if v.Threshold == nil || *v.Threshold != 5.5 || v.Op != "<=" || v.Value != 4.02 {
		t.Errorf("event_us value %+v (median of 4.00..4.04 is 4.02, limit 5.5)", v)
	}
	if w := valueOf(t, r, "gpu0", "wall_us"); *w.Threshold != 9.4 {
		t.Errorf("wall_us limit %v", *w.Threshold)
	}
}

func TestCopyCheck(t *testing.T) {
	f := newFake(4, "NVIDIA H100 80GB HBM3")
	f.h2d[2] = 20
	r := withOpener(t, "copy", f.opener()).Run(context.Background(), envWith(t, "copy", "[checks.copy]\nbytes = 1048576\n"))
	if r.Status != benchmarks.StatusFail || r.Reason != "CopyBandwidthBelowThreshold" || r.Device != "gpu2" {
		t.Fatalf("%+v", r)
	}
	f = newFake(4, "NVIDIA H100 80GB HBM3")
	f.hang[0] = true
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r = withOpener(t, "copy", f.opener()).Run(ctx, nil)
	if r.Status != benchmarks.StatusFail || r.Reason != device.ReasonDeviceHung {
		t.Fatalf("hung copy: %+v", r)
	}
}

func TestCollectiveChecks(t *testing.T) {
	const h100 = "NVIDIA H100 80GB HBM3"
	tests := []struct {
		name, check string
		devices     int
		setup       func(f *fakeNode)
		status      benchmarks.Status
		reason      string
		busbw       float64
	}{
		// 256 MiB per rank in 1 ms over 8 ranks: algbw 268.44 GB/s, busbw × 1.75.
		{"allreduce healthy", "allreduce", 8, func(f *fakeNode) {}, benchmarks.StatusPass, "", 469.762},
		{"allreduce slow", "allreduce", 8, func(f *fakeNode) { f.collSeconds = 2e-3 }, benchmarks.StatusFail, "AllReduceBelowThreshold", 234.881},
		{"allreduce wrong data", "allreduce", 8, func(f *fakeNode) { f.collCorrupt = true }, benchmarks.StatusFail, ReasonCollectiveWrongResult, -1},
		// all-gather S = 8 × 256 MiB: algbw 2147.48, busbw × 7/8.
		{"allgather", "allgather", 8, func(f *fakeNode) {}, benchmarks.StatusPass, "", 1879.0482},
		{"alltoall", "alltoall", 8, func(f *fakeNode) { f.collSeconds = 0.5e-3 }, benchmarks.StatusPass, "", 469.762},
		// 4 concurrent all-reduces: 4 × 256 MiB per round.
		{"multi-allreduce", "multi-allreduce", 8, func(f *fakeNode) {}, benchmarks.StatusPass, "", 1879.0482},
		{"single device", "allreduce", 1, func(f *fakeNode) {}, benchmarks.StatusUnknown, device.ReasonSingleDevice, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(tt.devices, h100)
			tt.setup(f)
			cc := withOpener(t, tt.check, f.opener())
			r := cc.Run(context.Background(), envWith(t, tt.check, "[checks."+tt.check+"]\nverify_bytes = 4096\n"))
			if r.Status != tt.status || r.Reason != tt.reason {
				t.Fatalf("result %+v, want %s %s", r, tt.status, tt.reason)
			}
			if tt.busbw >= 0 {
				if v := valueOf(t, r, "", "busbw_gbps"); v.Value != tt.busbw {
					t.Errorf("busbw %v, want %v", v.Value, tt.busbw)
				}
			}
		})
	}
	// The verification run comes first, small and read back; then the timed run.
	f := newFake(4, h100)
	cc := withOpener(t, "multi-allreduce", f.opener())
	cc.Run(context.Background(), envWith(t, "multi-allreduce", "[checks.multi-allreduce]\nverify_bytes = 8192\nbytes = 65536\n"))
	want := "allreduce n=4 count=2048 k=1 verify=true|allreduce n=4 count=16384 k=4 verify=false"
	if got := strings.Join(f.calls, "|"); got != want {
		t.Errorf("calls\n%s\nwant\n%s", got, want)
	}
}

func TestCollectiveHung(t *testing.T) {
	f := newFake(4, "NVIDIA H100 80GB HBM3")
	f.collHang = true
	cc := withOpener(t, "allreduce", f.opener())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r := cc.Run(ctx, nil)
	if r.Status != benchmarks.StatusFail || r.Reason != device.ReasonDeviceHung {
		t.Fatalf("%+v", r)
	}
}

func TestOverlapCheck(t *testing.T) {
	f := newFake(4, "NVIDIA H100 80GB HBM3")
	r := withOpener(t, "overlap", f.opener()).Run(context.Background(), nil)
	if r.Status != benchmarks.StatusPass {
		t.Fatalf("%+v", r)
	}
	if v := valueOf(t, r, "", "overlap_efficiency"); v.Value != 1.6667 {
		t.Errorf("efficiency %v, want (1+1)/1.2", v.Value)
	}
	f.overlap = device.OverlapOutput{GEMMAlone: 1, AllReduceAlone: 1, Together: 2.5}
	r = withOpener(t, "overlap", f.opener()).Run(context.Background(), nil)
	if r.Status != benchmarks.StatusFail || r.Reason != "OverlapBelowThreshold" {
		t.Fatalf("%+v", r)
	}
}
