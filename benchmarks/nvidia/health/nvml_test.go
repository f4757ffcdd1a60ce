package health

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/internal/pci"
)

// settings returns an Env.Settings that decodes a TOML table, rejecting
// keys the check does not know, as the config package does.
func settings(t *testing.T, table string) func(v any) error {
	t.Helper()
	return func(v any) error {
		md, err := toml.Decode(table, v)
		if err != nil {
			return err
		}
		if u := md.Undecoded(); len(u) > 0 {
			t.Fatalf("settings %q: unknown keys %v", table, u)
		}
		return nil
	}
}

// newChecks builds each NVML check over one library.
var newChecks = map[string]func(l *library) benchmarks.Check{
	"gpu-count": func(l *library) benchmarks.Check { return &gpuCount{nvmlCheck{l}} },
	"ecc":       func(l *library) benchmarks.Check { return &ecc{nvmlCheck{l}} },
	"row-remap": func(l *library) benchmarks.Check { return &rowRemap{nvmlCheck{l}} },
	"nvlink":    func(l *library) benchmarks.Check { return &nvlink{nvmlCheck{l}} },
	"pcie":      func(l *library) benchmarks.Check { return &pcie{nvmlCheck{l}} },
	"throttle":  func(l *library) benchmarks.Check { return &throttle{nvmlCheck{l}} },
	"leftover":  func(l *library) benchmarks.Check { return &leftover{nvmlCheck{l}} },
}

func TestRegistered(t *testing.T) {
	for _, name := range []string{"gpu-count", "ecc", "row-remap", "xid", "nvlink", "pcie", "throttle", "leftover"} {
		c, ok := benchmarks.Lookup(name)
		if assert.True(t, ok, name) {
			assert.Equal(t, name, c.Spec().Name)
			assert.True(t, c.Spec().Isolated, name)
		}
	}
	c, _ := benchmarks.Lookup("ecc")
	assert.Equal(t, benchmarks.KindHealth, c.Spec().Kind)
}

func TestHealthyNode(t *testing.T) {
	for name, mk := range newChecks {
		t.Run(name, func(t *testing.T) {
			node := newHealthyNode()
			env := &benchmarks.Env{}
			if name == "gpu-count" {
				env.Settings = settings(t, "sysfs = '"+sysfsFixture(t, "dgx-h100.txt")+"'\nexpected = 8")
			}
			r := mk(node.library()).Run(context.Background(), env)
			assert.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
			assert.Empty(t, r.Reason)
			assert.Equal(t, name, r.Check)
			assert.NotEmpty(t, r.Values)
			for _, v := range r.Values {
				assert.Equal(t, benchmarks.StatusPass, v.Status, "%+v", v)
			}
		})
	}
}

// faultCase injects one fault (or error) into a healthy 8-GPU node and
// says what the check must find.
type faultCase struct {
	name   string
	check  string
	inject func(n *fakeNVMLNode)
	env    benchmarks.Env
	status benchmarks.Status
	reason string
	device string
	msg    string // a substring of the message
}

