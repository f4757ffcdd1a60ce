package health

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
)

// sysfsFixture builds a sysfs tree from testdata/sysfs/<name> (lines of
// "address vendor class") and returns its root.
func sysfsFixture(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "sysfs", name))
	require.NoError(t, err)
	defer f.Close()
	root := t.TempDir()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		require.Len(t, fields, 3, "bad fixture line %q", line)
		dir := filepath.Join(root, "bus", "pci", "devices", fields[0])
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "vendor"), []byte(fields[1]+"\n"), 0o444))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "class"), []byte(fields[2]+"\n"), 0o444))
	}
	require.NoError(t, sc.Err())
	return root
}

func TestNvidiaPCIGPUs(t *testing.T) {
	cases := []struct {
		fixture string
		want    []string
	}{
		{"dgx-h100.txt", h100BusIDs},
		{"cpu-only.txt", nil},
		{"workstation.txt", []string{"0000:01:00.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.fixture, func(t *testing.T) {
			got, err := device.OnBus(benchmarks.VendorNVIDIA, sysfsFixture(t, tc.fixture))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	t.Run("no PCI bus", func(t *testing.T) {
		got, err := device.OnBus(benchmarks.VendorNVIDIA, t.TempDir())
		require.NoError(t, err)
		assert.Empty(t, got)
	})
	t.Run("this machine", func(t *testing.T) {
		_, err := device.OnBus(benchmarks.VendorNVIDIA, "/sys")
		require.NoError(t, err)
	})
}

func TestGPUCount(t *testing.T) {
	fail, unknown, pass := benchmarks.StatusFail, benchmarks.StatusUnknown, benchmarks.StatusPass
	hideLast := func(n *fakeNVMLNode) { n.visible = 7 }
	noLib := func(n *fakeNVMLNode) { n.initRet = nvml.ERROR_LIBRARY_NOT_FOUND }
	cases := []struct {
		name     string
		fixture  string // sysfs; "" for a root without a PCI bus
		settings string
		gres     int
		devices  []int
		inject   func(n *fakeNVMLNode)
		status   benchmarks.Status
		reason   string
		device   string
		msg      string
	}{
		{name: "healthy", fixture: "dgx-h100.txt", settings: "expected = 8", status: pass, msg: "8 GPUs, 8 expected"},
		{name: "healthy without expectation", fixture: "dgx-h100.txt", status: pass, msg: "8 GPUs"},
		{name: "missing GPU on the bus", fixture: "dgx-h100.txt", inject: hideLast,
			status: fail, reason: "GPUFellOffBus", device: "0000:db:00.0",
			msg: "0000:db:00.0 NVIDIA GPU on the PCI bus but not in NVML (8 on the bus, 7 in NVML)"},
		{name: "missing GPU expected", fixture: "dgx-h100.txt", settings: "expected = 8", inject: hideLast,
			status: fail, reason: "GPUCountMismatch", msg: "fewer GPUs than expected (config: 8, PCI: 8, NVML: 7)"},
		{name: "missing GPU by gres", fixture: "cpu-only.txt", gres: 8, inject: hideLast,
			status: fail, reason: "GPUCountMismatch", msg: "fewer GPUs than expected (Gres: 8, PCI: 0, NVML: 7)"},
		{name: "config wins over gres", fixture: "dgx-h100.txt", settings: "expected = 4", gres: 16, status: pass, msg: "8 GPUs, 4 expected"},
		{name: "more than expected", fixture: "dgx-h100.txt", settings: "expected = 4", status: pass, msg: "more than the 4 expected"},
		{name: "bus ids unreadable", fixture: "dgx-h100.txt", inject: func(n *fakeNVMLNode) {
			hideLast(n)
			n.gpus[0].errs["pci"] = nvml.ERROR_UNKNOWN
		}, status: fail, reason: "GPUFellOffBus", msg: "8 NVIDIA GPUs on the PCI bus, NVML sees 7"},
		{name: "allocated device missing", fixture: "dgx-h100.txt", devices: []int{6, 8},
			status: fail, reason: "AllocatedGPUMissing", device: "gpu8", msg: "gpu8 allocated to the job but NVML sees 8 GPUs"},
		{name: "library missing, none expected", fixture: "cpu-only.txt", inject: noLib,
			status: pass, msg: "no NVIDIA devices found (libnvidia-ml.so.1 not found)"},
		{name: "library missing, no PCI bus", inject: noLib,
			status: pass, msg: "no NVIDIA devices found (libnvidia-ml.so.1 not found)"},
		{name: "library missing, one expected", fixture: "cpu-only.txt", settings: "expected = 1", inject: noLib,
			status: fail, reason: "GPUCountMismatch", msg: "fewer GPUs than expected (config: 1, PCI: 0, NVML: libnvidia-ml.so.1 not found)"},
		{name: "library missing, gres expects", fixture: "dgx-h100.txt", gres: 8, inject: noLib,
			status: fail, reason: "GPUCountMismatch", msg: "fewer GPUs than expected (Gres: 8, PCI: 8, NVML: libnvidia-ml.so.1 not found)"},
		{name: "gres expects, nothing on the bus, no library", fixture: "cpu-only.txt", gres: 2, inject: noLib,
			status: fail, reason: "GPUCountMismatch", msg: "fewer GPUs than expected (Gres: 2, PCI: 0, NVML: libnvidia-ml.so.1 not found)"},
		{name: "gres expects, no PCI bus, no library", gres: 2, inject: noLib,
			status: fail, reason: "GPUCountMismatch", msg: "fewer GPUs than expected (Gres: 2, PCI: 0, NVML: libnvidia-ml.so.1 not found)"},
		{name: "library missing, GPU on the bus", fixture: "workstation.txt", inject: noLib,
			status: unknown, reason: "NVMLLibraryNotFound", msg: "libnvidia-ml.so.1 not found, but 1 NVIDIA GPU on the PCI bus"},
		{name: "driver not loaded, expected", fixture: "dgx-h100.txt", settings: "expected = 2",
			inject: func(n *fakeNVMLNode) { n.initRet = nvml.ERROR_DRIVER_NOT_LOADED },
			status: fail, reason: "GPUCountMismatch", msg: "fewer GPUs than expected (config: 2, PCI: 8, NVML: driver not loaded)"},
		{name: "driver not loaded, none expected, none on the bus", fixture: "cpu-only.txt",
			inject: func(n *fakeNVMLNode) { n.initRet = nvml.ERROR_DRIVER_NOT_LOADED }, status: pass, msg: "no NVIDIA devices found (driver not loaded)"},
		{name: "driver not loaded, none expected, GPUs on the bus", fixture: "dgx-h100.txt",
			inject: func(n *fakeNVMLNode) { n.initRet = nvml.ERROR_DRIVER_NOT_LOADED }, status: unknown, reason: "NVMLDriverNotLoaded",
			msg: "but 8 NVIDIA GPUs on the PCI bus"},
		{name: "init error", fixture: "dgx-h100.txt", settings: "expected = 8",
			inject: func(n *fakeNVMLNode) { n.initRet = nvml.ERROR_NO_PERMISSION }, status: unknown, reason: "NVMLError"},
		{name: "count error", fixture: "dgx-h100.txt", settings: "expected = 8",
			inject: func(n *fakeNVMLNode) { n.countRet = nvml.ERROR_UNKNOWN }, status: unknown, reason: "NVMLError"},
		{name: "no devices, none expected", fixture: "cpu-only.txt", inject: func(n *fakeNVMLNode) { n.visible = 0 },
			status: pass, msg: "no NVIDIA devices found"},
		{name: "no devices, expected", fixture: "cpu-only.txt", settings: "expected = 1", inject: func(n *fakeNVMLNode) { n.visible = 0 },
			status: fail, reason: "GPUCountMismatch", msg: "fewer GPUs than expected (config: 1, PCI: 0, NVML: 0)"},
		{name: "negative expectation", fixture: "cpu-only.txt", settings: "expected = -1", status: unknown, reason: "InvalidSettings"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := newHealthyNode()
			if tc.inject != nil {
				tc.inject(node)
			}
			root := t.TempDir()
			if tc.fixture != "" {
				root = sysfsFixture(t, tc.fixture)
			}
			env := &benchmarks.Env{GresGPUs: tc.gres, Devices: tc.devices,
				Settings: settings(t, "sysfs = '"+root+"'\n"+tc.settings)}
			r := (&gpuCount{nvmlCheck{node.library()}}).Run(context.Background(), env)
			assert.Equal(t, tc.status, r.Status, r.Message)
			assert.Equal(t, tc.reason, r.Reason, r.Message)
			assert.Equal(t, tc.device, r.Device, r.Message)
			assert.Contains(t, r.Message, tc.msg)
		})
	}
}

// TestGPUCountSysfsUnreadable: an unreadable sysfs leaves the count to
// NVML and reports unknown when nothing else is wrong.
func TestGPUCountSysfsUnreadable(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "bus", "pci"), 0o755))
	// A file where the devices directory should be.
	require.NoError(t, os.WriteFile(filepath.Join(root, "bus", "pci", "devices"), nil, 0o644))
	env := &benchmarks.Env{Settings: settings(t, "sysfs = '"+root+"'\nexpected = 8")}
	node := newHealthyNode()
	r := (&gpuCount{nvmlCheck{node.library()}}).Run(context.Background(), env)
	assert.Equal(t, benchmarks.StatusUnknown, r.Status, r.Message)
	assert.Equal(t, "SysfsUnreadable", r.Reason)

	node.visible = 6
	r = (&gpuCount{nvmlCheck{node.library()}}).Run(context.Background(), env)
	assert.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
	assert.Equal(t, "GPUCountMismatch", r.Reason)
	assert.Equal(t, "fewer GPUs than expected (config: 8, PCI: unreadable, NVML: 6)", r.Message)

	// No driver and nothing expected: a node without GPUs, sysfs or not.
	env.Settings = settings(t, "sysfs = '"+root+"'")
	r = (&gpuCount{nvmlCheck{(&fakeNVMLNode{initRet: nvml.ERROR_LIBRARY_NOT_FOUND}).library()}}).Run(context.Background(), env)
	assert.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	assert.Equal(t, "no NVIDIA devices found (libnvidia-ml.so.1 not found)", r.Message)
}
