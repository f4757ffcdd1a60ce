// Package straggler names the hosts that hold a progressing job back:
// busy while their peers idle-wait, throttled, drawing little power, held
// back (stopped or CPU-throttled), or slow in their own progress lines.
// A Track per host gathers its readings and lines of the last window into
// a HostLoad, and Stragglers compares the job's loads. watcher/hang's
// episodes keep the tracks, decide when the job progresses (the rule runs
// only then) and make events of what it names; this package never imports
// watcher/hang.
package straggler

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Straggler reasons.
const (
	// StragglerBusyWhilePeersIdle: the host's devices are pinned busy over
	// the window while its peers' devices idle-wait.
	StragglerBusyWhilePeersIdle = "BusyWhilePeersIdle"
	// StragglerThrottledWhilePeersNot: the host's devices are busy like its
	// peers' but their clocks are held down (a slowest device's SM clock
	// well below its peers', or a hardware, thermal or power-brake
	// slowdown over most of the window while its peers have none): its
	// peers spin in collectives waiting for it, and their utilisation
	// reads as high as its own.
	StragglerThrottledWhilePeersNot = "ThrottledWhilePeersNot"
	// StragglerLowPowerWhileBusy: the host's devices are busy like its
	// peers' but draw far less power.
	StragglerLowPowerWhileBusy = "LowPowerWhileBusy"
)

// StragglerGap is how far, in percentage points, a straggler's mean device
// utilisation over the window stands above the median of its peers', which
// must be at most 100 - StragglerGap - 10 (idle-waiting).
const StragglerGap = 40

// Thresholds of the rules for busy hosts (ThrottledWhilePeersNot,
// LowPowerWhileBusy). Boost clocks of healthy devices under the same load
// differ by a few percent and their power by 10 to 15 %; a thermal or
// power-brake slowdown halves the clock or more.
const (
	// StragglerClockShare: a throttled host's slowest device runs below
	// this share of its peers' median SM clock (as a share of each
	// device's maximum).
	StragglerClockShare = 0.85
	// StragglerSlowedShare: a throttled host reports a slowdown reason
	// (trace.ThrottleSlowdown) in more than this share of its readings,
	// while its peers' median share is at most StragglerPeersSlowedShare.
	StragglerSlowedShare      = 0.5
	StragglerPeersSlowedShare = 0.25
	// StragglerPowerShare: a low-power host's devices draw below this
	// share of its peers' median power.
	StragglerPowerShare = 0.7
)

// utilPoint is what the straggler rule keeps of one reading of a host's
// devices.
type utilPoint struct {
	t      time.Time
	util   float64    // mean device utilisation, percent
	powerW float32    // mean device power, watts; 0 when none read above 0
	devs   []devPoint // each device's clock, in the reading's device order
}

// devPoint is one device's clock in a reading.
type devPoint struct {
	// clockPct is the SM clock as a share of its maximum, percent; -1 when
	// not read, or when the device's clock event reasons say GpuIdle (an
	// idle device's clock says nothing of its speed).
	clockPct float32
	maxMHz   float32 // the SM clock's maximum, MHz
	reasons  uint32  // the clock event reasons (trace.Throttle bits)
}

// newUtilPoint is what the straggler rule keeps of the reading s; ok is
// false when s has no devices.
func newUtilPoint(s trace.Sample) (p utilPoint, ok bool) {
	if len(s.Accel) == 0 {
		return p, false
	}
	var util float64
	for _, a := range s.Accel {
		util += a.Util
	}
	p = utilPoint{t: s.Time, util: util / float64(len(s.Accel))}
	var power float64
	powered := 0
	for i, a := range s.Accel {
		if a.PowerW > 0 {
			power += a.PowerW
			powered++
		}
		if a.SMClockMHz == 0 && a.Throttle == 0 {
			continue
		}
		if p.devs == nil {
			// Only readings with clocks or reasons cost the space.
			p.devs = make([]devPoint, len(s.Accel))
			for j := range p.devs {
				p.devs[j].clockPct = -1
			}
		}
		d := devPoint{clockPct: -1, maxMHz: float32(a.SMClockMaxMHz), reasons: uint32(a.Throttle)}
		if a.SMClockMHz > 0 && a.SMClockMaxMHz > 0 && a.Throttle&trace.ThrottleGpuIdle == 0 {
			d.clockPct = float32(100 * float64(a.SMClockMHz) / float64(a.SMClockMaxMHz))
		}
		p.devs[i] = d
	}
	if powered > 0 {
		p.powerW = float32(power / float64(powered))
	}
	return p, true
}

