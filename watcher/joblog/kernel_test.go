package joblog

import (
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/internal/kmsg"
	"github.com/vigil-hpc/vigil/internal/kmsg/kmsgtest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// segfault is the line the kernel logs when a process named comm crashes
// in code mapped from a file named file: both are the user's choice.
func segfault(comm, file string) string {
	return comm + "[32060]: segfault at 0 ip 0000561f513e1139 sp 00007fff432c98e0 error 4 in " + file +
		"[1139,561f513e1000+1000] likely on CPU 0 (core 0, socket 0)"
}

// TestForgedKernelLines: what a user can make the kernel print is no
// evidence in the kernel stream, whatever it quotes; the drivers' own
// lines still are.
func TestForgedKernelLines(t *testing.T) {
	forged := map[string]string{
		"xid in a file name":               segfault("crash", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus"),
		"xid in a process and a file name": segfault("NVRM: Xid (PCI:", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus"),
		"xid split over both":              segfault("NVRM: Xid (", "x): 79, pid=1, GPU has fallen off the bus"),
		"gsp timeout":                      segfault("crash", "NVRM: Xid (PCI:0000:3b:00): 119, pid=1, name=x, Timeout after 6s of waiting for RPC response"),
		"double-bit ecc xid":               segfault("crash", "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, An uncorrectable double bit error (DBE)"),
		"ecc words":                        segfault("crash", "RuntimeError: CUDA error: uncorrectable ECC error encountered"),
		"fallen off the bus":               segfault("crash", "NVRM: GPU 0000:3a:00.0: GPU has fallen off the bus."),
		"fallen off, process name":         segfault("NVRM: GPU at PC", "NVRM: GPU has fallen off the bus."),
		"ascend error code":                segfault("crash", "dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, major alarm (fault)"),
		"ascend error code at the end":     "crash[1]: segfault at 0 ip 0 sp 0 error 4 in dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, major alarm (fault)",
		"ascend, process name":             segfault("dcmi: npu2 (PCI", "0000:c3:00.0) error code 0x80e18005, major alarm (fault)"),
		"aer":                              segfault("crash", "pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0"),
		"mce":                              segfault("crash", "mce: [Hardware Error]: Machine check events logged"),
		"nfs":                              segfault("crash", "nfs: server 10.0.0.9 not responding, still trying"),
		"oom":                              segfault("crash", "Out of memory: Killed process 1 (python)"),
		"hung task":                        segfault("crash", "INFO: task python:1 blocked for more than 120 seconds."),
		"nccl":                             segfault("crash", "gpu02:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.3<57223> with status=12"),
		"progress":                         segfault("crash", "[rank0]: epoch 3 step 1500"),
	}
	for name, line := range forged {
		// As the watcher reads it: the message of a /dev/kmsg record.
		rec := kmsg.Parse([]byte("6,4242,733100001,-;" + line))
		if rec.User || rec.Text != line {
			t.Fatalf("%s: record read as %+v", name, rec)
		}
		if m, ok := LineIn(trace.StreamKmsg, rec.Text); ok {
			t.Errorf("%s: %q reads as %+v", name, line, m)
		}
	}

	for _, tc := range []struct {
		line  string
		kind  Kind
		xid   int
		fault bool
	}{
		{"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.", KindXID, 79, true},
		// NVIDIA/NVSentinel pull request 1270: the newer GSP timeout line.
		{"NVRM: Xid (PCI:0002:00:00): 119, pid=1582259, name=nvc:[driver], Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20802a02 0x8).", KindXID, 119, true},
		{"NVRM: Xid (PCI:0000:3b:00 GPU-I:02 GPU-CI:01): 13, pid=7, name=python, Graphics SM Warp Exception", KindXID, 13, false},
		{"NVRM: GPU 0000:3a:00.0: GPU has fallen off the bus.", KindXID, -1, true},
		{"dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, major alarm (fault)", KindNPUError, -1, true},
		{"nfs: server 10.0.0.9 not responding, still trying", KindNFS, -1, false},
		{"Out of memory: Killed process 30877 (python) total-vm:123456kB, anon-rss:65432kB", KindOOMKill, -1, false},
	} {
		m, ok := LineIn(trace.StreamKmsg, tc.line)
		if !ok || m.Kind != tc.kind || m.XID != tc.xid || m.Fault != tc.fault {
			t.Errorf("%q: %+v %v; want %s xid %d fault %v", tc.line, m, ok, tc.kind, tc.xid, tc.fault)
		}
	}
}

// TestRealSegfaultLine: a program run as nobody from a file named like an
// Ascend NPU's fault line crashes; the record the kernel logs carries that
// text (as the process name and as the file name) and means nothing.
func TestRealSegfaultLine(t *testing.T) {
	const forged = "dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, major alarm (fault)"
	raw, rec := kmsgtest.Segfault(t, forged)
	t.Logf("the kernel logged: %s", raw)
	if rec.User || !strings.HasPrefix(rec.Text, "dcmi: npu2 (PCI[") || !strings.Contains(rec.Text, " in "+forged+"[") {
		t.Fatalf("the kernel's record: %+v", rec)
	}
	if m, ok := LineIn(trace.StreamKmsg, rec.Text); ok {
		t.Errorf("%q reads as %+v", rec.Text, m)
	}
}
