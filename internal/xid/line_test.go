package xid

import (
	"fmt"
	"strings"
	"testing"
)

// TestParse reads real XID lines, each with its source.
func TestParse(t *testing.T) {
	cases := []struct {
		name, line string
		ok         bool
		want       Event
		remedy     Remedy
	}{
		// vigil's own fixture (benchmarks/nvidia/health/testdata/kmsg/xid79.txt), the form of the driver's line.
		{"fallen off the bus", "NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", true,
			Event{Code: 79, PCI: "0000:3a:00", Text: "pid='<unknown>', name=<unknown>, GPU has fallen off the bus."}, RemedyRebootNode},
		// NVIDIA/NVSentinel, syslog-health-monitor parser tests: without pid and name, a PCI domain other than 0.
		{"without pid", "NVRM: Xid (PCI:0003:00:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)", true,
			Event{Code: 74, PCI: "0003:00:00", Text: "pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"}, RemedyCheckFabric},
		{"no text at all", "NVRM: Xid (PCI:0000:3f:00): 46", true, Event{Code: 46, PCI: "0000:3f:00"}, RemedyResetGPU},
		{"graphics class error", "NVRM: Xid (PCI:0001:ab:cd): 69, pid=1310987, name=train.3, Class Error: ChId 0008, Class 0000cbc0, Offset 00000184, Data ffffffff, ErrorCode 00000004", true,
			Event{Code: 69, PCI: "0001:ab:cd", Text: "pid=1310987, name=train.3, Class Error: ChId 0008, Class 0000cbc0, Offset 00000184, Data ffffffff, ErrorCode 00000004"}, RemedyRestartApp},
		// ... and XID 154 naming a reset.
		{"154 reset", "NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", true,
			Event{Code: 154, PCI: "0008:01:00", Text: "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"}, RemedyResetGPU},
		// Users' journals after an XID 79 (GitHub, several projects): a reboot, in two wordings.
		{"154 reboot", "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", true,
			Event{Code: 154, PCI: "0000:01:00", Text: "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"}, RemedyRebootNode},
		{"154 os reboot", "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (OS Reboot)", true,
			Event{Code: 154, PCI: "0000:01:00", Text: "GPU recovery action changed from 0x0 (None) to 0x2 (OS Reboot)"}, RemedyRebootNode},
		{"154 back to none", "NVRM: Xid (PCI:0000:01:00.0): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)", true,
			Event{Code: 154, PCI: "0000:01:00", Text: "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)"}, RemedyNone},
		// NVIDIA/open-gpu-kernel-modules issue 1150 (driver 590.48.01, a GB200 node): cleanups caused by NVLink5 errors.
		{"caused by previous", "NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149", true,
			Event{Code: 45, PCI: "0000:dc:00", Text: "pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149", Previous: 149}, RemedyCheckFabric},
		// leptonai/gpud pull request 117: a cleanup that names nothing.
		{"cleanup alone", "NVRM: Xid (PCI:0000:61:00): 45, pid=1496200, name=distprovers-gpu, Ch 0000000a", true,
			Event{Code: 45, PCI: "0000:61:00", Text: "pid=1496200, name=distprovers-gpu, Ch 0000000a"}, RemedyNone},
		// NVIDIA/NVSentinel issue 1357: the driver marks this NVLink5 error Nonfatal.
		{"nvlink5 nonfatal", "NVRM: Xid (PCI:0000:c5:00): 145, RLW_SRC_TRACK Nonfatal XC1 i0 Link 17 (0x04084507 0x00000004 0x00000000 0x00000000 0x00000000 0x00000000", true,
			Event{Code: 145, PCI: "0000:c5:00", Text: "RLW_SRC_TRACK Nonfatal XC1 i0 Link 17 (0x04084507 0x00000004 0x00000000 0x00000000 0x00000000 0x00000000"}, RemedyNone},
		// NVIDIA/NVSentinel, syslog-health-monitor parser tests: a fatal one.
		{"nvlink5 fatal", "NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 (0x025525c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)", true,
			Event{Code: 149, PCI: "0018:01:00", Text: "NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 (0x025525c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"}, RemedyCheckFabric},
		// NVIDIA/NVSentinel pull request 1270: a GSP timeout, with a process name holding brackets.
		{"gsp timeout", "NVRM: Xid (PCI:0002:00:00): 119, pid=1582259, name=nvc:[driver], Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20802a02 0x8).", true,
			Event{Code: 119, PCI: "0002:00:00", Text: "pid=1582259, name=nvc:[driver], Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20802a02 0x8)."}, RemedyResetGPU},
		// The driver's MIG form (kernel_rc.c): the GPU and compute instance after the address.
		{"mig instance", "NVRM: Xid (PCI:0000:3b:00 GPU-I:02 GPU-CI:01): 79, pid=1, name=x, GPU has fallen off the bus.", true,
			Event{Code: 79, PCI: "0000:3b:00", Text: "pid=1, name=x, GPU has fallen off the bus."}, RemedyRebootNode},
		// stas00/ml-engineering, compute/accelerator/nvidia/debug.md.
		{"row remap", "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.", true,
			Event{Code: 63, PCI: "0000:10:1c", Text: "pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate."}, RemedyNone},
		// What the watcher renders from an NVML event whose device lost its address (watcher/sample).
		{"address unknown", "NVRM: Xid (PCI:unknown): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus (NVML event)", true,
			Event{Code: 79, Text: "pid='<unknown>', name=<unknown>, GPU has fallen off the bus (NVML event)"}, RemedyRebootNode},
		{"unlisted code", "NVRM: Xid (PCI:0000:66:00): 999, pid=1234, name=test", true, Event{Code: 999, PCI: "0000:66:00", Text: "pid=1234, name=test"}, RemedyNone},
		{"not an xid line", "NVRM: GPU at PCI:0000:66:00: GPU-12345678-1234-5678-9abc-def012345678", false, Event{}, RemedyNone},
		{"no number", "NVRM: Xid (PCI:0000:66:00): abc, pid=2280636", false, Event{}, RemedyNone},
		{"number too large", "NVRM: Xid (PCI:0000:3b:00): 99999999999999999999, x", false, Event{}, RemedyNone},
		{"number run into a word", "NVRM: Xid (PCI:0000:3b:00): 79x", false, Event{}, RemedyNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, ok := Parse(tc.line)
			if ok != tc.ok || ev != tc.want {
				t.Fatalf("Parse(%q)\n got %+v %v\nwant %+v %v", tc.line, ev, ok, tc.want, tc.ok)
			}
			if r := ev.Remedy(); ok && r != tc.remedy {
				t.Errorf("remedy %q, want %q", r, tc.remedy)
			}
		})
	}
}

