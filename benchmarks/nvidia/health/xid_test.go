package health

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/internal/kmsg"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	nvxid "github.com/vigil-hpc/vigil/internal/xid"
)

// logSource is where newLogRoot puts the kernel log fixture, below the root.
const logSource = "/var/log/kern.log"

// newLogRoot makes a root holding a boot id and, at logSource, a copy of
// testdata/kmsg/<fixture>.
func newLogRoot(t *testing.T, bootID, fixture string) string {
	t.Helper()
	root := t.TempDir()
	setBootID(t, root, bootID)
	b, err := os.ReadFile(filepath.Join("testdata", "kmsg", fixture))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "var", "log"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, logSource), b, 0o644))
	return root
}

func setBootID(t *testing.T, root, id string) {
	t.Helper()
	dir := filepath.Join(root, "proc", "sys", "kernel", "random")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "boot_id"), []byte(id+"\n"), 0o444))
}

func appendLog(t *testing.T, root, text string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(root, logSource), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(text)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func xidSettingsFor(t *testing.T, root, stateDir string, extra ...string) func(v any) error {
	return settings(t, fmt.Sprintf("root = %q\nsource = %q\nstate_dir = %q\n%s", root, logSource, stateDir, strings.Join(extra, "\n")))
}

func TestParseXID(t *testing.T) {
	cases := []struct {
		line string
		ok   bool
		want xidEvent
	}{
		{"4,2107,733100001,-;NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", true,
			xidEvent{Event: nvxid.Event{Code: 79, PCI: "0000:3a:00", Text: "pid='<unknown>', name=<unknown>, GPU has fallen off the bus."}, Seq: 2107}},
		{"Nov 29 14:55:40 n7 kernel: [ 3240.118812] NVRM: Xid (PCI:0000:DB:00): 48, pid=9001, name=python, An uncorrectable double bit error", true,
			xidEvent{Event: nvxid.Event{Code: 48, PCI: "0000:db:00", Text: "pid=9001, name=python, An uncorrectable double bit error"}}},
		{"NVRM: Xid (PCI:0000:01:00.0): 13, Graphics Exception", true, xidEvent{Event: nvxid.Event{Code: 13, PCI: "0000:01:00", Text: "Graphics Exception"}}},
		// NVIDIA/open-gpu-kernel-modules issue 1150 (driver 590.48.01): a cleanup caused by an NVLink5 error.
		{"4,9100,1,-;NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149", true,
			xidEvent{Event: nvxid.Event{Code: 45, PCI: "0000:dc:00", Text: "pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149", Previous: 149}, Seq: 9100}},
		{"6,1022,11234890,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module", false, xidEvent{}},
		{"NVRM: GPU 0000:3a:00.0: GPU has fallen off the bus.", false, xidEvent{}},
	}
	for _, tc := range cases {
		t.Run(tc.line[:24], func(t *testing.T) {
			ev, ok := parseXID(parseLogLine([]byte(tc.line + "\n")))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, ev)
		})
	}
}

// TestXIDDefaults: the shipped fault_xids are the catalogue's faults.
func TestXIDDefaults(t *testing.T) {
	s := defaultXidSettings()
	assert.Equal(t, nvxid.Faults(), s.FaultXIDs)
	for _, x := range []int{48, 64, 74, 79, 95, 119, 120, 140, 154} {
		assert.Contains(t, s.FaultXIDs, x, "XID %d is a fault", x)
	}
	for _, x := range []int{13, 31, 43, 45, 63, 68, 69, 92, 94, 121} {
		assert.NotContains(t, s.FaultXIDs, x, "XID %d needs nothing beyond the application", x)
	}
}

