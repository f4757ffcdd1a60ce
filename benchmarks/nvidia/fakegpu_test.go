package nvidia

import (
	"context"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
)

// fakeGPULibs builds testdata/fakegpu/fakegpu.c, a host-memory emulation of
// the libcuda, cuBLASLt and NCCL calls vigil makes, and returns library
// settings ([vendor.nvidia], to follow a check's own keys) that point the real checks (OpenCUDA, cuda_node.go, the cgo
// packages) at it.
func fakeGPULibs(t *testing.T) string {
	t.Helper()
	dir := dltest.Build(t, "testdata/fakegpu/fakegpu.c", "libfakegpu.so", "-lm", "-lpthread")
	for _, n := range []string{"libcuda.so.1", "libcublasLt.so.12", "libnccl.so.2"} {
		if err := os.Symlink(filepath.Join(dir, "libfakegpu.so"), filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return libSettings(dir)
}

func libSettings(dir string) string {
	return `
[vendor.nvidia]
cuda_libraries = ["` + dir + `/libcuda.so.1"]
cublaslt_libraries = ["` + dir + `/libcublasLt.so.12"]
nccl_libraries = ["` + dir + `/libnccl.so.2"]
python_prefixes = []
`
}

// TestChecksOnFakeGPU runs every compute check through the real CUDA
// backend against the emulated GPU: results must verify and values appear.
func TestChecksOnFakeGPU(t *testing.T) {
	libs := fakeGPULibs(t)
	tests := []struct {
		check, settings string
		values          []string // device/name pairs that must be reported
	}{
		{"gemm", "sizes = [32, 48]\ndtypes = [\"bf16\", \"fp16\", \"tf32\", \"fp8\"]\nmin_time = \"1ms\"\nmax_iters = 2\npeer_fraction = 0.0\n",
			[]string{"gpu0/tflops_bf16_48", "gpu3/tflops_fp8_32", "gpu2/tflops_tf32_48", "gpu1/tflops_fp16_32"}},
		{"kernel-launch", "launches = 20\npeer_fraction = 0.0\n", []string{"gpu0/event_us", "gpu3/wall_us"}},
		{"copy", "bytes = 1048576\niters = 2\npeer_fraction = 0.0\n", []string{"gpu1/h2d_gbps", "gpu2/d2d_gbps"}},
		{"allreduce", "bytes = 65536\nverify_bytes = 8192\niters = 2\nwarmup = 1\n", []string{"/busbw_gbps", "/algbw_gbps"}},
		{"allgather", "bytes = 65536\nverify_bytes = 8192\niters = 2\nwarmup = 1\n", []string{"/busbw_gbps"}},
		{"alltoall", "bytes = 65536\nverify_bytes = 8192\niters = 2\nwarmup = 1\n", []string{"/busbw_gbps"}},
		{"multi-allreduce", "bytes = 65536\nverify_bytes = 8192\niters = 2\nwarmup = 1\nconcurrent = 3\n", []string{"/busbw_gbps"}},
		{"overlap", "size = 32\ngemms = 2\nallreduces = 2\nbytes = 65536\nmin_efficiency = 0.0\n", []string{"/overlap_efficiency"}},
	}
	for _, tt := range tests {
		t.Run(tt.check, func(t *testing.T) {
			c, _ := benchmarks.Lookup(tt.check)
			r := c.Run(context.Background(), envWith(t, tt.check, "[checks."+tt.check+"]\n"+tt.settings+libs))
			if r.Status != benchmarks.StatusPass {
				t.Fatalf("result %s %s: %s", r.Status, r.Reason, r.Message)
			}
			for _, want := range tt.values {
				dev, name, _ := strings.Cut(want, "/")
				valueOf(t, r, dev, name)
			}
		})
	}
}

func TestFakeGPUFaults(t *testing.T) {
	libs := fakeGPULibs(t)
	t.Run("gemm wrong on gpu1", func(t *testing.T) {
		t.Setenv("FAKEGPU_CORRUPT", "1")
		c, _ := benchmarks.Lookup("gemm")
		r := c.Run(context.Background(), envWith(t, "gemm", "[checks.gemm]\nsizes = [32]\ndtypes = [\"bf16\"]\nmin_time = \"1ms\"\n"+libs))
		if r.Status != benchmarks.StatusFail || r.Reason != ReasonGEMMWrongResult || r.Device != "gpu1" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("all-reduce wrong", func(t *testing.T) {
		t.Setenv("FAKEGPU_BAD_COLLECTIVE", "1")
		c, _ := benchmarks.Lookup("allreduce")
		r := c.Run(context.Background(), envWith(t, "allreduce", "[checks.allreduce]\nbytes = 65536\nverify_bytes = 8192\n"+libs))
		if r.Status != benchmarks.StatusFail || r.Reason != ReasonCollectiveWrongResult || !strings.Contains(r.Message, "gpu3") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("fp8 unsupported before 8.9", func(t *testing.T) {
		t.Setenv("FAKEGPU_CC", "80")
		c, _ := benchmarks.Lookup("gemm")
		r := c.Run(context.Background(), envWith(t, "gemm", "[checks.gemm]\nsizes = [32]\ndtypes = [\"fp8\", \"bf16\"]\nmin_time = \"1ms\"\npeer_fraction = 0.0\n"+libs))
		if r.Status != benchmarks.StatusPass || !strings.Contains(r.Message, "fp8 skipped on gpu0, gpu1, gpu2, gpu3 (compute capability 8.0 < 8.9)") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("job devices", func(t *testing.T) {
		c, _ := benchmarks.Lookup("kernel-launch")
		env := envWith(t, "kernel-launch", "[checks.kernel-launch]\nlaunches = 10\n"+libs)
		env.Devices = []int{1, 7}
		r := c.Run(context.Background(), env)
		if r.Status != benchmarks.StatusUnknown || r.Reason != device.ReasonNoDevices || !strings.Contains(r.Message, "device 7 asked for, 4 visible") {
			t.Fatalf("%+v", r)
		}
	})
}
