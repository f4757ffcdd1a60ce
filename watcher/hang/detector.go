// Package hang decides, from a job's samples, whether a host of the job is
// making progress.
//
// # The rule
//
// A host is suspect when the job's I/O on it progressed less than
// Config.IOBytes over the whole window, and hung when, in addition, its
// resource usage over the window is flat. Per host, the detector keeps the
// samples of the last window in a ring buffer (bounded memory: about four
// windows' worth of samples at the configured period).
//
// I/O progress. The counters of a sample (rchar, wchar, read_bytes,
// write_bytes) are sums over the job's current processes, so they drop when a
// process exits and jump when one starts. Progress over the window is the sum,
// per counter, of the positive differences between consecutive samples: a
// drop counts as zero (neither progress nor negative progress) and the lower
// value becomes the baseline, so a new process's I/O counts from its start.
// The sum starts at the newest readable sample at or before the window's
// start, so that the interval in which the window starts counts whole: the
// I/O is judged over at least one window, whatever the jitter of the
// sampling moments. So a host that stops making progress is suspect at its
// first sample one window or more after the newest sample that showed
// progress (the events' "since"): between one window and one window plus
// a period after the stall, never earlier.
// This can hide real I/O in the one period in which a process exited, and it
// can count a process's history a second time when it becomes readable again
// or when an exited child's counters are added to its parent's at reaping;
// both err towards "progress", never towards hung.
// Where the cgroup exposes block I/O (io.stat, blkio), its progress is
// computed the same way and the larger of the two counts.
//
// Coverage. A window is judged only when at least Config.MinCoverage of the
// samples expected in it (Window/Period+1) are present; for I/O, samples
// marked "io" in Missing (no process's I/O could be read) do not count, for a
// device, samples without its reading (or marked "accel") do not count, for
// the CPU, samples marked "cpu". So gaps in the samples, vanished processes
// and unreadable files never by themselves make a host suspect or hung, and
// while data is missing a host keeps its state. Progress, on the other hand,
// is taken as soon as it is seen: a host recovers whatever the coverage.
//
// Flat usage. For each device over the window: the standard deviation of its
// utilisation is at most Config.UtilStddev, the standard deviation of its
// power at most Config.PowerStddevW, its median power below
// Config.BusyPowerW (the trace does not carry the device's TDP, so "high
// power" is an absolute threshold to tune per SKU), and its memory use changed
// by at most Config.MemChangeMiB. The job's CPU rate (cores, from cpu_usec)
// must be flat too: its standard deviation at most Config.CPUStddevCores +
// Config.CPUStddevFraction × median. Every device flat at high utilisation is
// a stuck collective (100% busy, low power), every device flat near zero a
// deadlocked loader. Standard deviation (not MAD) decides, because it is the
// more cautious of the two: a device that varies in a few samples only is
// not flat. The evidence reports both.
//
// Without accelerators the CPU decides alone: flat and at most
// Config.CPUIdleCores is hung (FlatCPUIdle); flat and busy is a hang only with
// Config.CPUSpinIsHang, since a long computation without I/O looks the same.
//
// Grace and the first verdict. The window always covers the last
// Config.Window, start-up included, so a job that stops making progress is
// reported one window after its last progress, however long it has run.
// Config.Grace only delays the first verdict: nothing is decided about a host
// before its samples of the job span Config.FirstVerdict (the longer of Grace
// and Window). A slow start that makes progress within the grace is never
// reported; a job that never makes progress is reported at first sample +
// FirstVerdict.
//
// # The packages under it
//
// Episodes gathers the hosts' events into a job's hang episodes and asks
// two pure packages what they mean: watcher/hang/digest (what caused the
// hang, which hosts, what to do) and watcher/hang/straggler (the hosts
// that hold a progressing job back). They never import this package;
// watcher/hang/hangfmt, below all three, writes their numbers and
// durations.
package hang

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

