package nvidia

import (
	"context"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/config"
)

// fakeNode is a GPU node in host memory: GEMMs are computed exactly and
// rounded to the output type, collectives are done on host slices.
// Per-device knobs make devices slow, wrong or hung.
type fakeNode struct {
	devs []device.Info
	// tflops is each device's GEMM speed (default 700).
	tflops map[int]float64
	// corrupt alters a device's GEMM result.
	corrupt map[int]func(d []float32)
	// hang makes a device's calls block until ctx ends.
	hang map[int]bool
	// eventUs / wallUs are launch latencies (defaults 4 / 8).
	eventUs, wallUs map[int]float64
	fillBad         map[int]bool
	// h2d is a device's host-to-device bandwidth (default 50).
	h2d map[int]float64
	// collSeconds is the time of one collective round (default 1 ms).
	collSeconds float64
	// collCorrupt flips one received element.
	collCorrupt bool
	// collHang blocks collectives until ctx ends.
	collHang bool
	overlap  device.OverlapOutput
	closed   bool
	calls    []string
}

func newFake(n int, name string) *fakeNode {
	f := &fakeNode{tflops: map[int]float64{}, corrupt: map[int]func([]float32){}, hang: map[int]bool{},
		eventUs: map[int]float64{}, wallUs: map[int]float64{}, fillBad: map[int]bool{}, h2d: map[int]float64{},
		collSeconds: 1e-3, overlap: device.OverlapOutput{GEMMAlone: 1, AllReduceAlone: 1, Together: 1.2}}
	for i := 0; i < n; i++ {
		f.devs = append(f.devs, device.Info{Index: i, Name: name, Major: 9, Minor: 0, PCI: fmt.Sprintf("0000:%02x:00.0", i)})
	}
	return f
}

func (f *fakeNode) opener() Opener {
	return func(ctx context.Context, libs Libraries, devices []int) (device.Node, error) {
		if devices == nil {
			return f, nil
		}
		sub := *f
		sub.devs = nil
		for _, d := range devices {
			if d >= len(f.devs) {
				return nil, fmt.Errorf("%w: device %d", errNoDevices, d)
			}
			sub.devs = append(sub.devs, f.devs[d])
		}
		return &sub, nil
	}
}

func (f *fakeNode) Devices() []device.Info { return f.devs }
func (f *fakeNode) Runtime() string        { return "/fake/libcuda.so.1" }
func (f *fakeNode) Close() error           { f.closed = true; return nil }

func (f *fakeNode) block(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// roundTo rounds x to dt's output type.
func roundTo(dt device.DType, x float64) float32 {
	switch dt {
	case device.FP16:
		return devcheck.F16ToF32(devcheck.F16FromF32(float32(x)))
	case device.TF32:
		return float32(x)
	}
	return devcheck.BF16ToF32(devcheck.BF16FromF32(float32(x)))
}

func (f *fakeNode) GEMM(ctx context.Context, dev int, in device.GEMMInput) (device.GEMMOutput, error) {
	if f.hang[dev] {
		return device.GEMMOutput{}, f.block(ctx)
	}
	d := make([]float32, in.M*in.N)
	for j := 0; j < in.N; j++ {
		for i := 0; i < in.M; i++ {
			var s float64
			for l := 0; l < in.K; l++ {
				s += float64(in.A[i*in.K+l]) * float64(in.Bt[j*in.K+l])
			}
			d[i+j*in.M] = roundTo(in.DType, s)
		}
	}
	if c := f.corrupt[dev]; c != nil && in.M == in.N {
		c(d)
	}
	tf := f.tflops[dev]
	if tf == 0 {
		tf = 700
	}
	return device.GEMMOutput{Seconds: 2 * float64(in.M) * float64(in.N) * float64(in.K) / (tf * 1e12), Iters: 10, D: d, Library: "/fake/libcublasLt.so.12"}, nil
}

func (f *fakeNode) Launch(ctx context.Context, dev int, n int) (device.LaunchOutput, error) {
	if f.hang[dev] {
		return device.LaunchOutput{}, f.block(ctx)
	}
	ev, wall := f.eventUs[dev], f.wallUs[dev]
	if ev == 0 {
		ev = 4
	}
	if wall == 0 {
		wall = 8
	}
	out := device.LaunchOutput{FillOK: !f.fillBad[dev]}
	for i := 0; i < n; i++ {
		jitter := float64(i%5) * 0.01
		out.EventUs = append(out.EventUs, ev+jitter)
		out.WallUs = append(out.WallUs, wall+jitter)
	}
	return out, nil
}

func (f *fakeNode) Copy(ctx context.Context, dev int, bytes, iters int) (device.CopyOutput, error) {
	if f.hang[dev] {
		return device.CopyOutput{}, f.block(ctx)
	}
	h := f.h2d[dev]
	if h == 0 {
		h = 50
	}
	return device.CopyOutput{H2D: h, D2H: 50, D2D: 2000, Verified: true}, nil
}

func (f *fakeNode) Collective(ctx context.Context, in device.CollectiveInput) (device.CollectiveOutput, error) {
	f.calls = append(f.calls, fmt.Sprintf("%s n=%d count=%d k=%d verify=%v", in.Op, len(in.Devices), in.Count, in.Concurrent, in.Inputs != nil))
	if f.collHang {
		return device.CollectiveOutput{}, f.block(ctx)
	}
	out := device.CollectiveOutput{Seconds: f.collSeconds, Library: "/fake/libnccl.so.2"}
	if in.Inputs != nil {
		for _, b := range devcheck.CollExpected(in.Op, in.Inputs) {
			out.Outputs = append(out.Outputs, append([]float32(nil), b...))
		}
		if f.collCorrupt {
			out.Outputs[len(out.Outputs)-1][3]++
		}
	}
	return out, nil
}

func (f *fakeNode) Overlap(ctx context.Context, in device.OverlapInput) (device.OverlapOutput, error) {
	return f.overlap, nil
}

// envWith builds an Env whose settings come from TOML text for check name.
func envWith(t *testing.T, name, text string) *benchmarks.Env {
	t.Helper()
	f, err := config.Parse(strings.NewReader(text), "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	return &benchmarks.Env{Node: "node1", Settings: benchmarks.SettingsFrom(f, name), Libraries: benchmarks.LibrariesFrom(f, name)}
}

func valueOf(t *testing.T, r benchmarks.Result, device, name string) benchmarks.Value {
	t.Helper()
	for _, v := range r.Values {
		if v.Device == device && v.Name == name {
			return v
		}
	}
	t.Fatalf("no value %s %s in %+v", device, name, r.Values)
	return benchmarks.Value{}
}

// withOpener returns the compute check name of the registration table
// (computeChecks) over open.
func withOpener(t *testing.T, name string, open Opener) benchmarks.Check {
	t.Helper()
	for _, c := range computeChecks(open) {
		if c.Spec().Name == name {
			return c
		}
	}
	t.Fatalf("%s is not a compute check", name)
	return nil
}