// TestCausedByPrevious: an XID caused by an earlier one is that one's
// effect; an XID that is a fault itself stays one.
func TestCausedByPrevious(t *testing.T) {
	line := func(code, prev int) string {
		return fmt.Sprintf("NVRM: Xid (PCI:0000:dc:00): %d, pid=1818990, name=python3, Ch 00000001 caused by previous Xid %d", code, prev)
	}
	cases := []struct {
		code, prev, blame int
		fault             bool
	}{
		{45, 48, 48, true},   // after a double-bit ECC error: a fault
		{45, 149, 149, true}, // after an NVLink5 error: a fault
		{45, 13, 13, false},  // after the application's own exception: not
		{43, 79, 79, true},
		{45, 999, 999, false}, // an unlisted cause counts for nothing
		{79, 13, 79, true},    // a fault stays a fault
		{45, 154, 154, true},  // 154 names no action here: support
	}
	for _, tc := range cases {
		ev, ok := Parse(line(tc.code, tc.prev))
		if !ok || ev.Previous != tc.prev || ev.Blame() != tc.blame || ev.Fault() != tc.fault {
			t.Errorf("%d after %d: %+v blame %d fault %v; want blame %d fault %v", tc.code, tc.prev, ev, ev.Blame(), ev.Fault(), tc.blame, tc.fault)
		}
	}
}

// TestRecoveryAction: XID 154 gives the remedy it names, by number first
// (NVML's nvmlDeviceGpuRecoveryAction_t), else by its words.
func TestRecoveryAction(t *testing.T) {
	for to, want := range map[string]Remedy{
		"0x0 (None)":                 RemedyNone,
		"0x1 (GPU Reset Required)":   RemedyResetGPU,
		"0x2 (Node Reboot Required)": RemedyRebootNode,
		"0x3 (Drain P2P)":            RemedyCheckFabric,
		"0x4 (Drain and Reset)":      RemedyResetGPU,
		"0x7 (System Reboot)":        RemedyRebootNode,
		"0x9 (Node Reboot Required)": RemedyRebootNode, // a number NVML does not know yet: the words
		"0x9 (Bus Reset)":            RemedyResetGPU,
		"0x9 (Something New)":        RemedyContactSupport,
	} {
		ev, _ := Parse("NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to " + to)
		if ev.Remedy() != want || ev.Fault() != want.Fault() || ev.Benign() != (want == RemedyNone) {
			t.Errorf("to %s: remedy %q fault %v benign %v, want %q", to, ev.Remedy(), ev.Fault(), ev.Benign(), want)
		}
	}
	// NVML's event for an XID 154 carries no text: support.
	ev, _ := Parse("NVRM: Xid (PCI:0000:18:00): 154, pid='<unknown>', name=<unknown>, GPU recovery action changed (NVML event)")
	if ev.Remedy() != RemedyContactSupport || !ev.Fault() {
		t.Errorf("154 without its action: %q", ev.Remedy())
	}
}