type state int

const (
	stateOK state = iota
	stateSuspect
	stateHung
)

// reading is one device's reading in a point.
type reading struct {
	slot               int
	util, power, memMi float64
}

// point is the part of a sample the detector keeps.
type point struct {
	t             time.Time
	ioOK, cpuOK   bool
	accelOK       bool
	cgOK          bool
	io            trace.IO
	cgR, cgW      uint64
	cpu           uint64
	procs, procsD int
	devs          []reading
}

type host struct {
	job   string
	first time.Time
	last  time.Time
	ring  []point // ring buffer, oldest at head
	head  int
	n     int
	state state
	since time.Time
	slots map[string]int // device id -> slot
	ids   []string       // slot -> device id
	// scratch, reused from sample to sample
	win              []*point
	rates            []float64
	util, power, mem [][]float64
	stats            []DeviceStats
}

// Detector holds per-host state. It is not safe for concurrent use.
type Detector struct {
	c Config
	// windows is how many windows of readings each host's ring holds
	// (about; 4 when 0: the window rule's baseline may lie before the
	// window).
	windows int
	hosts   map[string]*host
	latest  map[string]trace.Sample
	span    time.Duration // longest stretch of one host's samples of one job
	vals    []float64     // scratch
}

// New returns a Detector with configuration c, which must have passed
// Validate: the settings are defaulted and checked once, where they are
// read (watchcfg, watcher/loop), not again here.
func New(c Config) *Detector {
	return &Detector{c: c, hosts: make(map[string]*host), latest: make(map[string]trace.Sample)}
}

// Config returns the detector's configuration.
func (d *Detector) Config() Config { return d.c }

// Latest returns the latest sample seen of each host (the map is the
// detector's own: do not modify it).
func (d *Detector) Latest() map[string]trace.Sample { return d.latest }

// Span is the longest stretch of time covered by one host's samples of one
// job seen so far (last sample minus first). While it is shorter than
// Config.FirstVerdict, no verdict can have come.
func (d *Detector) Span() time.Duration { return d.span }

// FirstVerdictAt is the earliest time at which the detector can decide
// anything about host's current job: its first sample + Config.FirstVerdict.
// ok is false for a host not seen yet.
func (d *Detector) FirstVerdictAt(host string) (t time.Time, ok bool) {
	h := d.hosts[host]
	if h == nil {
		return time.Time{}, false
	}
	return h.first.Add(d.c.FirstVerdict()), true
}

func (d *Detector) capacity() int {
	w := d.windows
	if w == 0 {
		w = 4
	}
	return w*int(d.c.Window/d.c.Period) + 8
}

// expected is the number of samples a full window holds.
func (d *Detector) expected() float64 { return float64(d.c.Window/d.c.Period) + 1 }

// Observe takes one sample and returns the events it causes (usually none).
// Samples of a host must come in time order; a sample not after the host's
// previous one is ignored. A sample with another job than the host's
// previous one starts the host afresh. Log records (s.Log set) are not
// readings: Observe ignores them (the digest reads them, see Episodes).
func (d *Detector) Observe(s trace.Sample) []Event {
	h := d.record(s)
	if h == nil || s.Time.Sub(h.first) < d.c.FirstVerdict() {
		return nil
	}
	return d.judge(h, &s)
}

// record keeps reading s in its host's ring and returns the host, or nil
// when s is not kept (a log record, or not after the host's previous
// reading of the same job).
func (d *Detector) record(s trace.Sample) *host {
	if s.IsLog() {
		return nil
	}
	h := d.hosts[s.Host]
	if h != nil && h.job != s.Job {
		h = nil
	}
	if h == nil {
		h = &host{job: s.Job, first: s.Time, ring: make([]point, d.capacity()), slots: make(map[string]int)}
		d.hosts[s.Host] = h
	} else if !s.Time.After(h.last) {
		return nil
	}
	h.last = s.Time
	d.latest[s.Host] = s
	h.push(&s)
	if age := s.Time.Sub(h.first); age > d.span {
		d.span = age
	}
	return h
}