func TestXID(t *testing.T) {
	fail, unknown, pass := benchmarks.StatusFail, benchmarks.StatusUnknown, benchmarks.StatusPass
	cases := []struct {
		name    string
		fixture string
		extra   []string
		devices []int
		noNVML  bool
		sysfs   string // the node's PCI devices under <root>/sys: testdata/sysfs/<sysfs>
		visible int    // GPUs NVML sees, when not all
		lostPCI int    // a GPU whose address NVML cannot read (0: none)
		status  benchmarks.Status
		reason  string
		device  string
		msg     []string
		values  int // XID values recorded
	}{
		{name: "healthy", fixture: "healthy.txt", status: pass, msg: []string{"no fault XIDs (0 XID messages since the last check)"}},
		{name: "xid 79", fixture: "xid79.txt", status: fail, reason: "XID79", device: "gpu2", values: 3,
			msg: []string{"gpu2 XID 79 (GPU has fallen off the bus): pid='<unknown>'", "gpu4 XID 13 (job error: graphics engine exception)"}},
		{name: "xid 79 on a device of the job", fixture: "xid79.txt", devices: []int{2, 3}, status: fail, reason: "XID79", device: "gpu2", values: 1},
		{name: "xid 79 on another job's device", fixture: "xid79.txt", devices: []int{4}, status: pass, values: 2,
			msg: []string{"gpu4 XID 43 (job error: GPU stopped processing)"}},
		{name: "xid 79 without NVML", fixture: "xid79.txt", sysfs: "dgx-h100.txt", devices: []int{4}, noNVML: true,
			status: fail, reason: "XID79", device: "0000:3a:00", values: 3},
		{name: "xid 79, no GPU list", fixture: "xid79.txt", noNVML: true, status: unknown, reason: "GPUListUnreadable",
			msg: []string{"XID 79 at PCI:0000:3a:00 not counted: the node's NVIDIA GPUs could not be listed", "XID 13 at PCI:0000:9a:00 not counted"}},
		{name: "xid 79 of a GPU NVML lost", fixture: "xid79.txt", sysfs: "dgx-h100.txt", visible: 2, status: fail, reason: "XID79", device: "0000:3a:00", values: 3},
		{name: "xid 79 of no GPU of the node", fixture: "xid79.txt", sysfs: "cpu-only.txt", noNVML: true, status: pass,
			msg: []string{"XID 79 at PCI:0000:3a:00 ignored: not an NVIDIA GPU of this node"}},
		// NVML cannot tell gpu2's address, and there is no sysfs to: its
		// XID 79 may be the node's, or not.
		{name: "xid 79, an address NVML lost", fixture: "xid79.txt", lostPCI: 2, status: unknown, reason: "GPUListUnreadable", values: 2,
			msg: []string{"XID 79 at PCI:0000:3a:00 not counted: the node's NVIDIA GPUs could not be listed (NVML: gpu2's address: ", "gpu4 XID 13"}},
		{name: "job errors only", fixture: "jobxid.txt", status: pass, values: 2,
			msg: []string{"gpu0 XID 31 (job error: GPU memory page fault)", "gpu0 XID 45"}},
		// A syslog file's lines can be a user's: its XIDs never fail.
		{name: "double-bit ECC in kern.log", fixture: "kern.log", status: unknown, reason: "XIDInTextLog",
			msg: []string{"XID 48 at PCI:0000:db:00 not counted: read from a text log", `set source = "/dev/kmsg"`, "XID 45 at PCI:0000:db:00 not counted"}},
		{name: "custom fault list", fixture: "xid79.txt", extra: []string{"fault_xids = [13]"},
			status: fail, reason: "XID13", device: "gpu4", values: 3},
		{name: "empty fault list", fixture: "xid79.txt", extra: []string{"fault_xids = []"}, status: pass, values: 3},
		{name: "missing log", fixture: "healthy.txt", extra: []string{"source = '/var/log/nope'"},
			status: unknown, reason: "KernelLogUnreadable", msg: []string{"no such file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := newHealthyNode()
			if tc.noNVML {
				node.initRet = nvml.ERROR_LIBRARY_NOT_FOUND
			}
			if tc.visible > 0 {
				node.visible = tc.visible
			}
			if tc.lostPCI > 0 {
				node.gpus[tc.lostPCI].errs["pci"] = nvml.ERROR_GPU_IS_LOST
			}
			root := newLogRoot(t, "boot-1", tc.fixture)
			if tc.sysfs != "" {
				require.NoError(t, os.Symlink(sysfsFixture(t, tc.sysfs), filepath.Join(root, "sys")))
			}
			table := fmt.Sprintf("root = %q\nstate_dir = %q\n", root, t.TempDir())
			if !strings.Contains(strings.Join(tc.extra, ""), "source") {
				table += fmt.Sprintf("source = %q\n", logSource)
			}
			env := &benchmarks.Env{Devices: tc.devices, Settings: settings(t, table+strings.Join(tc.extra, "\n"))}
			r := (&xid{nvmlCheck{node.library()}}).Run(context.Background(), env)
			assert.Equal(t, tc.status, r.Status, r.Message)
			assert.Equal(t, tc.reason, r.Reason, r.Message)
			assert.Equal(t, tc.device, r.Device, r.Message)
			for _, m := range tc.msg {
				assert.Contains(t, r.Message, m)
			}
			assert.Len(t, r.Values, tc.values, "%+v", r.Values)
		})
	}
}

