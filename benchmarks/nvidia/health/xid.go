package health

import (
	"context"
	"fmt"
	"github.com/vigil-hpc/vigil/internal/kmsg"
	"os"
	"path/filepath"
	"strings"

	log "github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	nvxid "github.com/vigil-hpc/vigil/internal/xid"
)

// ReasonKernelLogUnreadable: the kernel log could not be read (unknown).
// A fault XID fails the check with the reason "XID<n>" ("XID79"); an XID
// caused by an earlier one ("45, ... caused by previous Xid 48") with the
// earlier one's ("XID48").
const ReasonKernelLogUnreadable = "KernelLogUnreadable"

// ReasonGPUListUnreadable: a fault XID was logged, but neither NVML nor
// sysfs could list the node's NVIDIA GPUs, so the address it names could
// not be checked (unknown): an XID counts only for a GPU of this node.
const ReasonGPUListUnreadable = "GPUListUnreadable"

// ReasonXIDInTextLog: a fault XID was read from a text log (source is a
// syslog file, not /dev/kmsg), whose lines a user can write (unknown).
const ReasonXIDInTextLog = "XIDInTextLog"

// xidEvent is one XID found in the kernel log: the driver's line as
// internal/xid reads it (JSON keys "xid", "pci", "text", "previous"), and
// where it was.
type xidEvent struct {
	nvxid.Event
	// Seq is the kmsg sequence number, 0 when read from a text file.
	Seq uint64 `json:"seq,omitempty"`
	// Device is the GPU of this node the XID's address belongs to ("gpu2",
	// or the address of a GPU that sysfs lists and NVML does not), set
	// once the address was checked (gpuList.own); "" before.
	Device string `json:"device,omitempty"`
}

// parseXID returns the XID event of a kernel message, if it is the
// driver's XID line: never for a message written from user space, nor
// for one that holds an XID line further on (nvxid.Parse).
func parseXID(l kmsg.Record) (xidEvent, bool) {
	if l.User {
		return xidEvent{}, false
	}
	ev, ok := nvxid.Parse(l.Text)
	if !ok {
		return xidEvent{}, false
	}
	return xidEvent{Event: ev, Seq: l.Seq}, true
}

// faultRule decides which XID events fail the check: those whose Blame
// (the XID itself, or the earlier one it says caused it) is in
// fault_xids, unless the line says the device needs nothing (an XID 154
// naming no recovery action, an NVLink5 XID marked Nonfatal). With the
// shipped fault_xids (nvxid.Faults) this is exactly nvxid.Event.Fault,
// the watcher's rule.
type faultRule map[int]bool

func newFaultRule(codes []int) faultRule {
	r := faultRule{}
	for _, x := range codes {
		r[x] = true
	}
	return r
}

func (r faultRule) fails(ev xidEvent) bool { return r[ev.Blame()] && !ev.Benign() }

// xidState is what the xid check remembers between runs.
type xidState struct {
	// BootID is the kernel's boot id the position belongs to.
	BootID string `json:"boot_id"`
	// Source is the log the position belongs to.
	Source string `json:"source"`
	// Seq is the last kmsg sequence number read (character device source).
	Seq uint64 `json:"seq,omitempty"`
	// Offset and Inode are the position in a text log file.
	Offset int64  `json:"offset,omitempty"`
	Inode  uint64 `json:"inode,omitempty"`
	// Faults are the fault XIDs seen since boot (sticky mode).
	Faults []xidEvent `json:"faults,omitempty"`
}

// maxStickyFaults bounds the faults kept in the state file.
const maxStickyFaults = 64

// xidSettings are the settings of [checks.xid].
type xidSettings struct {
	// Source is the kernel log: the /dev/kmsg character device, or a text
	// file (a dump of /dev/kmsg's records, or kern.log) read from where the
	// last run stopped. Only records count: an XID of a syslog or dmesg
	// line makes the check unknown (ReasonXIDInTextLog), as a user can
	// write such a line.
	Source string `toml:"source"`
	// Root is prefixed to Source, to /proc/sys/kernel/random/boot_id and
	// to /sys, where the node's NVIDIA GPUs are listed.
	Root string `toml:"root"`
	// StateDir holds the last-read position and the faults seen this boot.
	StateDir string `toml:"state_dir"`
	// FaultXIDs are the XIDs that fail the check; it replaces the
	// catalogue's faults (internal/xid).
	FaultXIDs []int `toml:"fault_xids"`
	// Sticky keeps failing on a fault XID until the node reboots; when
	// false only XIDs logged since the last run count.
	Sticky bool `toml:"sticky"`
}