func TestFaults(t *testing.T) {
	gpu := func(i int, f func(g *fakeGPU)) func(n *fakeNVMLNode) {
		return func(n *fakeNVMLNode) { f(n.gpus[i]) }
	}
	fail, unknown, pass := benchmarks.StatusFail, benchmarks.StatusUnknown, benchmarks.StatusPass
	cases := []faultCase{
		{name: "ecc uncorrectable", check: "ecc", inject: gpu(3, func(g *fakeGPU) { g.eccUncorrected = 2 }),
			status: fail, reason: "ECCUncorrectable", device: "gpu3", msg: "gpu3 uncorrectable ECC errors 2 > 0"},
		{name: "ecc within allowance", check: "ecc", inject: gpu(3, func(g *fakeGPU) { g.eccUncorrected = 2 }),
			env: benchmarks.Env{Settings: func(v any) error { v.(*eccSettings).MaxUncorrected = 2; return nil }}, status: pass},
		{name: "ecc not supported", check: "ecc", inject: gpu(0, func(g *fakeGPU) { g.errs["ecc"] = nvml.ERROR_NOT_SUPPORTED }),
			status: unknown, reason: "NotSupported", device: "gpu0", msg: "gpu0 ECC error count not supported"},
		{name: "ecc call error", check: "ecc", inject: gpu(1, func(g *fakeGPU) { g.errs["ecc"] = nvml.ERROR_UNKNOWN }),
			status: unknown, reason: "NVMLError", device: "gpu1"},
		{name: "ecc fault wins over call error", check: "ecc", inject: func(n *fakeNVMLNode) {
			n.gpus[1].errs["ecc"] = nvml.ERROR_UNKNOWN
			n.gpus[6].eccUncorrected = 1
		}, status: fail, reason: "ECCUncorrectable", device: "gpu6"},
		{name: "ecc gpu lost", check: "ecc", inject: gpu(2, func(g *fakeGPU) { g.errs["ecc"] = nvml.ERROR_GPU_IS_LOST }),
			status: fail, reason: "GPULost", device: "gpu2", msg: "gpu2 lost: fell off the bus"},

		{name: "row remap failure", check: "row-remap", inject: gpu(5, func(g *fakeGPU) { g.remapFailed, g.remapUnc = true, 512 }),
			status: fail, reason: "RowRemapFailed", device: "gpu5", msg: "gpu5 row remapping failed (512 uncorrectable rows remapped)"},
		{name: "row remap pending", check: "row-remap", inject: gpu(2, func(g *fakeGPU) { g.remapPending, g.remapUnc = true, 1 }),
			status: fail, reason: "RowRemapPending", device: "gpu2", msg: "GPU reset needed"},
		{name: "row remap with spare rows", check: "row-remap", inject: gpu(2, func(g *fakeGPU) { g.remapUnc = 3 }), status: pass},
		{name: "retired pages exceeded", check: "row-remap", inject: gpu(4, func(g *fakeGPU) { g.noRemap, g.retiredPages = true, make([]uint64, 31) }),
			status: fail, reason: "RetiredPagesExceeded", device: "gpu4", msg: "gpu4 retired pages 62 > 60"},
		{name: "retired pages pending", check: "row-remap", inject: gpu(4, func(g *fakeGPU) { g.noRemap, g.retiredPending = true, true }),
			status: fail, reason: "RetiredPagesPending", device: "gpu4"},
		{name: "retired pages few", check: "row-remap", inject: gpu(4, func(g *fakeGPU) { g.noRemap, g.retiredPages = true, make([]uint64, 3) }), status: pass},
		{name: "retired pages unsupported", check: "row-remap", inject: gpu(4, func(g *fakeGPU) { g.noRemap, g.errs["retired"] = true, nvml.ERROR_NOT_SUPPORTED }),
			status: unknown, reason: "NotSupported", device: "gpu4"},
		{name: "row remap call error", check: "row-remap", inject: gpu(0, func(g *fakeGPU) { g.errs["remap"] = nvml.ERROR_TIMEOUT }),
			status: unknown, reason: "NVMLError", device: "gpu0"},

		{name: "nvlink down", check: "nvlink", inject: gpu(4, func(g *fakeGPU) { g.links[7] = nvml.FEATURE_DISABLED }),
			status: fail, reason: "NVLinkDown", device: "gpu4", msg: "gpu4 NVLink 17 of 18 links active, down: 7"},
		{name: "nvlink link vanished", check: "nvlink", inject: gpu(1, func(g *fakeGPU) { g.links = g.links[:16] }),
			status: fail, reason: "NVLinkDown", device: "gpu1", msg: "gpu1 NVLink 16 of 18 links active"},
		{name: "nvlink unknown model partly down", check: "nvlink", inject: gpu(0, func(g *fakeGPU) {
			g.name = "NVIDIA Future GPU"
			g.links[3] = nvml.FEATURE_DISABLED
		}), status: fail, reason: "NVLinkDown", device: "gpu0", msg: "gpu0 NVLink 17 links active, down: 3"},
		{name: "nvlink pcie card without links", check: "nvlink", inject: func(n *fakeNVMLNode) {
			for _, g := range n.gpus {
				g.name, g.links = "NVIDIA L40S", nil
			}
		}, status: pass},
		{name: "nvlink expected links from settings", check: "nvlink", inject: gpu(0, func(g *fakeGPU) { g.links = g.links[:12] }),
			env: benchmarks.Env{Settings: func(v any) error {
				v.(*nvlinkSettings).ExpectedLinks["NVIDIA H100 80GB HBM3"] = 12
				return nil
			}}, status: pass},
		{name: "nvlink single GPU without peers", check: "nvlink", inject: func(n *fakeNVMLNode) {
			n.gpus, n.visible = n.gpus[:1], 1
			n.gpus[0].name = "NVIDIA H200"
			for l := range n.gpus[0].links {
				n.gpus[0].links[l] = nvml.FEATURE_DISABLED
			}
		}, status: pass, msg: "gpu0 is the node's only GPU: NVLink has no peer to link to (0 active)"},
		{name: "nvlink all links of one GPU down among peers", check: "nvlink", inject: gpu(3, func(g *fakeGPU) {
			for l := range g.links {
				g.links[l] = nvml.FEATURE_DISABLED
			}
		}), status: fail, reason: "NVLinkDown", device: "gpu3", msg: "gpu3 NVLink 0 of 18 links active"},
		{name: "nvlink call error", check: "nvlink", inject: gpu(7, func(g *fakeGPU) { g.errs["nvlink"] = nvml.ERROR_UNKNOWN }),
			status: unknown, reason: "NVMLError", device: "gpu7"},

		{name: "pcie width degraded", check: "pcie", inject: gpu(6, func(g *fakeGPU) { g.curWidth = 8 }),
			status: fail, reason: "PCIeWidthDegraded", device: "gpu6", msg: "gpu6 PCIe link width x8 < max x16"},
		{name: "pcie gen degraded while busy", check: "pcie", inject: gpu(2, func(g *fakeGPU) { g.curGen, g.eventReasons = 3, 0 }),
			status: fail, reason: "PCIeGenDegraded", device: "gpu2", msg: "gpu2 PCIe link generation 3 < max 5"},
		{name: "pcie gen lowered while idle", check: "pcie", inject: gpu(2, func(g *fakeGPU) { g.curGen = 1 }),
			status: pass, msg: "gpu2 PCIe generation 1 < max 5 while idle"},
		{name: "pcie idle downshift not accepted", check: "pcie", inject: gpu(2, func(g *fakeGPU) { g.curGen = 1 }),
			env:    benchmarks.Env{Settings: func(v any) error { v.(*pcieSettings).IdleGenDownshift = false; return nil }},
			status: fail, reason: "PCIeGenDegraded", device: "gpu2"},
		{name: "pcie max below model", check: "pcie", inject: gpu(5, func(g *fakeGPU) { g.curGen, g.maxGen = 4, 4 }),
			status: fail, reason: "PCIeGenDegraded", device: "gpu5", msg: "gpu5 PCIe max link generation 4 < 5 expected for NVIDIA H100 80GB HBM3"},
		{name: "pcie max width below model", check: "pcie", inject: gpu(5, func(g *fakeGPU) { g.curWidth, g.maxW = 8, 8 }),
			status: fail, reason: "PCIeWidthDegraded", device: "gpu5", msg: "gpu5 PCIe max link width x8 < x16"},
		{name: "pcie call error", check: "pcie", inject: gpu(3, func(g *fakeGPU) { g.errs["pcie"] = nvml.ERROR_UNKNOWN }),
			status: unknown, reason: "NVMLError", device: "gpu3"},

		{name: "thermal slowdown", check: "throttle", inject: gpu(2, func(g *fakeGPU) { g.eventReasons = nvml.ClocksThrottleReasonHwThermalSlowdown }),
			status: fail, reason: "HWThermalSlowdown", device: "gpu2", msg: "gpu2 clocks slowed down: hw_thermal_slowdown"},
		{name: "hw slowdown and power brake", check: "throttle", inject: gpu(1, func(g *fakeGPU) {
			g.eventReasons = nvml.ClocksThrottleReasonHwSlowdown | nvml.ClocksThrottleReasonHwPowerBrakeSlowdown
		}), status: fail, reason: "HWSlowdown", device: "gpu1", msg: "hw_slowdown, hw_power_brake_slowdown"},
		{name: "software power cap is normal", check: "throttle", inject: gpu(1, func(g *fakeGPU) { g.eventReasons = nvml.ClocksEventReasonSwPowerCap }), status: pass},
		{name: "thermal slowdown not watched", check: "throttle", inject: gpu(2, func(g *fakeGPU) { g.eventReasons = nvml.ClocksThrottleReasonHwThermalSlowdown }),
			env: benchmarks.Env{Settings: func(v any) error { v.(*throttleSettings).Reasons = []string{"hw_slowdown"}; return nil }}, status: pass},
		{name: "throttle bad reason name", check: "throttle",
			env:    benchmarks.Env{Settings: func(v any) error { v.(*throttleSettings).Reasons = []string{"hot"}; return nil }},
			status: unknown, reason: "InvalidSettings", msg: `unknown reason "hot"`},
		{name: "throttle call error", check: "throttle", inject: gpu(0, func(g *fakeGPU) { g.errs["clocks"] = nvml.ERROR_NOT_SUPPORTED }),
			status: unknown, reason: "NotSupported", device: "gpu0"},

		{name: "leftover process", check: "leftover", inject: gpu(0, func(g *fakeGPU) {
			g.procs = []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 2048 << 20}}
			g.memUsedMiB = 2548
		}), status: fail, reason: "LeftoverProcess", device: "gpu0", msg: "gpu0 1 process left by an earlier job: pid 4242 (2048 MiB)"},
		{name: "leftover memory", check: "leftover", inject: gpu(7, func(g *fakeGPU) { g.memUsedMiB = 3000 }),
			status: fail, reason: "LeftoverMemory", device: "gpu7", msg: "gpu7 3000 MiB of device memory in use > 1024"},
		{name: "leftover graphics list unsupported", check: "leftover", inject: func(n *fakeNVMLNode) {
			for _, g := range n.gpus {
				g.graphicsUnsuppt = true
			}
		}, status: pass},
		{name: "leftover call error", check: "leftover", inject: gpu(3, func(g *fakeGPU) { g.errs["procs"] = nvml.ERROR_NO_PERMISSION }),
			status: unknown, reason: "NVMLError", device: "gpu3"},

		// Only the job's devices are inspected.
		{name: "fault outside the job", check: "ecc", inject: gpu(3, func(g *fakeGPU) { g.eccUncorrected = 9 }),
			env: benchmarks.Env{Devices: []int{0, 1}}, status: pass},
		{name: "fault inside the job", check: "ecc", inject: gpu(1, func(g *fakeGPU) { g.eccUncorrected = 9 }),
			env: benchmarks.Env{Devices: []int{0, 1}}, status: fail, reason: "ECCUncorrectable", device: "gpu1"},
		{name: "leftover outside the job", check: "leftover", inject: gpu(5, func(g *fakeGPU) { g.procs = []nvml.ProcessInfo{{Pid: 1}} }),
			env: benchmarks.Env{Devices: []int{2}}, status: pass},
		{name: "allocated device unknown to NVML", check: "ecc", env: benchmarks.Env{Devices: []int{9}},
			status: unknown, reason: "NVMLError", device: "gpu9"},

		// NVML itself unavailable or failing.
		{name: "device count error", check: "ecc", inject: func(n *fakeNVMLNode) { n.countRet = nvml.ERROR_UNKNOWN },
			status: unknown, reason: "NVMLError"},
		{name: "init error", check: "nvlink", inject: func(n *fakeNVMLNode) { n.initRet = nvml.ERROR_NO_PERMISSION },
			status: unknown, reason: "NVMLError", msg: "NVML unavailable"},
		{name: "no devices", check: "pcie", inject: func(n *fakeNVMLNode) { n.visible = 0 }, status: pass, msg: "no NVIDIA devices found"},
	}
	for _, name := range []string{"ecc", "row-remap", "nvlink", "pcie", "throttle", "leftover"} {
		cases = append(cases,
			faultCase{name: "library missing", check: name, inject: func(n *fakeNVMLNode) { n.initRet = nvml.ERROR_LIBRARY_NOT_FOUND },
				status: unknown, reason: "NVMLLibraryNotFound", msg: "no NVIDIA devices found (libnvidia-ml.so.1 not found)"},
			faultCase{name: "driver not loaded", check: name, inject: func(n *fakeNVMLNode) { n.initRet = nvml.ERROR_DRIVER_NOT_LOADED },
				status: unknown, reason: "NVMLDriverNotLoaded"},
			faultCase{name: "gpu lost", check: name, inject: func(n *fakeNVMLNode) {
				for _, g := range n.gpus {
					for _, call := range []string{"ecc", "remap", "nvlink", "pcie", "clocks", "procs", "memory"} {
						g.errs[call] = nvml.ERROR_GPU_IS_LOST
					}
				}
			}, status: fail, reason: "GPULost", device: "gpu0"},
		)
	}
	for _, tc := range cases {
		t.Run(tc.check+"/"+tc.name, func(t *testing.T) {
			node := newHealthyNode()
			if tc.inject != nil {
				tc.inject(node)
			}
			env := tc.env
			r := newChecks[tc.check](node.library()).Run(context.Background(), &env)
			assert.Equal(t, tc.status, r.Status, r.Message)
			assert.Equal(t, tc.reason, r.Reason, r.Message)
			assert.Equal(t, tc.device, r.Device, r.Message)
			assert.Contains(t, r.Message, tc.msg)
			if tc.status == fail {
				// The failing device's own value says fail too.
				found := false
				for _, v := range r.Values {
					found = found || v.Device == tc.device && v.Status == fail
				}
				assert.True(t, found, "no failing value for %s in %+v", tc.device, r.Values)
			}
		})
	}
}

