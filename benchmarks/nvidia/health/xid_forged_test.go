package health

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/internal/kmsg/kmsgtest"
	nvxid "github.com/vigil-hpc/vigil/internal/xid"
)

// forgedSegfault is the kernel's line for a process named comm that
// crashed in code mapped from a file named file (arch/x86/mm/fault.c,
// show_signal_msg): both names are the user's choice.
func forgedSegfault(comm, file string) string {
	return comm + "[32060]: segfault at 0 ip 0000561f513e1139 sp 00007fff432c98e0 error 4 in " + file +
		"[1139,561f513e1000+1000] likely on CPU 0 (core 0, socket 0)"
}

// forgedKernelLines are kernel messages a user can cause, quoting the
// lines of drivers at 0000:3b:00, a GPU of the node.
func forgedKernelLines() []string {
	const xid79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus"
	return []string{
		forgedSegfault("crash", xid79),
		forgedSegfault("NVRM: Xid (PCI:", xid79),
		forgedSegfault("NVRM: Xid (", "x): 79, pid=1, GPU has fallen off the bus"),
		forgedSegfault("NVRM: Xid (PCI:", "0000:3b:00): 79, pid=1, GPU has fallen off the bus"),
		forgedSegfault("crash", "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=x, An uncorrectable double bit error (DBE) has been detected"),
		forgedSegfault("crash", "NVRM: Xid (PCI:0000:3b:00): 119, pid=1, name=x, Timeout after 6s of waiting for RPC response from GPU0 GSP!"),
		forgedSegfault("crash", "NVRM: Xid (PCI:0000:3b:00 GPU-I:01 GPU-CI:00): 95, pid=1, name=x, Uncontained: FBHUB"),
		forgedSegfault("crash", "pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0"),
		forgedSegfault("crash", "dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, major alarm (fault)"),
	}
}

// TestXIDForgedLines: kernel lines a user can cause, and lines written to
// the kernel log from user space, read as nothing: no XID, no failure, no
// fault kept in the state (so nothing for the repair ladder, which acts on
// failures only), run after run; the driver's own record still counts. A
// syslog file's XID never fails: its lines can be a user's.
func TestXIDForgedLines(t *testing.T) {
	var kmsgDump, kernLog []string
	for i, l := range forgedKernelLines() {
		kmsgDump = append(kmsgDump, fmt.Sprintf("6,%d,%d,-;%s", 100+i, 1000+i, l))
		kernLog = append(kernLog, "Nov 29 14:55:40 n7 kernel: [ 3240.118812] "+l)
	}
	const real79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
	// Written to /dev/kmsg from user space (journald's ForwardToKMsg writes
	// "IDENT[PID]: MESSAGE" with an identifier the user chose): facility 1.
	kmsgDump = append(kmsgDump, "12,200,2000,-;"+real79, "14,201,2001,-;NVRM: Xid (PCI:0000:3b:00): 48, pid=1[77]: x",
		// A file name holding a newline: one record, the newline "\x0a".
		`6,202,2002,-;x\x0aNVRM: Xid (PC[2449]: segfault at 0 ip 000055e1d0fde139 sp 00007ffeb86514e0 error 4 in x\x0a`+
			real79+"[1139,55e1d0fde000+1000] likely on CPU 0 (core 0, socket 0)")
	// Another program's syslog line; the kernel's tag only as the user's text.
	kernLog = append(kernLog, "Nov 29 14:55:41 n7 logger: "+real79, "Nov 29 14:55:41 n7 python[77]: kernel: "+real79)
	// The same file name where the syslog daemon reads /proc/kmsg
	// (rsyslog's imklog): two lines, the second the kernel's to syslog.
	split := "Nov 29 14:55:42 n7 kernel: [  982.740549] x[2449]: segfault at 0 ip 000055e1d0fde139 sp 00007ffeb86514e0 error 4 in x\n" +
		"Nov 29 14:55:42 n7 kernel: [  982.740549] " + real79 + "[1139,55e1d0fde000+1000] likely on CPU 0 (core 0, socket 0)\n"

	pass, fail, unknown := benchmarks.StatusPass, benchmarks.StatusFail, benchmarks.StatusUnknown
	for _, tc := range []struct {
		name, log, real                  string
		forged, then                     benchmarks.Status
		forgedReason, reason, thenDevice string
	}{
		{"kmsg records", strings.Join(kmsgDump, "\n") + "\n", "4,300,3000,-;" + real79 + "\n", pass, fail, "", "XID79", "0000:3b:00"},
		{"kern.log", strings.Join(kernLog, "\n") + "\n", "Nov 29 14:56:00 n7 kernel: [ 3260.1] " + real79 + "\n", pass, unknown, "", "XIDInTextLog", ""},
		// Unknown when read; nothing is kept for the next run.
		{"kern.log, a newline in a file name", split, "", unknown, pass, "XIDInTextLog", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &fakeNVMLNode{initRet: nvml.ERROR_LIBRARY_NOT_FOUND}
			root, state := t.TempDir(), t.TempDir()
			gpuSysfs(t, root, "0000:3b:00.0")
			setBootID(t, root, "boot-1")
			writeFile(t, root, logSource, tc.log)
			run := func() benchmarks.Result {
				return (&xid{nvmlCheck{node.library()}}).Run(context.Background(), &benchmarks.Env{Settings: xidSettingsFor(t, root, state)})
			}
			for i := range 2 { // the second run reads the sticky state
				r := run()
				if i == 0 || tc.forged == pass {
					assert.Equal(t, tc.forged, r.Status, "run %d: %s", i+1, r.Message)
					assert.Equal(t, tc.forgedReason, r.Reason, "run %d: %s", i+1, r.Message)
				}
				assert.Empty(t, r.Values, "run %d", i+1)
				st, err := devcheck.LoadState[xidState](filepath.Join(state, "xid-state.json"))
				require.NoError(t, err)
				assert.Empty(t, st.Faults, "run %d kept a fault", i+1)
			}
			appendLog(t, root, tc.real)
			r := run()
			assert.Equal(t, tc.then, r.Status, r.Message)
			assert.Equal(t, tc.reason, r.Reason, r.Message)
			assert.Equal(t, tc.thenDevice, r.Device)
		})
	}
}