// xid reads the XID errors the NVIDIA driver logged since the last run. A
// dry run (Env.DryRun) reads the saved position but writes nothing.
type xid struct{ nvmlCheck }

func init() { benchmarks.Register(&xid{nvmlCheck{shared}}) }

// Spec describes the check.
func (*xid) Spec() benchmarks.Descriptor {
	return nvmlFact(benchmarks.Descriptor{Name: "xid",
		Description: "XID errors the NVIDIA driver logged in the kernel log since the last run",
		Settings:    func() any { return defaultXidSettings() },
		Reasons:     []string{"XID<code>", ReasonKernelLogUnreadable, ReasonGPUListUnreadable, ReasonXIDInTextLog, devcheck.ReasonStateLockBusy, devcheck.ReasonStateDirUnsafe, devcheck.ReasonStateDirUnusable}})
}

// defaultXidSettings returns the shipped settings of [checks.xid].
func defaultXidSettings() *xidSettings {
	return &xidSettings{Source: "/dev/kmsg", Root: "/", StateDir: "/var/lib/vigil", FaultXIDs: nvxid.Faults(), Sticky: true}
}

// Validate reports missing paths and impossible XIDs.
func (s *xidSettings) Validate() error {
	if s.Source == "" {
		return benchmarks.BadSetting("source", `"": want a kernel log (/dev/kmsg or a file)`)
	}
	if s.StateDir == "" {
		return benchmarks.BadSetting("state_dir", `"": want a directory`)
	}
	for _, x := range s.FaultXIDs {
		if x <= 0 {
			return benchmarks.BadSetting("fault_xids", "%d: not an XID (want 1 or more)", x)
		}
	}
	return nil
}

func (c *xid) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultXidSettings()
	if err := loadSettings(env, s); err != nil {
		return devcheck.BadSettings(c.Spec().Name, err)
	}
	t := newTally(c.Spec().Name)
	source := filepath.Join(s.Root, s.Source)
	bootID := ""
	if b, err := os.ReadFile(filepath.Join(s.Root, "proc", "sys", "kernel", "random", "boot_id")); err == nil {
		bootID = strings.TrimSpace(string(b))
	}

	// A dry run reads the state but leaves no trace: no state directory,
	// no lock file, no new position.
	dryRun := env != nil && env.DryRun
	var unlock func()
	if !dryRun {
		var err error
		unlock, err = devcheck.LockState(ctx, s.StateDir, "xid.lock")
		if err != nil {
			// Another run is reading the log (or the lock directory is
			// not root's own): its position would be read twice or lost.
			t.Unknown("", devcheck.LockReason(err), "state lock: %v", err)
			return t.Result("")
		}
		defer unlock()
	}
	statePath := filepath.Join(s.StateDir, "xid-state.json")
	cur, fresh := resumeXIDState(t, statePath, bootID, source)
	lines, err := readKernelLog(source, &cur, fresh)
	if err != nil {
		t.Unknown("", ReasonKernelLogUnreadable, "kernel log %s: %v", source, err)
	}

	rule := newFaultRule(s.FaultXIDs)
	gpus := c.nodeGPUs(filepath.Join(s.Root, "sys"))
	events := gpus.own(t, rule, lines)
	cur.Faults = gpus.recheck(t, cur.Faults)
	for _, ev := range events {
		if rule.fails(ev) {
			cur.Faults = append(cur.Faults, ev)
		}
	}
	if n := len(cur.Faults); n > maxStickyFaults {
		cur.Faults = cur.Faults[n-maxStickyFaults:]
	}
	if unlock != nil {
		if err := devcheck.SaveState(statePath, cur); err != nil {
			log.WithFields(log.Fields{"check": c.Spec().Name}).WithError(err).Warn("xid state not saved")
			t.Note("state not saved: %v", err)
		}
	}
	faults := events
	if s.Sticky {
		faults = cur.Faults
	}
	c.record(t, env, events, faults, rule)
	return t.Result(fmt.Sprintf("no fault XIDs (%d XID messages since the last check)", len(events)))
}