// TestCanceled: a check whose deadline has passed stops and says so.
func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := (&ecc{nvmlCheck{newHealthyNode().library()}}).Run(ctx, &benchmarks.Env{})
	assert.Equal(t, benchmarks.StatusUnknown, r.Status)
	assert.Equal(t, "Canceled", r.Reason)
}

// TestSettingsDecode: the model maps merge with the shipped defaults.
func TestSettingsDecode(t *testing.T) {
	node := newHealthyNode()
	node.gpus[0].name = "NVIDIA A100-SXM4-80GB"
	node.gpus[0].links = node.gpus[0].links[:12]
	node.gpus[1].name = "Custom Board"
	node.gpus[1].links = node.gpus[1].links[:6]
	env := &benchmarks.Env{Settings: settings(t, `
[expected_links]
"Custom Board" = 8
`)}
	r := (&nvlink{nvmlCheck{node.library()}}).Run(context.Background(), env)
	assert.Equal(t, benchmarks.StatusFail, r.Status)
	assert.Equal(t, "gpu1", r.Device, "only the custom board lacks links: %s", r.Message)
	assert.Equal(t, "gpu1 NVLink 6 of 8 links active", r.Message)
	assert.Equal(t, 18, nvlinkDefaults["NVIDIA H100 80GB HBM3"], "defaults untouched")
	_, added := nvlinkDefaults["Custom Board"]
	assert.False(t, added, "settings must not write into the shipped defaults")

	bad := &benchmarks.Env{Settings: settings(t, "max_uncorrected = -1")}
	r = (&ecc{nvmlCheck{node.library()}}).Run(context.Background(), bad)
	assert.Equal(t, benchmarks.StatusUnknown, r.Status)
	assert.Equal(t, "InvalidSettings", r.Reason)
	assert.Contains(t, r.Message, "max_uncorrected = -1")

	wrongType := &benchmarks.Env{Settings: settings(t, `max_used_mib = "lots"`)}
	r = (&leftover{nvmlCheck{node.library()}}).Run(context.Background(), wrongType)
	assert.Equal(t, "InvalidSettings", r.Reason)
	assert.True(t, strings.HasPrefix(r.Message, "settings of [checks.leftover]"), r.Message)
}