// TestXIDSinceLastCheck runs the check repeatedly over a growing log.
func TestXIDSinceLastCheck(t *testing.T) {
	node := newHealthyNode()
	root := newLogRoot(t, "boot-1", "xid79.txt")
	state := t.TempDir()
	run := func(extra ...string) benchmarks.Result {
		t.Helper()
		env := &benchmarks.Env{Settings: xidSettingsFor(t, root, state, extra...)}
		return (&xid{nvmlCheck{node.library()}}).Run(context.Background(), env)
	}

	r := run()
	require.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
	assert.Equal(t, "XID79", r.Reason)
	assert.Len(t, r.Values, 3)

	// Nothing new: the XID 79 of this boot still fails (sticky) ...
	r = run()
	assert.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
	assert.Equal(t, "XID79", r.Reason)
	assert.Empty(t, r.Values, "no new XID messages")
	// ... unless only new messages count.
	r = run("sticky = false")
	assert.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	assert.Contains(t, r.Message, "0 XID messages since the last check")

	var st xidState
	b, err := os.ReadFile(filepath.Join(state, "xid-state.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &st))
	assert.Equal(t, "boot-1", st.BootID)
	info, err := os.Stat(filepath.Join(root, logSource))
	require.NoError(t, err)
	assert.Equal(t, info.Size(), st.Offset)
	require.Len(t, st.Faults, 1)
	assert.Equal(t, 79, st.Faults[0].Code)

	// After a reboot the old fault is gone and the old lines are not read again.
	setBootID(t, root, "boot-2")
	r = run()
	assert.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	assert.Empty(t, r.Values)

	// A contained ECC error is the job's (NVIDIA: restart the
	// application); a new fault, and an unfinished line that is read once
	// complete.
	appendLog(t, root, "4,3000,9000000,-;NVRM: Xid (PCI:0000:18:00): 94, pid=77, name=python, Contained: SM (0x1). RST: No, D-RST: No\n")
	r = run()
	assert.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	assert.Contains(t, r.Message, "gpu0 XID 94 (job error: contained ECC error)")
	appendLog(t, root, "4,3001,10000000,-;NVRM: Xid (PCI:0000:18:00): 48, pid=77, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 3, subpartition 0.\n4,3002,11000000,-;NVRM: Xid (PCI:0000:2a:00): 95,")
	r = run()
	assert.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
	assert.Equal(t, "XID48", r.Reason)
	assert.Equal(t, "gpu0", r.Device)
	assert.Len(t, r.Values, 1)
	appendLog(t, root, " pid=78, name=python, Uncontained: FBHUB\n")
	r = run()
	assert.Equal(t, "XID48", r.Reason, "the first fault of this boot still leads")
	assert.Contains(t, r.Message, "gpu1 XID 95 (uncontained ECC error)")
	assert.Len(t, r.Values, 1)

	// An unreadable log leaves the position where it was.
	path := filepath.Join(root, logSource)
	require.NoError(t, os.Rename(path, path+".away"))
	r = run("sticky = false")
	assert.Equal(t, benchmarks.StatusUnknown, r.Status, r.Message)
	assert.Equal(t, "KernelLogUnreadable", r.Reason)
	require.NoError(t, os.Rename(path+".away", path))
	r = run("sticky = false")
	assert.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	assert.Empty(t, r.Values, "nothing is read twice")

	// A rotated log (new file, shorter) is read from its start.
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.WriteFile(path, []byte("4,1,1,-;NVRM: Xid (PCI:0000:5d:00): 74, NVLink: fatal error\n"), 0o644))
	r = run("sticky = false")
	assert.Equal(t, "XID74", r.Reason, r.Message)
	assert.Equal(t, "gpu3", r.Device)
}

// TestXIDDryRun: a dry run reports what a real run would, and leaves the
// node as it found it: no state directory, lock or position written.
func TestXIDDryRun(t *testing.T) {
	node := newHealthyNode()
	root := newLogRoot(t, "boot-1", "xid79.txt")
	state := filepath.Join(t.TempDir(), "state")
	run := func(dry bool, extra ...string) benchmarks.Result {
		t.Helper()
		env := &benchmarks.Env{DryRun: dry, Settings: xidSettingsFor(t, root, state, extra...)}
		return (&xid{nvmlCheck{node.library()}}).Run(context.Background(), env)
	}

	r := run(true)
	assert.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
	assert.Equal(t, "XID79", r.Reason)
	assert.Len(t, r.Values, 3)
	_, err := os.Stat(state)
	assert.ErrorIs(t, err, os.ErrNotExist, "a dry run creates no state directory")

	// A real run records the position; a dry run after it reads that
	// state (nothing new since) and changes nothing in the directory.
	real := run(false)
	assert.Equal(t, r.Status, real.Status)
	assert.Equal(t, r.Message, real.Message)
	before := dirSnapshot(t, state)
	require.Contains(t, before, "xid-state.json")
	appendLog(t, root, "4,3001,10000000,-;NVRM: Xid (PCI:0000:18:00): 95, pid=77, name=python, Uncontained: FBHUB\n")
	r = run(true, "sticky = false")
	assert.Equal(t, "XID95", r.Reason, r.Message)
	assert.Len(t, r.Values, 1, "only the line logged since the real run")
	assert.Equal(t, before, dirSnapshot(t, state), "a dry run leaves the state as it was")
	r = run(true, "sticky = false")
	assert.Equal(t, "XID95", r.Reason, "the position did not move, so the line counts again")
}

// dirSnapshot maps the names of the files in dir to their contents.
func dirSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

// TestXIDCorruptState: a damaged state file is noted and replaced.
func TestXIDCorruptState(t *testing.T) {
	root := newLogRoot(t, "boot-1", "healthy.txt")
	state := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(state, "xid-state.json"), []byte("{not json"), 0o644))
	env := &benchmarks.Env{Settings: xidSettingsFor(t, root, state)}
	r := (&xid{nvmlCheck{newHealthyNode().library()}}).Run(context.Background(), env)
	assert.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	assert.Contains(t, r.Message, "state ignored")
	_, err := devcheck.LoadState[xidState](filepath.Join(state, "xid-state.json"))
	require.NoError(t, err)
}

