package ascend

import (
	"context"
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/cgo/dcmi"
	"github.com/vigil-hpc/vigil/cgo/dcmi/dcmifake"
	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/config"
)

// fakeLib wraps a fake node as the process-wide DCMI library.
func fakeLib(n *dcmifake.Node) *dcmiLibrary {
	return &dcmiLibrary{open: func(dl.Options) (dcmi.Interface, error) { return n, nil }}
}

// missingLib is a DCMI library that is not installed, as on this machine.
func missingLib() *dcmiLibrary {
	return &dcmiLibrary{open: func(o dl.Options) (dcmi.Interface, error) {
		o.Names = []string{"libdcmi.so.vigil-test-absent"}
		l, err := dcmi.Open(o)
		if err != nil {
			return nil, err
		}
		return l, nil
	}}
}

// settings returns an Env whose [checks.NAME] table is the TOML text.
func settings(t *testing.T, name, text string) *benchmarks.Env {
	t.Helper()
	f, err := config.Parse(strings.NewReader(text), "vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	return &benchmarks.Env{Node: "n1", Settings: benchmarks.SettingsFrom(f, name), Libraries: benchmarks.LibrariesFrom(f, name)}
}

// sysfsTree writes a PCI tree: each entry "ADDR VENDOR CLASS".
func sysfsTree(t *testing.T, devs ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range devs {
		f := strings.Fields(d)
		dir := filepath.Join(root, "bus", "pci", "devices", f[0])
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "vendor"), []byte(f[1]+"\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "class"), []byte(f[2]+"\n"), 0o644)
	}
	return root
}

// eightNPUs is the PCI tree of a healthy 8 × 910B node (plus a Huawei NIC
// and an NVIDIA GPU, which do not count).
func eightNPUs(t *testing.T) string {
	var devs []string
	for i := 0; i < 8; i++ {
		devs = append(devs, fmt.Sprintf("0000:%02x:00.0 0x19e5 0x120000", 0xc1+i))
	}
	devs = append(devs, "0000:3d:00.0 0x19e5 0x020000", "0000:18:00.0 0x10de 0x030200")
	return sysfsTree(t, devs...)
}

func TestRegistered(t *testing.T) {
	for _, n := range []string{"npu-count", "npu-health", "npu-ecc", "npu-link", "npu-leftover", "npu-gemm", "npu-copy", "npu-allreduce", "npu-allgather",
		"npu-kernel-launch", "npu-alltoall", "npu-overlap"} {
		c, ok := benchmarks.Lookup(n)
		if !ok {
			t.Errorf("%s not registered", n)
			continue
		}
		if !c.Spec().Isolated {
			t.Errorf("%s is not isolated", n)
		}
		if c.Spec().Settings == nil {
			t.Errorf("%s has no Defaults", n)
		}
		if !c.Spec().Default {
			t.Errorf("%s is not in the default suite (its CUDA counterpart is)", n)
		}
	}
}

func run1(t *testing.T, c benchmarks.Check, env *benchmarks.Env) benchmarks.Result {
	t.Helper()
	r := c.Run(context.Background(), env)
	if r.Check != c.Spec().Name {
		t.Errorf("Check = %q, want %q", r.Check, c.Spec().Name)
	}
	return r
}

func expect(t *testing.T, r benchmarks.Result, st benchmarks.Status, reason, device string, msgs ...string) {
	t.Helper()
	if r.Status != st || r.Reason != reason || r.Device != device {
		t.Errorf("got %s/%s/%q (%s), want %s/%s/%q", r.Status, r.Reason, r.Device, r.Message, st, reason, device)
	}
	for _, m := range msgs {
		if !strings.Contains(r.Message, m) {
			t.Errorf("message %q lacks %q", r.Message, m)
		}
	}
}

func TestHealthyNode(t *testing.T) {
	node := dcmifake.Healthy(8)
	lib := fakeLib(node)
	env := settings(t, "npu-count", fmt.Sprintf("[checks.npu-count]\nexpected = 8\nsysfs = %q\n", eightNPUs(t)))
	expect(t, run1(t, &npuCount{dcmiCheck{lib}}, env), benchmarks.StatusPass, "", "", "8 NPUs, 8 expected")
	for _, c := range []benchmarks.Check{&npuHealth{dcmiCheck{lib}}, &npuECC{dcmiCheck{lib}}, &npuLink{dcmiCheck{lib}}, &npuLeftover{dcmiCheck{lib}}} {
		r := run1(t, c, nil)
		expect(t, r, benchmarks.StatusPass, "", "", "8 NPUs")
		if len(r.Values) < 8 {
			t.Errorf("%s: %d values, want one per NPU at least", c.Spec().Name, len(r.Values))
		}
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name   string
		check  func(*dcmiLibrary) benchmarks.Check
		break_ func(n *dcmifake.Node)
		env    func(t *testing.T) *benchmarks.Env
		status benchmarks.Status
		reason string
		device string
		msgs   []string
	}{
		{
			name:  "missing NPU",
			check: func(l *dcmiLibrary) benchmarks.Check { return &npuCount{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) {
				n.NPUs = append(n.NPUs[:3], n.NPUs[4:]...) // npu3 at 0000:c4:00.0 gone from DCMI
			},
			env: func(t *testing.T) *benchmarks.Env {
				return settings(t, "npu-count", fmt.Sprintf("[checks.npu-count]\nexpected = 8\nsysfs = %q\n", eightNPUs(t)))
			},
			status: benchmarks.StatusFail, reason: ReasonNPUCountMismatch,
			msgs: []string{"expected 8 NPUs, DCMI sees 7", "0000:c4:00.0 Ascend NPU on the PCI bus but not in DCMI"},
		},
		{
			name:  "fell off the bus, count from gres",
			check: func(l *dcmiLibrary) benchmarks.Check { return &npuCount{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) {
				n.NPUs = n.NPUs[:7]
			},
			env: func(t *testing.T) *benchmarks.Env {
				e := settings(t, "npu-count", fmt.Sprintf("[checks.npu-count]\nsysfs = %q\n", eightNPUs(t)))
				e.GresGPUs = 8
				return e
			},
			status: benchmarks.StatusFail, reason: ReasonNPUCountMismatch,
			msgs: []string{"expected 8 NPUs, DCMI sees 7", "0000:c8:00.0"},
		},
		{
			name:   "allocated NPU missing",
			check:  func(l *dcmiLibrary) benchmarks.Check { return &npuCount{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) {},
			env: func(t *testing.T) *benchmarks.Env {
				e := settings(t, "npu-count", fmt.Sprintf("[checks.npu-count]\nsysfs = %q\n", eightNPUs(t)))
				e.Devices = []int{6, 9}
				return e
			},
			status: benchmarks.StatusFail, reason: ReasonAllocatedNPUMissing, device: "npu9",
		},
		{
			name:  "major alarm",
			check: func(l *dcmiLibrary) benchmarks.Check { return &npuHealth{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) {
				n.NPUs[5].Health = dcmi.HealthMajor
				n.NPUs[5].Codes = []uint32{0x80E01801, 0x80CB8009}
			},
			status: benchmarks.StatusFail, reason: ReasonNPUUnhealthy, device: "npu5",
			msgs: []string{"npu5: major alarm (error codes 0x80e01801, 0x80cb8009)"},
		},
		{
			name:   "absent",
			check:  func(l *dcmiLibrary) benchmarks.Check { return &npuHealth{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) { n.NPUs[2].Health = dcmi.HealthAbsent },
			status: benchmarks.StatusFail, reason: ReasonNPUAbsent, device: "npu2",
		},
		{
			name:   "minor alarm tolerated by config",
			check:  func(l *dcmiLibrary) benchmarks.Check { return &npuHealth{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) { n.NPUs[1].Health = dcmi.HealthMinor },
			env: func(t *testing.T) *benchmarks.Env {
				return settings(t, "npu-health", "[checks.npu-health]\nfail_on_minor = false\n")
			},
			status: benchmarks.StatusPass, msgs: []string{"npu1: minor alarm (minor alarms tolerated)"},
		},
		{
			name:  "health call error",
			check: func(l *dcmiLibrary) benchmarks.Check { return &npuHealth{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) {
				n.NPUs[4].Errs = map[string]error{"Health": &dcmi.Error{Op: "dcmi_get_device_health", Code: dcmi.ErrTimeOut}}
			},
			status: benchmarks.StatusUnknown, reason: ReasonDCMIError, device: "npu4",
			msgs: []string{"DCMI_ERR_CODE_TIME_OUT"},
		},
		{
			name:  "device gone during the call",
			check: func(l *dcmiLibrary) benchmarks.Check { return &npuHealth{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) {
				n.NPUs[4].Errs = map[string]error{"Health": &dcmi.Error{Op: "dcmi_get_device_health", Code: dcmi.ErrDeviceNotExist}}
			},
			status: benchmarks.StatusFail, reason: ReasonNPULost, device: "npu4",
		},
		{
			name:   "uncorrectable ECC",
			check:  func(l *dcmiLibrary) benchmarks.Check { return &npuECC{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) { n.NPUs[7].HBMECC.DoubleBit = 2 },
			status: benchmarks.StatusFail, reason: ReasonNPUECCUncorrectable, device: "npu7",
			msgs: []string{"npu7: 2 uncorrectable HBM ECC errors (limit 0)"},
		},
		{
			name:   "isolated pages",
			check:  func(l *dcmiLibrary) benchmarks.Check { return &npuECC{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) { n.NPUs[0].HBMECC.DoubleBitIsolatedPages = 65 },
			status: benchmarks.StatusFail, reason: ReasonNPUIsolatedPages, device: "npu0",
		},
		{
			name:  "ECC not supported",
			check: func(l *dcmiLibrary) benchmarks.Check { return &npuECC{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) {
				n.NPUs[0].Errs = map[string]error{"ECC": &dcmi.Error{Op: "dcmi_get_device_ecc_info", Code: dcmi.ErrNotSupport}}
			},
			status: benchmarks.StatusPass, msgs: []string{"npu0: HBM ECC not reported"},
		},
		{
			name:   "link down",
			check:  func(l *dcmiLibrary) benchmarks.Check { return &npuLink{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) { n.NPUs[6].Net = dcmi.NetUnreachable },
			status: benchmarks.StatusFail, reason: ReasonNPULinkDown, device: "npu6",
			msgs: []string{"npu6: RoCE link unreachable"},
		},
		{
			name:   "link detection not started",
			check:  func(l *dcmiLibrary) benchmarks.Check { return &npuLink{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) { n.NPUs[6].Net = dcmi.NetInit },
			status: benchmarks.StatusPass, msgs: []string{"npu6: RoCE detection not started"},
		},
		{
			name:   "link detection required",
			check:  func(l *dcmiLibrary) benchmarks.Check { return &npuLink{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) { n.NPUs[6].Net = dcmi.NetInit },
			env: func(t *testing.T) *benchmarks.Env {
				return settings(t, "npu-link", "[checks.npu-link]\nrequire_detection = true\n")
			},
			status: benchmarks.StatusUnknown, reason: ReasonNotSupported, device: "npu6",
		},
		{
			name:  "link function missing in an old driver",
			check: func(l *dcmiLibrary) benchmarks.Check { return &npuLink{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) {
				n.NPUs[0].Errs = map[string]error{"NetworkHealth": fmt.Errorf("dcmi_get_device_network_health in /x/libdcmi.so: %w", dl.ErrSymbol)}
			},
			status: benchmarks.StatusUnknown, reason: device.ReasonLibraryMissing, device: "npu0",
		},
		{
			name:   "leftover process",
			check:  func(l *dcmiLibrary) benchmarks.Check { return &npuLeftover{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) { n.NPUs[3].Procs = []dcmi.Process{{PID: 4242, MemBytes: 20 << 30}} },
			status: benchmarks.StatusFail, reason: ReasonNPUProcessLeftover, device: "npu3",
			msgs: []string{"npu3 held by 1 process: pid 4242 (20480 MiB)"},
		},
		{
			name:   "leftover memory",
			check:  func(l *dcmiLibrary) benchmarks.Check { return &npuLeftover{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) { n.NPUs[3].HBM.UsedMiB = 30000 },
			status: benchmarks.StatusFail, reason: ReasonNPUMemoryLeftover, device: "npu3",
			msgs: []string{"npu3: 30000 MiB of HBM in use, an idle Ascend910B3 reports at most 5632"},
		},
		{
			name:   "leftover memory threshold from config",
			check:  func(l *dcmiLibrary) benchmarks.Check { return &npuLeftover{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) { n.NPUs[3].HBM.UsedMiB = 30000 },
			env: func(t *testing.T) *benchmarks.Env {
				return settings(t, "npu-leftover", "[checks.npu-leftover.thresholds.Ascend910B3]\nhbm_used_mib = 32768\n")
			},
			status: benchmarks.StatusPass,
		},
		{
			name:  "device list error",
			check: func(l *dcmiLibrary) benchmarks.Check { return &npuHealth{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) {
				n.DevicesErr = &dcmi.Error{Op: "dcmi_get_card_num_list", Code: dcmi.ErrIoctlFail}
			},
			status: benchmarks.StatusUnknown, reason: ReasonDCMIError, msgs: []string{"DCMI_ERR_CODE_IOCTL_FAIL"},
		},
		{
			name:   "init error",
			check:  func(l *dcmiLibrary) benchmarks.Check { return &npuECC{dcmiCheck{l}} },
			break_: func(n *dcmifake.Node) { n.InitErr = &dcmi.Error{Op: "dcmi_init", Code: dcmi.ErrInnerErr} },
			status: benchmarks.StatusUnknown, reason: ReasonDCMIError, msgs: []string{"DCMI unavailable: dcmi_init: DCMI_ERR_CODE_INNER_ERR"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := dcmifake.Healthy(8)
			tt.break_(node)
			var env *benchmarks.Env
			if tt.env != nil {
				env = tt.env(t)
			}
			expect(t, run1(t, tt.check(fakeLib(node)), env), tt.status, tt.reason, tt.device, tt.msgs...)
		})
	}
}

func TestJobDevicesOnly(t *testing.T) {
	node := dcmifake.Healthy(8)
	node.NPUs[5].Health = dcmi.HealthCritical // not the job's
	lib := fakeLib(node)
	r := run1(t, &npuHealth{dcmiCheck{lib}}, &benchmarks.Env{Devices: []int{0, 1}})
	expect(t, r, benchmarks.StatusPass, "", "", "2 NPUs healthy")
	if node.Calls["Health"] != 2 {
		t.Errorf("Health called %d times, want 2", node.Calls["Health"])
	}
}

func TestWithoutDCMI(t *testing.T) {
	for _, c := range []benchmarks.Check{&npuHealth{dcmiCheck{missingLib()}}, &npuECC{dcmiCheck{missingLib()}}, &npuLink{dcmiCheck{missingLib()}}, &npuLeftover{dcmiCheck{missingLib()}}, &npuCount{dcmiCheck{missingLib()}}} {
		t.Run(c.Spec().Name, func(t *testing.T) {
			env := settings(t, c.Spec().Name, fmt.Sprintf("[checks.%s]\n", c.Spec().Name))
			if c.Spec().Name == "npu-count" {
				env = settings(t, "npu-count", fmt.Sprintf("[checks.npu-count]\nsysfs = %q\n", sysfsTree(t)))
				env.GresGPUs = 8 // an NVIDIA node's gres says nothing about NPUs
			}
			expect(t, run1(t, c, env), benchmarks.StatusUnknown, device.ReasonLibraryMissing, "",
				"libdcmi.so.vigil-test-absent not found (searched:", "/usr/local/dcmi")
		})
	}
}

func TestNPUCountWithoutDCMI(t *testing.T) {
	t.Run("expected by config", func(t *testing.T) {
		env := settings(t, "npu-count", fmt.Sprintf("[checks.npu-count]\nexpected = 8\nsysfs = %q\n", sysfsTree(t)))
		expect(t, run1(t, &npuCount{dcmiCheck{missingLib()}}, env), benchmarks.StatusFail, ReasonNPUCountMismatch, "", "expected 8 NPUs, found none")
	})
	t.Run("NPUs on the bus", func(t *testing.T) {
		env := settings(t, "npu-count", fmt.Sprintf("[checks.npu-count]\nsysfs = %q\n", eightNPUs(t)))
		expect(t, run1(t, &npuCount{dcmiCheck{missingLib()}}, env), benchmarks.StatusUnknown, device.ReasonLibraryMissing, "", "but 8 Ascend NPUs on the PCI bus")
	})
}

func TestAscendPCIDevices(t *testing.T) {
	got, err := device.OnBus(benchmarks.VendorAscend, eightNPUs(t))
	if err != nil || len(got) != 8 || got[0] != "0000:c1:00.0" || got[7] != "0000:c8:00.0" {
		t.Errorf("got %v, %v", got, err)
	}
	got, err = device.OnBus(benchmarks.VendorAscend, t.TempDir()) // no PCI bus at all
	if err != nil || len(got) != 0 {
		t.Errorf("empty sysfs: %v, %v", got, err)
	}
}

func TestBadSettings(t *testing.T) {
	lib := fakeLib(dcmifake.Healthy(2))
	tests := []struct {
		check benchmarks.Check
		toml  string
	}{
		{&npuCount{dcmiCheck{lib}}, "[checks.npu-count]\nexpected = -1\n"},
		{&npuCount{dcmiCheck{lib}}, "[checks.npu-count]\nexpectd = 1\n"},
		{&npuECC{dcmiCheck{lib}}, "[checks.npu-ecc]\nmax_uncorrectable = -2\n"},
		{&npuHealth{dcmiCheck{lib}}, "[checks.npu-health]\nfail_on_minor = \"yes\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.check.Spec().Name, func(t *testing.T) {
			r := run1(t, tt.check, settings(t, tt.check.Spec().Name, tt.toml))
			expect(t, r, benchmarks.StatusUnknown, devcheck.ReasonInvalidSettings, "")
		})
	}
}

func TestDCMIOpenedOnce(t *testing.T) {
	opens := 0
	node := dcmifake.Healthy(2)
	lib := &dcmiLibrary{open: func(dl.Options) (dcmi.Interface, error) { opens++; return node, nil }}
	for i := 0; i < 3; i++ {
		run1(t, &npuHealth{dcmiCheck{lib}}, nil)
	}
	if opens != 1 {
		t.Errorf("opened %d times", opens)
	}
	lib = &dcmiLibrary{open: func(dl.Options) (dcmi.Interface, error) { opens++; return nil, errors.New("boom") }}
	lib.get(dl.Options{})
	if _, err := lib.get(dl.Options{}); err == nil || opens != 2 {
		t.Errorf("a failed open is not remembered: %v, %d", err, opens)
	}
}

// BenchmarkHealthFacts is the cost of the five DCMI facts on an 8-NPU node
// above the library (the fake answers at once).
func BenchmarkHealthFacts(b *testing.B) {
	node := dcmifake.Healthy(8)
	lib := fakeLib(node)
	checks := []benchmarks.Check{&npuHealth{dcmiCheck{lib}}, &npuECC{dcmiCheck{lib}}, &npuLink{dcmiCheck{lib}}, &npuLeftover{dcmiCheck{lib}}}
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		for _, c := range checks {
			if r := c.Run(ctx, nil); r.Status != benchmarks.StatusPass {
				b.Fatal(r.Message)
			}
		}
	}
}