// shutdown releases NVML if get opened it. The next get opens it again.
// The prolog never calls it (the process exits); tests do, to start over.
func (l *library) shutdown() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	lib := l.lib
	l.opened, l.lib, l.err = false, nil, nil
	if lib == nil {
		return nil
	}
	if ret := lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml shutdown: %w", ret)
	}
	return nil
}

// TestLibraryOpenedOnce: every check of the process shares one NVML Init,
// and shutdown releases it.
func TestLibraryOpenedOnce(t *testing.T) {
	node := newHealthyNode()
	lib := node.library()
	for name, mk := range newChecks {
		env := &benchmarks.Env{}
		if name == "gpu-count" {
			env.Settings = settings(t, "sysfs = '"+sysfsFixture(t, "dgx-h100.txt")+"'")
		}
		mk(lib).Run(context.Background(), env)
	}
	(&xid{nvmlCheck{lib}}).Run(context.Background(), &benchmarks.Env{Settings: xidSettingsFor(t, newLogRoot(t, "boot-a", "healthy.txt"), t.TempDir())})
	assert.Equal(t, 1, node.inits)
	require.NoError(t, lib.shutdown())
	assert.Equal(t, 1, node.shutdowns)
	require.NoError(t, lib.shutdown(), "a second shutdown is a no-op")
	assert.Equal(t, 1, node.shutdowns)

	// A failed Init is not retried within the process.
	missing := &fakeNVMLNode{initRet: nvml.ERROR_LIBRARY_NOT_FOUND}
	l2 := missing.library()
	_, err := l2.get()
	require.ErrorIs(t, err, errLibraryNotFound)
	_, err = l2.get()
	require.ErrorIs(t, err, errLibraryNotFound)
	assert.Equal(t, 1, missing.inits)
	require.NoError(t, l2.shutdown())
	assert.Equal(t, 0, missing.shutdowns)
}