// TestReadKmsgDevice reads this machine's /dev/kmsg, with two marker
// messages written to it (as root), to check the sequence bookkeeping on
// the real character device: a record written from user space (as the
// markers are: the kernel gives them LOG_USER) is never returned, and the
// position moves past it.
func TestReadKmsgDevice(t *testing.T) {
	const dev = "/dev/kmsg"
	require.True(t, isCharDevice(dev), "%s is missing: the kernel log device is needed (run the tests as root on Linux)", dev)
	var b [6]byte
	_, _ = rand.Read(b[:])
	marker := "vigil-health-test " + hex.EncodeToString(b[:])
	write := func(msg string) uint64 {
		f, err := os.OpenFile(dev, os.O_WRONLY, 0)
		require.NoError(t, err, "writing %s needs root", dev)
		_, err = f.WriteString("<0>" + msg + "\n") // asks for the kernel's facility: not given
		require.NoError(t, err)
		require.NoError(t, f.Close())
		return rawSeq(t, dev, msg)
	}
	has := func(lines []kmsg.Record, s string) bool {
		for _, l := range lines {
			if strings.Contains(l.Text, s) {
				return true
			}
		}
		return false
	}
	seq1 := write(marker + " one")
	lines, last, err := readKmsg(dev, 0, true)
	require.NoError(t, err)
	assert.False(t, has(lines, marker), "a record written from user space was returned")
	assert.GreaterOrEqual(t, last, seq1, "the position stops before a record written from user space")

	seq2 := write(marker + " two")
	lines, last2, err := readKmsg(dev, last, false)
	require.NoError(t, err)
	assert.False(t, has(lines, marker))
	assert.GreaterOrEqual(t, last2, seq2)
	for _, l := range lines {
		assert.Greater(t, l.Seq, last)
	}

	// The whole check over the real device: readable, nothing unknown.
	env := &benchmarks.Env{Settings: settings(t, fmt.Sprintf("state_dir = %q", t.TempDir()))}
	r := (&xid{nvmlCheck{(&fakeNVMLNode{initRet: nvml.ERROR_LIBRARY_NOT_FOUND}).library()}}).Run(context.Background(), env)
	assert.NotEqual(t, benchmarks.StatusUnknown, r.Status, r.Message)
}

// rawSeq finds the record holding msg in the kmsg device at path, read
// raw, and returns its sequence number; the record must carry a facility
// other than the kernel's.
func rawSeq(t *testing.T, path, msg string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	fd := int(f.Fd())
	require.NoError(t, syscall.SetNonblock(fd, true))
	buf := make([]byte, 16<<10)
	for {
		n, err := syscall.Read(fd, buf)
		if errors.Is(err, syscall.EPIPE) {
			continue
		}
		require.NoError(t, err, "record %q not found in %s", msg, path)
		rec := string(buf[:n])
		if !strings.Contains(rec, ";"+msg) {
			continue
		}
		var prio int
		var seq uint64
		_, err = fmt.Sscanf(rec, "%d,%d,", &prio, &seq)
		require.NoError(t, err)
		require.NotZero(t, prio>>3, "the kernel gave a record written from user space its own facility: %q", rec)
		return seq
	}
}