// resumeXIDState loads the state at path and returns where this run
// starts: the same position on the same boot and log; a new one after a
// reboot or with another source (a text log goes on where it stopped, the
// faults of the last boot gone with it). fresh is set when the state is
// not this boot's and source's.
func resumeXIDState(t *devcheck.Tally, path, bootID, source string) (cur xidState, fresh bool) {
	prev, err := devcheck.LoadState[xidState](path)
	if err != nil {
		t.Note("state ignored: %v", err)
	}
	cur = prev
	if prev.BootID != bootID || prev.Source != source {
		cur = xidState{BootID: bootID, Source: source}
		if prev.Source == source && !isCharDevice(source) {
			// Same text log after a reboot: go on where we stopped; the
			// faults of the last boot are gone with it.
			cur.Offset, cur.Inode = prev.Offset, prev.Inode
		}
	}
	fresh = cur.BootID != prev.BootID || cur.Source != prev.Source || prev.Source == ""
	return cur, fresh
}

// readKernelLog reads the kernel log source (/dev/kmsg or a text file)
// from cur's position on and moves cur past what it read.
func readKernelLog(source string, cur *xidState, fresh bool) ([]kmsg.Record, error) {
	var lines []kmsg.Record
	var err error
	if isCharDevice(source) {
		lines, cur.Seq, err = readKmsg(source, cur.Seq, fresh)
	} else {
		var id fileIdentity
		lines, cur.Offset, id, err = readLogFile(source, cur.Offset, cur.Inode)
		cur.Inode = id.inode
	}
	return lines, err
}

// record records the job's XIDs since the last run as readings (notes for
// those that are not faults), and each fault among faults as a failure.
// Each event is one of a GPU of this node (gpuList.own). XIDs of devices
// the job does not own are left out; those of GPUs NVML does not know
// (sysfs lists them: maybe off the bus) always count.
func (c *xid) record(t *devcheck.Tally, env *benchmarks.Env, events, faults []xidEvent, rule faultRule) {
	var allowed map[string]bool // device names the job owns; nil: all
	if env != nil && env.Devices != nil {
		allowed = map[string]bool{}
		for _, i := range env.Devices {
			allowed[fmt.Sprintf("gpu%d", i)] = true
		}
	}
	name := func(ev xidEvent) (string, bool) {
		return ev.Device, allowed == nil || allowed[ev.Device] || !strings.HasPrefix(ev.Device, "gpu")
	}
	for _, ev := range events {
		dev, mine := name(ev)
		if !mine {
			continue
		}
		st := benchmarks.StatusPass
		if rule.fails(ev) {
			st = benchmarks.StatusFail
		}
		t.Value(dev, "xid", float64(ev.Code), "", nil, "", st)
		if st != benchmarks.StatusFail {
			t.Note("%s XID %d (%s)", dev, ev.Code, describeXID(ev.Event, false))
		}
	}
	for _, ev := range faults {
		dev, mine := name(ev)
		if !mine || !rule.fails(ev) {
			continue
		}
		t.Fail(dev, fmt.Sprintf("XID%d", ev.Blame()), "%s XID %d (%s): %s (remedy: %s)",
			dev, ev.Code, describeXID(ev.Event, true), ev.Text, ev.Remedy())
	}
}

// describeXID names an XID for messages: the catalogue's words, the
// earlier XID that caused it, and, for one that does not fail, "job
// error" when it is the job's own: NVIDIA's action is to restart the
// application, or the driver's robust-channel recovery (the
// ROBUST_CHANNEL_* XIDs) already tore the job's channel down. Others
// (a row remap done, a high corrected-error rate) are only named.
func describeXID(ev nvxid.Event, failing bool) string {
	info, ok := nvxid.Lookup(ev.Code)
	if !ok {
		return "unlisted"
	}
	d := info.What
	if ev.Previous > 0 {
		d += fmt.Sprintf(", caused by XID %d", ev.Previous)
		if p, ok := nvxid.Lookup(ev.Previous); ok {
			d += ": " + p.What
		}
	}
	if !failing && (info.Remedy == nvxid.RemedyRestartApp ||
		info.Remedy == nvxid.RemedyNone && strings.HasPrefix(info.Mnemonic, "ROBUST_CHANNEL_")) {
		d = "job error: " + d
	}
	return d
}

func isCharDevice(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
