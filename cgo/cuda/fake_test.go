package cuda

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
)

// TestFakeDriver drives every wrapper through a fake libcuda built from
// testdata/fakecuda.c: values, strings and kernel arguments must cross the
// trampolines intact, and CUresults must become the right errors.
func TestFakeDriver(t *testing.T) {
	dir := dltest.Build(t, "testdata/fakecuda.c", "libcuda.so.1")
	d, err := Open(dl.Options{Names: []string{"libcuda.so.1"}, Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Path() != filepath.Join(dir, "libcuda.so.1") {
		t.Errorf("Path = %q", d.Path())
	}
	if v, err := d.Version(); v != 12040 || err != nil {
		t.Errorf("Version = %d, %v", v, err)
	}
	if n, err := d.DeviceCount(); n != 2 || err != nil {
		t.Errorf("DeviceCount = %d, %v", n, err)
	}
	dev, err := d.Device(1)
	if err != nil {
		t.Fatal(err)
	}
	if name, err := d.Name(dev); name != "Fake GPU 1" || err != nil {
		t.Errorf("Name = %q, %v", name, err)
	}
	if id, err := d.PCIBusID(dev); id != "0000:0b:00.0" || err != nil {
		t.Errorf("PCIBusID = %q, %v", id, err)
	}
	if maj, mnr, err := d.ComputeCapability(dev); maj != 9 || mnr != 0 || err != nil {
		t.Errorf("ComputeCapability = %d.%d, %v", maj, mnr, err)
	}
	if m, err := d.TotalMem(dev); m != 80<<30 || err != nil {
		t.Errorf("TotalMem = %d, %v", m, err)
	}
	if _, err := d.Device(5); err == nil || !strings.Contains(err.Error(), "cuDeviceGet: CUDA_ERROR_INVALID_DEVICE (101)") {
		t.Errorf("Device(5) error = %v", err)
	}
	ctx, err := d.PrimaryCtxRetain(dev)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetCurrent(ctx); err != nil {
		t.Fatal(err)
	}

	// Memory: a round trip through the fake's device memory.
	p, err := d.MemAlloc(64)
	if err != nil || p != 0x7000 {
		t.Fatalf("MemAlloc = %#x, %v", p, err)
	}
	if err := d.CopyHtoD(p, []byte("vigil was here")); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, 14)
	if err := d.CopyDtoH(back, p); err != nil || string(back) != "vigil was here" {
		t.Errorf("CopyDtoH = %q, %v", back, err)
	}
	_, err = d.MemAlloc(1 << 20)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != ErrOutOfMemory || err.Error() != "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory" {
		t.Errorf("MemAlloc(1 MiB) error = %v", err)
	}
	if _, err := d.MemHostAlloc(16); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_NOT_SUPPORTED (801)") {
		t.Errorf("MemHostAlloc error = %v (name from the built-in table when the driver has none)", err)
	}

	// Streams, events, kernels.
	s, err := d.StreamCreate()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := d.EventCreate()
	b, _ := d.EventCreate()
	if ms, err := d.ElapsedMs(a, b); ms != 1.5 || err != nil {
		t.Errorf("ElapsedMs = %v, %v", ms, err)
	}
	if _, err := d.ModuleLoadPTX("not ptx"); err == nil || !strings.Contains(err.Error(), "(218)") {
		t.Errorf("bad PTX error = %v", err)
	}
	m, err := d.ModuleLoadPTX(PTX)
	if err != nil {
		t.Fatal(err)
	}
	fill, err := d.Function(m, KernelFill)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Launch(fill, Dim3{4, 1, 1}, Dim3{256, 1, 1}, 0, s, p, uint32(0x1234), uint32(1024)); err != nil {
		t.Errorf("Launch with arguments: %v", err)
	}
	if err := d.Launch(fill, Dim3{4, 1, 1}, Dim3{256, 1, 1}, 0, s, p, uint32(0x1235), uint32(1024)); err == nil {
		t.Error("the fake saw the wrong argument but Launch succeeded")
	}
	if err := d.Launch(fill, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, s); err != nil {
		t.Errorf("Launch without arguments: %v", err)
	}
	err = d.Launch(fill, Dim3{7, 1, 1}, Dim3{1, 1, 1}, 0, s)
	if !errors.Is(err, ErrDevice) || !strings.Contains(err.Error(), "cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (700)") {
		t.Errorf("faulting launch error = %v", err)
	}
	if err := d.Launch(fill, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, s, "a string"); err == nil {
		t.Error("unsupported argument type accepted")
	}
	for _, f := range []func() error{
		func() error { return d.StreamSynchronize(s) }, func() error { return d.StreamDestroy(s) },
		func() error { return d.EventDestroy(a) }, func() error { return d.ModuleUnload(m) },
		func() error { return d.MemFree(p) }, func() error { return d.PrimaryCtxRelease(dev) },
		func() error { return d.Synchronize() },
	} {
		if err := f(); err != nil {
			t.Error(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Error(err)
	}
}
