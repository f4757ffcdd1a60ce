package health

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/benchmarks"
	nvxid "github.com/vigil-hpc/vigil/internal/xid"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// agreeLines are the XID lines the prolog's xid check and the watcher must
// classify alike: one per catalogue code, in the driver's form with the
// catalogue's words, and the lines whose text changes the verdict, with
// their sources.
func agreeLines() []string {
	var lines []string
	for _, info := range catalogue() {
		lines = append(lines, fmt.Sprintf("NVRM: Xid (PCI:0000:3b:00): %d, pid=1234, name=python, %s", info.Code, info.What))
	}
	return append(lines,
		// NVIDIA/open-gpu-kernel-modules issue 1150 (driver 590.48.01).
		"NVRM: Xid (PCI:0000:3b:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
		"NVRM: Xid (PCI:0000:3b:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 48",
		"NVRM: Xid (PCI:0000:3b:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 13",
		// NVIDIA/NVSentinel's parser tests and users' journals (XID 154).
		"NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
		"NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
		"NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
		// NVIDIA/NVSentinel issue 1357 and its parser tests (NVLink5).
		"NVRM: Xid (PCI:0000:3b:00): 145, RLW_SRC_TRACK Nonfatal XC1 i0 Link 17 (0x04084507 0x00000004 0x00000000 0x00000000 0x00000000 0x00000000",
		"NVRM: Xid (PCI:0000:3b:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 (0x025525c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
		// Not in the catalogue; NVML's "unknown XID".
		"NVRM: Xid (PCI:0000:3b:00): 999, pid=1234, name=python, unknown XID",
	)
}

// TestXIDPrologAndWatcherAgree runs every line through the xid check (on a
// kern.log holding only that line, the shipped settings) and through the
// watcher's joblog.Line: the check fails exactly on the lines the watcher
// calls a fault.
func TestXIDPrologAndWatcherAgree(t *testing.T) {
	node := &fakeNVMLNode{initRet: nvml.ERROR_LIBRARY_NOT_FOUND} // sysfs lists the GPU
	for _, line := range agreeLines() {
		t.Run(line[28:min(len(line), 60)], func(t *testing.T) {
			kern := "4,2107,733100001,-;" + line
			m, ok := joblog.LineIn(trace.StreamKmsg, line)
			if !ok || m.Kind != joblog.KindXID {
				t.Fatalf("watcher: %+v, %v", m, ok)
			}
			root := t.TempDir()
			gpuSysfs(t, root, "0000:3b:00.0")
			setBootID(t, root, "boot-1")
			writeFile(t, root, logSource, kern+"\n")
			env := &benchmarks.Env{Settings: xidSettingsFor(t, root, t.TempDir())}
			r := (&xid{nvmlCheck{node.library()}}).Run(context.Background(), env)
			if failed := r.Status == benchmarks.StatusFail; failed != m.Fault {
				t.Errorf("prolog %s (%s), watcher fault %v", r.Status, r.Message, m.Fault)
			}
			ev, _ := nvxid.Parse(line)
			if m.Fault != ev.Fault() || m.XID != ev.Code {
				t.Errorf("watcher %+v, catalogue %+v fault %v", m, ev, ev.Fault())
			}
		})
	}
}

// TestXIDCausedByPrevious: a cleanup caused by a fault fails the check
// with the cause's reason; fault_xids are applied to the cause too.
func TestXIDCausedByPrevious(t *testing.T) {
	node := &fakeNVMLNode{initRet: nvml.ERROR_LIBRARY_NOT_FOUND}
	line := "4,2107,733100001,-;NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149\n"
	for _, tc := range []struct {
		extra  []string
		status benchmarks.Status
		reason string
	}{
		{nil, benchmarks.StatusFail, "XID149"},
		{[]string{"fault_xids = [149]"}, benchmarks.StatusFail, "XID149"},
		{[]string{"fault_xids = [45]"}, benchmarks.StatusPass, ""},
	} {
		root := t.TempDir()
		gpuSysfs(t, root, "0000:dc:00.0")
		setBootID(t, root, "boot-1")
		writeFile(t, root, logSource, line)
		r := (&xid{nvmlCheck{node.library()}}).Run(context.Background(), &benchmarks.Env{Settings: xidSettingsFor(t, root, t.TempDir(), tc.extra...)})
		if r.Status != tc.status || r.Reason != tc.reason {
			t.Errorf("%v: %s %s (%s), want %s %s", tc.extra, r.Status, r.Reason, r.Message, tc.status, tc.reason)
		}
		if tc.reason != "" && r.Message != "0000:dc:00 XID 45 (preemptive cleanup, due to previous errors, caused by XID 149: NVLink NETIR error): "+
			"pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149 (remedy: check NVLink and the fabric)" {
			t.Errorf("message %q", r.Message)
		}
	}
}

// gpuSysfs lists NVIDIA GPUs (3D controllers) at addrs under root/sys, as
// sysfs does.
func gpuSysfs(t *testing.T, root string, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		dir := filepath.Join("sys", "bus", "pci", "devices", a)
		writeFile(t, root, filepath.Join(dir, "vendor"), "0x10de\n")
		writeFile(t, root, filepath.Join(dir, "class"), "0x030200\n")
	}
}

// writeFile writes text at path below root.
func writeFile(t *testing.T, root, path, text string) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestXIDDeviceEventsAgree: an XID that NVML reports (a typed device
// record, without the driver's text) is a fault for the watcher exactly
// when the kernel's line of that code with the catalogue's words is, for
// the watcher and for the prolog's xid check alike.
func TestXIDDeviceEventsAgree(t *testing.T) {
	for _, info := range catalogue() {
		line := fmt.Sprintf("NVRM: Xid (PCI:0000:3b:00): %d, pid=1234, name=python, %s", info.Code, info.What)
		kernel, _ := joblog.LineIn(trace.StreamKmsg, line)
		rec := trace.DeviceRecord("n1", "7", time.Now(), trace.DeviceEvent{Source: trace.DeviceNVML, Device: "0", PCI: "0000:3b:00",
			Kind: trace.DeviceXID, XID: info.Code, What: info.What})
		dev, ok := joblog.LineIn(rec.Log.Stream, rec.Log.Line)
		if !ok || dev.Kind != joblog.KindXID || dev.XID != info.Code || dev.Fault != kernel.Fault {
			t.Errorf("XID %d: device record %+v, %v; the kernel's line fault %v", info.Code, dev, ok, kernel.Fault)
		}
	}
}

// catalogue is every entry of the XID catalogue, by code.
func catalogue() []nvxid.Info {
	var out []nvxid.Info
	for code := range 1024 {
		if info, ok := nvxid.Lookup(code); ok {
			out = append(out, info)
		}
	}
	return out
}