// TestRealLibrary runs the registered checks against the real go-nvml on
// this machine. On a machine with the driver's libraries but no kernel
// module (CI: .ci/deps-nvidia installs libnvidia-ml1) they must say so as
// unknown, not crash or fail; with a driver they must read the devices.
func TestRealLibrary(t *testing.T) {
	_, err := shared.get()
	t.Cleanup(func() { _ = shared.shutdown() })
	if errors.Is(err, errLibraryNotFound) {
		t.Fatalf("libnvidia-ml.so.1 not installed: install the Debian non-free package libnvidia-ml1 (bash .ci/deps-nvidia): %v", err)
	}
	c, _ := benchmarks.Lookup("ecc")
	r := c.Run(context.Background(), &benchmarks.Env{})
	if err != nil {
		assert.ErrorIs(t, err, ErrDriverNotLoaded)
		assert.Equal(t, benchmarks.StatusUnknown, r.Status)
		assert.Equal(t, "NVMLDriverNotLoaded", r.Reason)
		assert.Equal(t, "NVIDIA driver not loaded: Driver Not Loaded", r.Message)
		return
	}
	// A machine with the driver: every NVML check reads real devices.
	for _, name := range []string{"gpu-count", "ecc", "row-remap", "nvlink", "pcie", "throttle", "leftover"} {
		c, _ := benchmarks.Lookup(name)
		r := c.Run(context.Background(), &benchmarks.Env{})
		t.Logf("%s: %s %s %s %s", name, r.Status, r.Reason, r.Device, r.Message)
		assert.NotContains(t, []string{"NVMLLibraryNotFound", "NVMLDriverNotLoaded", "InvalidSettings"}, r.Reason, name)
	}
}