func (h *host) push(s *trace.Sample) {
	var p *point
	if h.n < len(h.ring) {
		p = &h.ring[(h.head+h.n)%len(h.ring)]
		h.n++
	} else {
		p = &h.ring[h.head]
		h.head = (h.head + 1) % len(h.ring)
	}
	devs := p.devs[:0]
	*p = point{t: s.Time, io: s.IO, cpu: s.CPUUsec, procs: s.Procs, procsD: s.ProcsD,
		ioOK: true, cpuOK: true, accelOK: true}
	for _, m := range s.Missing {
		switch m {
		case "io", "pids":
			p.ioOK = false
			p.cpuOK = false
		case "cpu":
			p.cpuOK = false
		case "accel":
			p.accelOK = false
		}
	}
	if s.CgroupIO != nil {
		p.cgOK, p.cgR, p.cgW = true, s.CgroupIO.ReadBytes, s.CgroupIO.WriteBytes
	}
	for _, a := range s.Accel {
		slot, ok := h.slots[a.ID]
		if !ok {
			slot = len(h.ids)
			h.slots[a.ID] = slot
			h.ids = append(h.ids, a.ID)
		}
		devs = append(devs, reading{slot: slot, util: a.Util, power: a.PowerW, memMi: a.MemUsedMiB})
	}
	p.devs = devs
}

// window fills h.win with the points of the window ending at now, oldest
// first, and returns with them its I/O baseline: the newest readable point
// at or before the window's start (nil when the ring holds none). The I/O
// over the window counts from the baseline, so that the interval in which
// the window's start falls counts whole: the I/O is judged over at least
// one window, whatever the jitter of the sampling moments.
func (d *Detector) window(h *host, now time.Time) (win []*point, base *point) {
	start := now.Add(-d.c.Window)
	i := h.pointsFrom(start)
	if len(h.win) > 0 && h.win[0].ioOK && h.win[0].t.Equal(start) {
		return h.win, nil // the window starts on a readable sample
	}
	for ; i >= 0; i-- {
		if p := &h.ring[(h.head+i)%len(h.ring)]; p.ioOK {
			return h.win, p
		}
	}
	return h.win, nil
}

// pointsFrom fills h.win with the host's points at or after start, oldest
// first, and returns the ring index (0 oldest) of the newest point before
// start, -1 when there is none.
func (h *host) pointsFrom(start time.Time) int {
	h.win = h.win[:0]
	i := h.n - 1
	for ; i >= 0; i-- {
		p := &h.ring[(h.head+i)%len(h.ring)]
		if p.t.Before(start) {
			break
		}
		h.win = append(h.win, p)
	}
	slices.Reverse(h.win)
	return i
}

func pos(a, b uint64) uint64 {
	if b > a {
		return b - a
	}
	return 0
}

// progress returns the I/O progress (bytes) between two readable points.
func progress(a, b *point) (proc, cg uint64) {
	proc = pos(a.io.RChar, b.io.RChar) + pos(a.io.WChar, b.io.WChar) +
		pos(a.io.ReadBytes, b.io.ReadBytes) + pos(a.io.WriteBytes, b.io.WriteBytes)
	if a.cgOK && b.cgOK {
		cg = pos(a.cgR, b.cgR) + pos(a.cgW, b.cgW)
	}
	return proc, cg
}

type ioSummary struct {
	bytes, procBytes, cgBytes uint64
	cgroup                    bool
	n                         int // readable points
}

