package xid

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/internal/pci"
)

// MaxCode is the largest XID number Parse accepts; a line with a larger
// one is not an XID line.
const MaxCode = 1 << 16

// Event is one XID line of the kernel log.
type Event struct {
	// Code is the XID number.
	Code int `json:"xid"`
	// PCI is the device's PCI address as the driver prints it, normalised
	// and without the function ("0000:3b:00"); "" when the line names no
	// address ("PCI:unknown").
	PCI string `json:"pci"`
	// Text is the driver's message after the XID number, trimmed.
	Text string `json:"text"`
	// Previous is the XID the line says this one was caused by ("...
	// caused by previous Xid 149"), 0 when it names none.
	Previous int `json:"previous,omitempty"`
}

var (
	// reLine is the driver's XID line, from the start of the kernel
	// message: "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU
	// has fallen off the bus." The driver prints the address as
	// "%04x:%02x:%02x" (src/nvidia/src/kernel/gpu/rc/kernel_rc.c), on a MIG
	// GPU followed by " GPU-I:%02u" and " GPU-CI:%02u"; a function (".0")
	// and upper case are taken too, and "PCI:unknown", which the watcher
	// of older versions wrote for an NVML event of a device without an
	// address. Matching from the start is what keeps a user's words out: a
	// user can put any text into a kernel message (a segfault line names
	// the file the crashing code came from, "crash[32060]: segfault at 0
	// ... in NVRM: Xid (PCI:0000:3b:00): 79, ...[400000+1000]"), but only
	// after what the kernel prints first; a process name, which the kernel
	// may print first, holds at most 15 bytes and is followed by "[" or
	// ":", never by an address.
	reLine = regexp.MustCompile(`^NVRM: Xid \(PCI:([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?|unknown)(?: GPU-I:\d+)?(?: GPU-CI:\d+)?\): (\d+)\b,?[ \t]*(.*)`)
	// rePrevious: "Ch 00000001 caused by previous Xid 149"
	// (NVIDIA/open-gpu-kernel-modules issue 1150, driver 590.48.01).
	rePrevious = regexp.MustCompile(`(?i)\bcaused by previous Xid (\d+)\b`)
	// reAction: XID 154's "GPU recovery action changed from 0x0 (None) to
	// 0x2 (Node Reboot Required)".
	reAction = regexp.MustCompile(`(?i)recovery action changed from \S+(?: \([^)]*\))? to (0x[0-9a-f]+|\d+)(?: \(([^)]*)\))?`)
	// reNonfatal: the driver's severity word in an NVLink5 XID line,
	// "145, RLW_SRC_TRACK Nonfatal XC1 i0 Link 17 (0x04084507 ...", with
	// the unit and link around it, so that a process name in the line
	// ("name=Nonfatal") cannot pass for it.
	reNonfatal = regexp.MustCompile(`\b[A-Z][A-Z0-9_]* +(?i:non-?fatal) +XC\d+ +i\d+ +Link \d+`)
)

// Parse returns the XID event of a kernel message (the Text of a
// kmsg.Record: a /dev/kmsg record's message, or a kern.log line without
// its syslog header), and false for a message that is not the driver's
// XID line, which starts with "NVRM: Xid (PCI:" and a PCI address. A
// message that only holds such a line further on is not one: that is
// text a user can make the kernel print.
func Parse(line string) (Event, bool) {
	m := reLine.FindStringSubmatch(line)
	if m == nil {
		return Event{}, false
	}
	code, err := strconv.Atoi(m[2])
	if err != nil || code > MaxCode {
		return Event{}, false
	}
	ev := Event{Code: code, Text: strings.TrimSpace(m[3])}
	if m[1] != "unknown" {
		ev.PCI, _, _ = strings.Cut(pci.Normalise(m[1]), ".")
	}
	if p := rePrevious.FindStringSubmatch(ev.Text); p != nil {
		if n, err := strconv.Atoi(p[1]); err == nil && n > 0 && n <= MaxCode {
			ev.Previous = n
		}
	}
	return ev, true
}

// Blame is the XID whose entry classifies the event: the earlier XID the
// line says caused it, unless its own entry is a fault; else its own. A
// cleanup after a double-bit ECC error ("45, ... caused by previous Xid
// 48") is the ECC error's effect and a fault; one after a page fault is not.
func (e Event) Blame() int {
	if e.Previous > 0 {
		if own, ok := Lookup(e.Code); !ok || !own.Fault() {
			return e.Previous
		}
	}
	return e.Code
}

// Benign reports whether the line itself says the device needs nothing
// although its code can be a fault: an XID 154 naming no recovery action
// ("to 0x0 (None)"), or an NVLink5 XID (144-150) the driver marks
// Nonfatal, whose rows in the catalogue's "XID 144-150 Decode" sheet
// resolve to IGNORE, or to XID_154_EVAL (the XID 154 that follows, if
// any, names the action).
func (e Event) Benign() bool {
	switch b := e.Blame(); {
	case b != e.Code:
		return false
	case b == 154:
		r, ok := namedRemedy(e.Text)
		return ok && r == RemedyNone
	case b >= 144 && b <= 150:
		return reNonfatal.MatchString(e.Text)
	}
	return false
}

// Remedy is what the event needs: its Blame's catalogue remedy; for XID
// 154 the recovery action it names (contact support when it names none
// that can be read); none for a Benign line or an XID the catalogue does
// not list.
func (e Event) Remedy() Remedy {
	if e.Benign() {
		return RemedyNone
	}
	b := e.Blame()
	info, ok := Lookup(b)
	if !ok {
		return RemedyNone
	}
	if info.Remedy != RemedyAsNamed {
		return info.Remedy
	}
	if r, ok := namedRemedy(e.Text); ok && b == e.Code {
		return r
	}
	return RemedyContactSupport
}

// Fault reports whether the event is a device fault (Remedy().Fault()).
// It equals "Blame is a fault code and the line is not Benign", the rule
// the xid check applies to its fault_xids.
func (e Event) Fault() bool { return e.Remedy().Fault() }

// recoveryActions are NVML's nvmlDeviceGpuRecoveryAction_t values, which
// XID 154 prints ("0x1 (GPU Reset Required)"): NONE 0, GPU_RESET 1,
// NODE_REBOOT 2, DRAIN_P2P 3, DRAIN_AND_RESET 4, RECOVER_IMEX_DOMAIN 5,
// BUS_RESET 6, SYSTEM_REBOOT 7 (cuda-python's cuda.bindings.nvml
// DeviceGpuRecoveryAction; NVIDIA's A100 memory error management guide,
// "Error Recovery and Response Flags").
var recoveryActions = []Remedy{
	RemedyNone, RemedyResetGPU, RemedyRebootNode, RemedyCheckFabric,
	RemedyResetGPU, RemedyCheckFabric, RemedyResetGPU, RemedyRebootNode,
}

// namedRemedy reads the recovery action an XID 154 line names: by its
// number, else by its words ("Node Reboot Required", "OS Reboot").
func namedRemedy(text string) (Remedy, bool) {
	m := reAction.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	if n, err := strconv.ParseUint(m[1], 0, 8); err == nil && int(n) < len(recoveryActions) {
		return recoveryActions[n], true
	}
	words := strings.ToLower(m[2])
	switch {
	case strings.Contains(words, "reboot"):
		return RemedyRebootNode, true
	case strings.Contains(words, "reset"), strings.Contains(words, "flr"):
		return RemedyResetGPU, true
	case strings.Contains(words, "drain"), strings.Contains(words, "imex"):
		return RemedyCheckFabric, true
	case words == "none":
		return RemedyNone, true
	}
	return 0, false
}