// BenchmarkHealthFacts runs every NVML check over the fake 8-GPU node: the
// cost of vigil's own logic per prolog, without the driver's.
func BenchmarkHealthFacts(b *testing.B) {
	node := newHealthyNode()
	lib := node.library()
	root := b.TempDir()
	env := &benchmarks.Env{Settings: func(v any) error {
		if s, ok := v.(*device.CountSettings); ok {
			s.Sysfs = root
		}
		return nil
	}}
	checks := make([]benchmarks.Check, 0, len(newChecks))
	for _, mk := range newChecks {
		checks = append(checks, mk(lib))
	}
	for b.Loop() {
		for _, c := range checks {
			if r := c.Run(context.Background(), env); r.Status != benchmarks.StatusPass {
				b.Fatalf("%s: %s %s", r.Check, r.Reason, r.Message)
			}
		}
	}
}

func TestNormalisePCI(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:3B:00.0": "0000:3b:00.0",
		"0000:3b:00.0":     "0000:3b:00.0",
		"0000:3B:00":       "0000:3b:00",
		" 0001:01:00.1\n":  "0001:01:00.1",
	} {
		t.Run(in, func(t *testing.T) { assert.Equal(t, want, pci.Normalise(in)) })
	}
}

// TestDefaultsAndConfig: every check offers its defaults to the framework,
// fresh each time and valid, and reads its table of a vigil.toml through
// the config package.
func TestDefaultsAndConfig(t *testing.T) {
	for _, name := range []string{"gpu-count", "ecc", "row-remap", "xid", "nvlink", "pcie", "throttle", "leftover"} {
		t.Run(name, func(t *testing.T) {
			c, _ := benchmarks.Lookup(name)
			d := c.Spec().Settings
			require.NotNil(t, d, "%s has settings", name)
			a, b := d(), d()
			assert.NotSame(t, a, b)
			require.NoError(t, a.(checkSettings).Validate())
		})
	}

	f, err := config.Parse(strings.NewReader(`
[checks.nvlink.expected_links]
"Custom Board" = 4

[checks.pcie.models."NVIDIA H100 80GB HBM3"]
min_gen = 4
min_width = 16

[checks.leftover]
max_used_mib = 512
`), "vigil.toml")
	require.NoError(t, err)
	nv := defaultNvlinkSettings()
	require.NoError(t, benchmarks.SettingsFrom(f, "nvlink")(nv))
	assert.Equal(t, 4, nv.ExpectedLinks["Custom Board"])
	assert.Equal(t, 12, nv.ExpectedLinks["NVIDIA A100-SXM4-80GB"], "shipped entries stay")
	pc := defaultPcieSettings()
	require.NoError(t, benchmarks.SettingsFrom(f, "pcie")(pc))
	assert.Equal(t, pcieModel{MinGen: 4, MinWidth: 16}, pc.Models["NVIDIA H100 80GB HBM3"])
	assert.True(t, pc.IdleGenDownshift)
	lo := defaultLeftoverSettings()
	require.NoError(t, benchmarks.SettingsFrom(f, "leftover")(lo))
	assert.Equal(t, 512.0, lo.MaxUsedMiB)
	assert.Empty(t, f.Unused())

	bad, err := config.Parse(strings.NewReader("[checks.ecc]\nmax_uncorected = 1\n"), "vigil.toml")
	require.NoError(t, err)
	r := (&ecc{nvmlCheck{newHealthyNode().library()}}).Run(context.Background(), &benchmarks.Env{Settings: benchmarks.SettingsFrom(bad, "ecc")})
	assert.Equal(t, benchmarks.StatusUnknown, r.Status)
	assert.Equal(t, "InvalidSettings", r.Reason)
	assert.Contains(t, r.Message, "max_uncorected")
}