// ioOver sums the I/O progress over win, from base (when not nil: the
// baseline before the window, not counted as a point of it).
func ioOver(base *point, win []*point) ioSummary {
	var s ioSummary
	prev := base
	for _, p := range win {
		if !p.ioOK {
			continue
		}
		s.n++
		if p.cgOK {
			s.cgroup = true
		}
		if prev != nil {
			a, b := progress(prev, p)
			s.procBytes += a
			s.cgBytes += b
		}
		prev = p
	}
	s.bytes = max(s.procBytes, s.cgBytes)
	return s
}

// sinceNoProgress walks back from the newest point to find since when the
// I/O stayed below the threshold.
func (d *Detector) sinceNoProgress(h *host) time.Time {
	var acc, accCg uint64
	var next *point
	oldest := h.last
	for i := h.n - 1; i >= 0; i-- {
		p := &h.ring[(h.head+i)%len(h.ring)]
		if !p.ioOK {
			continue
		}
		if next != nil {
			a, b := progress(p, next)
			acc += a
			accCg += b
			if max(acc, accCg) >= d.c.IOBytes {
				return next.t
			}
		}
		next = p
		oldest = p.t
	}
	return oldest
}

func (d *Detector) judge(h *host, s *trace.Sample) []Event {
	win, base := d.window(h, s.Time)
	io := ioOver(base, win)
	cov := float64(io.n) / d.expected()
	evidence := func() map[string]any {
		ev := map[string]any{
			"io_bytes":      io.bytes,
			"io_threshold":  d.c.IOBytes,
			"window_s":      d.c.Window.Seconds(),
			"grace_s":       d.c.Grace.Seconds(),
			"first_verdict": h.first.Add(d.c.FirstVerdict()).Format(time.RFC3339),
			"coverage":      hangfmt.Round(math.Min(cov, 1)),
			"procs":         s.Procs,
			"procs_d":       s.ProcsD,
		}
		if io.cgroup {
			ev["cgroup_io_bytes"] = io.cgBytes
		}
		return ev
	}
	mk := func(kind, reason, msg string, ev map[string]any) Event {
		return Event{Time: s.Time, Host: s.Host, Job: s.Job, Event: kind, Reason: reason, Message: msg, Evidence: ev}
	}
	if io.bytes >= d.c.IOBytes {
		if h.state == stateOK {
			return nil
		}
		h.state = stateOK
		return []Event{mk(EventRecovered, ReasonIOProgress,
			fmt.Sprintf("I/O progressed again: %s over the last %v", bytesText(io.bytes), d.c.Window), evidence())}
	}
	if cov < d.c.MinCoverage {
		return nil // not enough data to judge; keep the state
	}
	var out []Event
	if h.state == stateOK {
		h.state = stateSuspect
		h.since = d.sinceNoProgress(h)
		ev := evidence()
		ev["since"] = h.since.Format(time.RFC3339)
		out = append(out, mk(EventSuspect, ReasonNoIOProgress,
			fmt.Sprintf("no I/O progress since %s: %s over the last %v (threshold %s)",
				h.since.Format(time.RFC3339), bytesText(io.bytes), d.c.Window, bytesText(d.c.IOBytes)), ev))
	}
	need := d.c.MinCoverage * d.expected()
	u := d.usage(h, win, need, false)
	usageEvidence := func() map[string]any {
		u = d.usage(h, win, need, true)
		ev := evidence()
		ev["since"] = h.since.Format(time.RFC3339)
		u.addEvidence(ev)
		return ev
	}
	switch {
	case u.verdict == verdictFlat && h.state != stateHung:
		h.state = stateHung
		ev := usageEvidence()
		out = append(out, mk(EventHung, u.reason, u.message()+"; no I/O progress since "+h.since.Format(time.RFC3339), ev))
	case u.verdict == verdictBusy && h.state == stateHung:
		h.state = stateSuspect
		ev := usageEvidence()
		out = append(out, mk(EventSuspect, ReasonUsageNotFlat, "usage is no longer flat: "+u.message(), ev))
	}
	for i := range out {
		out[i].Since = h.since
	}
	return out
}

func bytesText(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