// FuzzParse: no panic; an event has a code in range, a normalised
// address and trimmed text; written back as the driver writes it, it
// reads back the same; Fault follows the rule the xid check applies.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		"NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
		"NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
		"NVRM: Xid (PCI:0000:c5:00): 145, RLW_SRC_TRACK Nonfatal XC1 i0 Link 17 (0x04084507",
		"NVRM: Xid (PCI:unknown): 13, x", "NVRM: Xid (PCI:0000:3B:00.7): 1,",
		"crash[32060]: segfault at 0 ip 0000 sp 0000 error 4 in NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus[400000+1000]", "NVRM: Xid (PCI:0000:3b:00): 99999999999999999999, x",
	} {
		f.Add(s)
	}
	faults := map[int]bool{}
	for _, c := range Faults() {
		faults[c] = true
	}
	f.Fuzz(func(t *testing.T, line string) {
		ev, ok := Parse(line)
		if !ok {
			if ev != (Event{}) {
				t.Fatalf("no event, but %+v", ev)
			}
			return
		}
		if ev.Code < 0 || ev.Code > MaxCode || ev.Previous < 0 || ev.Text != strings.TrimSpace(ev.Text) ||
			strings.ContainsAny(ev.PCI, ".)") || strings.ToLower(ev.PCI) != ev.PCI {
			t.Fatalf("%q: event %+v", line, ev)
		}
		addr := ev.PCI
		if addr == "" {
			addr = "unknown"
		}
		back := fmt.Sprintf("NVRM: Xid (PCI:%s): %d, %s", addr, ev.Code, ev.Text)
		if again, ok := Parse(back); !ok || again != ev {
			t.Fatalf("%+v written as %q reads back as %+v, %v", ev, back, again, ok)
		}
		if ev.Fault() != (faults[ev.Blame()] && !ev.Benign()) {
			t.Fatalf("%q: fault %v, but blame %d in the fault list %v, benign %v", line, ev.Fault(), ev.Blame(), faults[ev.Blame()], ev.Benign())
		}
	})
}

// TestForgedLines: text a user can make the kernel print is no XID. The
// kernel starts a segfault line with the process name (at most 15 bytes)
// and ends it with the name of the file the crashing code came from,
// both the user's choice; a driver's line starts with "NVRM: Xid (PCI:"
// and an address.
func TestForgedLines(t *testing.T) {
	for name, line := range map[string]string{
		"file name": "crash[32060]: segfault at 0 ip 0000 sp 0000 error 4 in NVRM: Xid (PCI:0000:ff:00): 79, pid=1, GPU has fallen off the bus[400000+1000]",
		// As this kernel (6.18) logged it for a program run as nobody from
		// a file of that name: its first 15 bytes are the process name.
		"process and file name":        "NVRM: Xid (PCI:[8953]: segfault at 0 ip 0000561f513e1139 sp 00007fff432c98e0 error 4 in NVRM: Xid (PCI:0000:ff:00): 79, pid=1, GPU has fallen off the bus[1139,561f513e1000+1000] likely on CPU 0 (core 0, socket 0)",
		"process name, then file name": "NVRM: Xid ([32060]: segfault at 0 ip 0000 sp 0000 error 4 in x): 79, pid=1, GPU has fallen off the bus[400000+1000]",
		"process name before a colon":  "NVRM: Xid (PCI:: vm.overcommit_memory: 79, pid=1",
		"process name in a MIG shape":  "NVRM: Xid (PCI:[1]: segfault at 0 ip 0 sp 0 error 4 in 0000:3b:00 GPU-I:01): 79, x[1+1]",
		"a syslog line, unread":        "Nov 29 14:55:40 n7 kernel: crash[1]: segfault at 0 ip 0 sp 0 error 4 in kernel: NVRM: Xid (PCI:0000:3b:00): 79, x[1+1]",
		"indented":                     " NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
	} {
		if ev, ok := Parse(line); ok {
			t.Errorf("%s: %q reads as %+v", name, line, ev)
		}
	}
	// A real fatal NVLink5 error of a process the user named "Nonfatal"
	// stays a fault: only the driver's severity field counts.
	ev, ok := Parse("NVRM: Xid (PCI:0018:01:00): 149, pid=7, name=Nonfatal, NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 (0x025525c6 0x00000000)")
	if !ok || !ev.Fault() {
		t.Errorf("fatal XID 149 of a process named Nonfatal: %+v fault %v", ev, ev.Fault())
	}
}