// newHostLoad sums up a host's readings of the last window (oldest first)
// for the straggler rule; its progress is left unknown. Each device is
// judged on its own readings, so that short dips of different devices
// (between kernels, a brief slowdown) do not add up to a slow host.
func newHostLoad(host string, ps []utilPoint) HostLoad {
	l := HostLoad{Host: host, Samples: len(ps), Epoch: -1, Step: -1}
	devices := 0
	for _, p := range ps {
		l.Util += p.util
		if p.powerW > 0 {
			l.PowerSamples++
			l.PowerW += float64(p.powerW)
		}
		devices = max(devices, len(p.devs))
	}
	if n := float64(l.Samples); n > 0 {
		l.Util /= n
	}
	if n := float64(l.PowerSamples); n > 0 {
		l.PowerW /= n
	}
	l.ClockPct = -1
	var clocks []devPoint
	if devices > 0 {
		clocks = make([]devPoint, 0, len(ps))
	}
	for i := range devices {
		clocks = clocks[:0]
		slowed := 0
		for _, p := range ps {
			if i >= len(p.devs) {
				continue
			}
			d := p.devs[i]
			l.Reasons |= uint64(d.reasons)
			if uint64(d.reasons)&trace.ThrottleSlowdown != 0 {
				slowed++
			}
			if d.clockPct >= 0 {
				clocks = append(clocks, d)
			}
		}
		l.Slowed = max(l.Slowed, slowed)
		// The device's median clock: held down for most of the window. A
		// device read busy in fewer than half the readings is not judged
		// on its few.
		if len(clocks) == 0 || 2*len(clocks) < len(ps) {
			continue
		}
		sort.Slice(clocks, func(a, b int) bool { return clocks[a].clockPct < clocks[b].clockPct })
		lo, hi := clocks[(len(clocks)-1)/2], clocks[len(clocks)/2]
		pct := (float64(lo.clockPct) + float64(hi.clockPct)) / 2
		if l.ClockPct < 0 || pct < l.ClockPct {
			maxMHz := (float64(lo.maxMHz) + float64(hi.maxMHz)) / 2
			l.ClockSamples, l.ClockPct, l.ClockMHz, l.ClockMaxMHz = len(clocks), pct, pct*maxMHz/100, maxMHz
		}
	}
	if l.ClockSamples == 0 {
		l.ClockPct = 0
	}
	return l
}

// HostLoad is one host's load and progress over the last window, what the
// straggler rule compares.
type HostLoad struct {
	Host string
	// Util is the mean device utilisation over the window, percent; valid
	// when Samples covers watchcfg.Hang.MinCoverage of the window.
	Util    float64
	Samples int
	// ClockPct is the median SM clock, over the window, of the host's
	// slowest device (the slowest device sets the pace of a collective),
	// as a percentage of its maximum, from its ClockSamples readings
	// while busy; ClockMHz and ClockMaxMHz are that clock and maximum, MHz.
	ClockSamples                    int
	ClockPct, ClockMHz, ClockMaxMHz float64
	// Slowed is how many samples of its most slowed device report a
	// slowdown reason (trace.ThrottleSlowdown); Reasons are all the clock
	// event reasons seen over the window (trace.Throttle bits).
	Slowed  int
	Reasons uint64
	// PowerSamples is how many of the samples read power above 0 W;
	// PowerW is, over them, the mean device power, watts.
	PowerSamples int
	PowerW       float64
	// Epoch and Step are the host's slowest rank's latest progress (-1:
	// none); Interval is its last step increment between two progress
	// lines (0: unknown). They are shown, never compared: ranks' lines
	// reach the output at different moments, so a host a few steps or an
	// epoch boundary behind at a round is no evidence.
	Epoch, Step, Interval int64
	// Steps is the pace of the host's slowest rank over the last half
	// window, from the progress lines attributed to the host; nil when
	// its lines do not show one.
	Steps *stepPace
	// HeldSamples is how many readings of the job's processes the host
	// gave over the window (with or without devices); of them, Stopped
	// found some stopped (state T) and Throttled found its job cgroups
	// throttled by their CPU quota (StragglerThrottledShare), the first
	// of either at HeldSince (zero: none).
	HeldSamples, Stopped, Throttled int
	HeldSince                       time.Time
	// stoppedSpan is how many readings there are from the first that
	// found some stopped on.
	stoppedSpan int
}