// TestXIDOtherAddress: an XID line in the driver's own form that names an
// address none of the node's NVIDIA GPUs has is noted and does not count;
// a fault kept by an earlier version for such an address is dropped.
func TestXIDOtherAddress(t *testing.T) {
	node := newHealthyNode()
	root, state := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(sysfsFixture(t, "dgx-h100.txt"), filepath.Join(root, "sys")))
	setBootID(t, root, "boot-1")
	source := filepath.Join(root, logSource)
	writeFile(t, root, logSource, "4,5,1,-;NVRM: Xid (PCI:0000:ff:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"+
		"4,6,2,-;NVRM: Xid (PCI:unknown): 79, pid=1, name=x, GPU has fallen off the bus.\n")
	// The state an earlier version left: a forged fault at an address of
	// no GPU here, and a real one of gpu2, both without their device.
	old := xidState{BootID: "boot-1", Source: source, Faults: []xidEvent{
		{Event: nvxid.Event{Code: 79, PCI: "0000:ff:00", Text: "pid=1, GPU has fallen off the bus[400000+1000]"}},
		{Event: nvxid.Event{Code: 48, PCI: "0000:3a:00", Text: "pid=9, name=python, An uncorrectable double bit error"}},
	}}
	b, err := json.Marshal(old)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(state, "xid-state.json"), b, 0o600))

	r := (&xid{nvmlCheck{node.library()}}).Run(context.Background(), &benchmarks.Env{Settings: xidSettingsFor(t, root, state)})
	assert.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
	assert.Equal(t, "XID48", r.Reason, "the earlier real fault still leads")
	assert.Equal(t, "gpu2", r.Device)
	assert.Contains(t, r.Message, "XID 79 at PCI:0000:ff:00 ignored: not an NVIDIA GPU of this node")
	assert.Contains(t, r.Message, "XID 79 at PCI:unknown ignored")
	assert.Contains(t, r.Message, "XID 79 of an earlier run at PCI:0000:ff:00 dropped")
	assert.Empty(t, r.Values)
	st, err := devcheck.LoadState[xidState](filepath.Join(state, "xid-state.json"))
	require.NoError(t, err)
	require.Len(t, st.Faults, 1)
	assert.Equal(t, "gpu2", st.Faults[0].Device)
}

// TestXIDRealSegfault: a program run as nobody from a file named like the
// driver's XID 79 line of a GPU of this node crashes; the kernel logs that
// text (in the process name and the file name of its segfault line), and
// the xid check over the real /dev/kmsg reads it as nothing.
func TestXIDRealSegfault(t *testing.T) {
	const forged = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus"
	raw, rec := kmsgtest.Segfault(t, forged)
	t.Logf("the kernel logged: %s", raw)
	require.Contains(t, rec.Text, " in "+forged+"[", "the kernel's line carries the file's name")
	require.True(t, strings.HasPrefix(rec.Text, "NVRM: Xid (PCI:["), "the process name starts the line: %q", rec.Text)
	require.False(t, rec.User, "the segfault line is the kernel's own")
	_, ok := parseXID(rec)
	assert.False(t, ok, "the segfault line read as an XID")

	// The whole check over the real device, the GPU at 0000:3b:00 being
	// one of the node's, from a fresh state: every record in the buffer.
	root, state := t.TempDir(), t.TempDir()
	gpuSysfs(t, root, "0000:3b:00.0")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dev"), 0o755))
	require.NoError(t, os.Symlink(kmsgtest.Device, filepath.Join(root, "dev", "kmsg")))
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	require.NoError(t, err)
	setBootID(t, root, strings.TrimSpace(string(boot)))
	node := &fakeNVMLNode{initRet: nvml.ERROR_LIBRARY_NOT_FOUND}
	for i := range 2 {
		env := &benchmarks.Env{Settings: settings(t, fmt.Sprintf("root = %q\nsource = \"/dev/kmsg\"\nstate_dir = %q", root, state))}
		r := (&xid{nvmlCheck{node.library()}}).Run(context.Background(), env)
		assert.Equal(t, benchmarks.StatusPass, r.Status, "run %d: %s", i+1, r.Message)
		assert.Empty(t, r.Values, "run %d", i+1)
		st, err := devcheck.LoadState[xidState](filepath.Join(state, "xid-state.json"))
		require.NoError(t, err)
		assert.Empty(t, st.Faults, "run %d kept a fault", i+1)
		assert.NotZero(t, st.Seq, "the check read the device")
	}
}