// Stragglers names the hosts of a progressing job that hold the others
// back, as of time t (the job's latest record):
//   - BusyWhilePeersIdle: mean device utilisation at least c.HighUtil and
//     StragglerGap above the median of the other hosts', which is at most
//     100 - StragglerGap - 10 (they idle-wait for it);
//   - ThrottledWhilePeersNot: mean device utilisation at least c.HighUtil,
//     and the slowest device's SM clock (as a share of its maximum) below
//     StragglerClockShare of the others' median, or a slowdown reason in
//     more than StragglerSlowedShare of its samples while the others'
//     median share is at most StragglerPeersSlowedShare;
//   - LowPowerWhileBusy: mean device utilisation at least c.HighUtil, like
//     the median of the others', and mean device power below
//     StragglerPowerShare of the others' median;
//   - StoppedOrThrottled: the host's job processes stopped or its job
//     cgroups throttled by their CPU quota in StragglerHeldShare of its
//     readings while the others' median share is at most
//     StragglerPeersHeldShare (stoppedOrThrottled);
//   - SlowSteps: the slowest rank of the host's own progress lines takes
//     StragglerStepRatio times its peers' median seconds per step or more
//     over the last half window, beyond StragglerStepMADs of their spread,
//     in its latest StragglerStepRun logging intervals or more (slowSteps).
//
// Only hosts whose samples cover c.MinCoverage of the window count for the
// device rules (for the clock and power comparisons, their samples that
// read clocks or power), and each rule names at most a minority of the
// compared hosts (one of two counts as a minority: the evidence is
// one-sided). The device rules name a host once, the first that matches.
// A healthy, balanced job, however noisy, has none. The result is sorted
// by host.
func Stragglers(t time.Time, loads []HostLoad, c watchcfg.Hang) []Straggler {
	ls := append([]HostLoad(nil), loads...)
	sort.Slice(ls, func(i, j int) bool { return ls[i].Host < ls[j].Host })
	expected := float64(c.StragglerSpan()/c.Period) + 1
	var covered []HostLoad
	for _, l := range ls {
		if float64(l.Samples) >= c.MinCoverage*expected {
			covered = append(covered, l)
		}
	}
	var out []Straggler
	utils := sortedOf(covered, func(o HostLoad) float64 { return o.Util })
	busy := minority(covered, func(l HostLoad) (Straggler, bool) {
		m := medianExcept(utils, l.Util)
		if l.Util < c.HighUtil || l.Util-m < StragglerGap || m > 100-StragglerGap-10 {
			return Straggler{}, false
		}
		return newStraggler(l, StragglerBusyWhilePeersIdle,
			fmt.Sprintf("devices at %.0f%% over the window while its peers idle-wait at %.0f%% (median)", l.Util, m),
			map[string]any{"util": hangfmt.Round(l.Util), "peers_util_median": hangfmt.Round(m), "window_s": c.StragglerSpan().Seconds()}), true
	})
	out = append(out, busy...)
	named := map[string]bool{}
	for _, e := range busy {
		named[e.Host] = true
	}
	enough := func(n int) bool { return float64(n) >= c.MinCoverage*expected }
	out = append(out, throttledWhilePeersNot(covered, enough, named, c)...)
	out = append(out, lowPowerWhileBusy(covered, enough, named, c)...)
	out = append(out, stoppedOrThrottled(ls, enough, named, c)...)
	out = append(out, slowSteps(t, ls, named, c)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

// Straggler is a host the straggler rule names: why (one of the
// Straggler reasons), in words for people, and the evidence.
type Straggler struct {
	Host     string
	Reason   string
	Message  string
	Evidence map[string]any
}

// newStraggler names the host of l.
func newStraggler(l HostLoad, reason, msg string, ev map[string]any) Straggler {
	return Straggler{Host: l.Host, Reason: reason, Message: msg, Evidence: ev}
}

// throttledWhilePeersNot: busy, and the slowest device's clock well below
// the others' median or a slowdown reason over most of the window while
// the others have none. Hosts in named are skipped; the hosts it names
// are added.
func throttledWhilePeersNot(covered []HostLoad, enough func(int) bool, named map[string]bool, c watchcfg.Hang) []Straggler {
	var clocked []HostLoad
	for _, l := range covered {
		if enough(l.ClockSamples) {
			clocked = append(clocked, l)
		}
	}
	clocks := sortedOf(clocked, func(o HostLoad) float64 { return o.ClockPct })
	share := func(o HostLoad) float64 { return float64(o.Slowed) / float64(max(o.Samples, 1)) }
	shares := sortedOf(covered, share)
	evs := minority(covered, func(l HostLoad) (Straggler, bool) {
		if named[l.Host] || l.Util < c.HighUtil {
			return Straggler{}, false
		}
		ev := map[string]any{"util": hangfmt.Round(l.Util), "window_s": c.StragglerSpan().Seconds()}
		var why []string
		if enough(l.ClockSamples) && len(clocked) >= 2 {
			m := medianExcept(clocks, l.ClockPct)
			ev["sm_clock_pct"], ev["sm_clock_mhz"], ev["sm_clock_max_mhz"] = hangfmt.Round(l.ClockPct), math.Round(l.ClockMHz), math.Round(l.ClockMaxMHz)
			ev["peers_sm_clock_pct_median"] = hangfmt.Round(m)
			if l.ClockPct < StragglerClockShare*m {
				why = append(why, fmt.Sprintf("slowest device's SM clock at %.0f%% of its maximum (%.0f of %.0f MHz) over the window while its peers' run at %.0f%% (median)",
					l.ClockPct, l.ClockMHz, l.ClockMaxMHz, m))
			}
		}
		sh, m := share(l), medianExcept(shares, share(l))
		if sh > StragglerSlowedShare && m <= StragglerPeersSlowedShare {
			ev["slowed_share"], ev["peers_slowed_share_median"] = hangfmt.Round(sh), hangfmt.Round(m)
			why = append(why, fmt.Sprintf("devices slowed down (%s) in %d of %d readings while its peers' are not",
				strings.Join(trace.ThrottleNames(l.Reasons&trace.ThrottleSlowdown), ", "), l.Slowed, l.Samples))
		}
		if len(why) == 0 {
			return Straggler{}, false
		}
		if r := l.Reasons &^ trace.ThrottleGpuIdle; r != 0 {
			ev["reasons"] = trace.ThrottleNames(r)
		}
		return newStraggler(l, StragglerThrottledWhilePeersNot, strings.Join(why, "; "), ev), true
	})
	for _, e := range evs {
		named[e.Host] = true
	}
	return evs
}

// lowPowerWhileBusy: busy like the others, and drawing far less power
// than their median. Hosts in named are skipped; the hosts it names are
// added.
func lowPowerWhileBusy(covered []HostLoad, enough func(int) bool, named map[string]bool, c watchcfg.Hang) []Straggler {
	var powered []HostLoad
	for _, l := range covered {
		if enough(l.PowerSamples) {
			powered = append(powered, l)
		}
	}
	powers := sortedOf(powered, func(o HostLoad) float64 { return o.PowerW })
	utils := sortedOf(powered, func(o HostLoad) float64 { return o.Util })
	evs := minority(powered, func(l HostLoad) (Straggler, bool) {
		mu, mp := medianExcept(utils, l.Util), medianExcept(powers, l.PowerW)
		if named[l.Host] || l.Util < c.HighUtil || mu < c.HighUtil || l.PowerW >= StragglerPowerShare*mp {
			return Straggler{}, false
		}
		return newStraggler(l, StragglerLowPowerWhileBusy,
			fmt.Sprintf("devices draw %.0f W at %.0f%% over the window while its peers draw %.0f W at %.0f%% (median)", l.PowerW, l.Util, mp, mu),
			map[string]any{"power_w": hangfmt.Round(l.PowerW), "peers_power_median_w": hangfmt.Round(mp), "util": hangfmt.Round(l.Util), "peers_util_median": hangfmt.Round(mu), "window_s": c.StragglerSpan().Seconds()}), true
	})
	for _, e := range evs {
		named[e.Host] = true
	}
	return evs
}

// minority applies match to each host and keeps the matches when they are
// a minority of hosts (or one of two).
func minority(ls []HostLoad, match func(l HostLoad) (Straggler, bool)) []Straggler {
	if len(ls) < 2 {
		return nil
	}
	var out []Straggler
	for _, l := range ls {
		if e, ok := match(l); ok {
			out = append(out, e)
		}
	}
	if 2*len(out) >= len(ls) && !(len(ls) == 2 && len(out) == 1) {
		return nil
	}
	return out
}

// sortedOf is f over ls, sorted.
func sortedOf(ls []HostLoad, f func(HostLoad) float64) []float64 {
	v := make([]float64, len(ls))
	for i, l := range ls {
		v[i] = f(l)
	}
	sort.Float64s(v)
	return v
}

// medianExcept is the median of sorted without one element equal to x
// (which sorted holds): O(log n), where a copy per host would make a check
// of n hosts O(n²).
func medianExcept(sorted []float64, x float64) float64 {
	n := len(sorted) - 1
	if n <= 0 {
		return 0
	}
	idx := sort.SearchFloat64s(sorted, x)
	at := func(k int) float64 {
		if k >= idx {
			k++
		}
		return sorted[k]
	}
	if n%2 == 1 {
		return at(n / 2)
	}
	return (at(n/2-1) + at(n/2)) / 2
}
