package hang

import (
	"fmt"
	"slices"

	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
)

// Usage: whether a suspect host's resource usage over the window is flat.
// Three steps: the CPU rate's statistics (cpuStats), each device's
// statistics (gatherReadings, deviceStats, devicesStats), then the
// classification of the two (classifyCPUOnly without accelerators,
// classifyDevices with).

type verdict int

const (
	verdictUnknown verdict = iota // not enough data
	verdictFlat
	verdictBusy
)

// whyTooFew is a device's DeviceStats.Why when it has too few readings in
// the window to be judged.
const whyTooFew = "too few readings"

type usage struct {
	verdict              verdict
	reason               string
	msg                  func() string
	devs                 []DeviceStats // the host's scratch: clone to keep
	cpuKnown             bool
	cpuMedian, cpuStddev float64
}

// addEvidence puts u's statistics (every device's, the CPU's) into ev.
func (u *usage) addEvidence(ev map[string]any) {
	ev["devices"] = slices.Clone(u.devs)
	if u.devs == nil {
		ev["devices"] = []DeviceStats{}
	}
	if u.cpuKnown {
		ev["cpu_cores_median"] = hangfmt.Round(u.cpuMedian)
		ev["cpu_cores_stddev"] = hangfmt.Round(u.cpuStddev)
	}
}

func (u *usage) message() string {
	if u.msg == nil {
		return ""
	}
	return u.msg()
}

func text(format string, args ...any) func() string {
	return func() string { return fmt.Sprintf(format, args...) }
}

// deviceTally counts, over the devices of a window, how many read flat
// and at which level. It is read only when no device is busy.
type deviceTally struct {
	allFlat    bool // every device flat (none busy, none with too few readings)
	high, idle int  // devices with median utilisation >= HighUtil, <= IdleUtil
	// unused counts the idle devices whose memory use stayed below
	// Config.UnusedMemMiB: not yet used by the job.
	unused int
}

// usage decides whether the resource usage over win is flat; need is the
// number of readings a judgement needs (Config.MinCoverage of the points
// expected in win). With full unset it computes only what the verdict
// needs (it may stop at the first busy device, leaving devs and msg
// incomplete); with full set it fills in every device's statistics and
// the message, for an event's evidence.
//
// Devices the job has not used yet (every device flat, idle and below
// Config.UnusedMemMiB) do not decide: the CPU decides alone, as without
// accelerators, so that a job busy on one core before it touches its
// devices (compiling, unpacking, preprocessing) is not a deadlocked loader.
func (d *Detector) usage(h *host, win []*point, need float64, full bool) usage {
	var u usage
	cpuFlat := d.cpuStats(h, win, need, &u)
	if float64(h.gatherReadings(win)) < need {
		u.msg = text("accelerator readings missing")
		return u
	}
	tally, busy := d.devicesStats(h, need, full, &u)
	if busy {
		// One busy device decides; the rest is evidence only.
		u.verdict = verdictBusy
		return u
	}
	if len(u.devs) == 0 {
		d.classifyCPUOnly(&u, cpuFlat, "no accelerators")
		return u
	}
	if tally.allFlat && d.c.UnusedMemMiB > 0 && tally.unused == len(u.devs) {
		d.classifyCPUOnly(&u, cpuFlat, fmt.Sprintf("devices idle and not used yet (memory below %.0f MiB)", d.c.UnusedMemMiB))
		return u
	}
	d.classifyDevices(&u, tally, cpuFlat)
	return u
}

// cpuStats computes the job's CPU rate (cores) between consecutive
// readable points of win and, when at least need points are readable, sets
// u's CPU median and standard deviation. It reports whether the rate is
// flat: standard deviation at most CPUStddevCores + CPUStddevFraction ×
// median (false when unknown).
func (d *Detector) cpuStats(h *host, win []*point, need float64, u *usage) (flat bool) {
	rates := h.rates[:0]
	var prev *point
	cpuPoints := 0
	for _, p := range win {
		if !p.cpuOK {
			continue
		}
		cpuPoints++
		if prev != nil && p.cpu >= prev.cpu {
			if dt := p.t.Sub(prev.t).Seconds(); dt > 0 {
				rates = append(rates, float64(p.cpu-prev.cpu)/1e6/dt)
			}
		}
		prev = p
	}
	h.rates = rates
	if float64(cpuPoints) < need || len(rates) == 0 {
		return false
	}
	u.cpuKnown = true
	u.cpuMedian = d.median(rates)
	u.cpuStddev = stddev(rates)
	return u.cpuStddev <= d.c.CPUStddevCores+d.c.CPUStddevFraction*u.cpuMedian
}

// gatherReadings fills h.util, h.power and h.mem, per device slot, with the
// device readings of the points of win that have them, in one pass, and
// returns the number of such points.
func (h *host) gatherReadings(win []*point) (accelPoints int) {
	for len(h.util) < len(h.ids) {
		h.util = append(h.util, nil)
		h.power = append(h.power, nil)
		h.mem = append(h.mem, nil)
	}
	for i := range h.ids {
		h.util[i], h.power[i], h.mem[i] = h.util[i][:0], h.power[i][:0], h.mem[i][:0]
	}
	for _, p := range win {
		if !p.accelOK {
			continue
		}
		accelPoints++
		for _, r := range p.devs {
			h.util[r.slot] = append(h.util[r.slot], r.util)
			h.power[r.slot] = append(h.power[r.slot], r.power)
			h.mem[r.slot] = append(h.mem[r.slot], r.memMi)
		}
	}
	return accelPoints
}

// devicesStats appends to u.devs the statistics of every device read in the
// window (as gatherReadings left them), and tallies them. Without full it
// stops at the first busy device and reports busy: the verdict is then
// known, and u.devs is incomplete.
func (d *Detector) devicesStats(h *host, need float64, full bool, u *usage) (t deviceTally, busy bool) {
	t.allFlat = true
	u.devs = h.stats[:0]
	for slot, util := range h.util[:len(h.ids)] {
		if len(util) == 0 {
			continue
		}
		ds := d.deviceStats(h.ids[slot], util, h.power[slot], h.mem[slot], need, full)
		if !ds.Flat {
			t.allFlat = false
			if !full && ds.Why != whyTooFew {
				return t, true
			}
		}
		if ds.UtilMedian >= d.c.HighUtil {
			t.high++
		}
		if ds.UtilMedian <= d.c.IdleUtil {
			t.idle++
			if ds.Flat && slices.Max(h.mem[slot]) < d.c.UnusedMemMiB {
				t.unused++
			}
		}
		u.devs = append(u.devs, ds)
	}
	h.stats = u.devs
	return t, false
}

// deviceStats computes one device's statistics from its readings over the
// window and judges it: flat, or not and why. The medians are computed only
// where the judgement needs them, unless full is set; full adds the MAD of
// utilisation too.
func (d *Detector) deviceStats(id string, util, power, mem []float64, need float64, full bool) DeviceStats {
	n := len(util)
	ds := DeviceStats{ID: id, Samples: n}
	ds.UtilStddev, ds.PowerStddevW = hangfmt.Round(stddev(util)), hangfmt.Round(stddev(power))
	ds.MemChangeMiB = hangfmt.Round(slices.Max(mem) - slices.Min(mem))
	haveMedians := false
	switch {
	case float64(n) < need:
		ds.Why = whyTooFew
	case ds.UtilStddev > d.c.UtilStddev:
		ds.Why = "utilisation varies"
	case ds.PowerStddevW > d.c.PowerStddevW:
		ds.Why = "power varies"
	case ds.MemChangeMiB > d.c.MemChangeMiB:
		ds.Why = "memory use changed"
	default:
		ds.UtilMedian, ds.PowerMedianW = hangfmt.Round(d.median(util)), hangfmt.Round(d.median(power))
		haveMedians = true
		if d.c.BusyPowerW > 0 && ds.PowerMedianW >= d.c.BusyPowerW {
			ds.Why = "power high"
		} else {
			ds.Flat = true
		}
	}
	if full {
		if !haveMedians {
			ds.UtilMedian, ds.PowerMedianW = hangfmt.Round(d.median(util)), hangfmt.Round(d.median(power))
		}
		ds.UtilMAD = hangfmt.Round(d.mad(util, ds.UtilMedian))
	}
	return ds
}

// classifyCPUOnly sets u's verdict, reason and message for a host whose
// CPU decides alone (why: "no accelerators", or why its devices do not
// decide).
func (d *Detector) classifyCPUOnly(u *usage, cpuFlat bool, why string) {
	switch {
	case !u.cpuKnown:
		u.msg = text("%s; CPU readings missing", why)
	case !cpuFlat:
		u.verdict, u.msg = verdictBusy, text("%s; CPU rate varies (%.2f±%.2f cores)", why, u.cpuMedian, u.cpuStddev)
	case u.cpuMedian <= d.c.CPUIdleCores:
		u.verdict, u.reason = verdictFlat, ReasonFlatCPUIdle
		u.msg = text("%s; CPU flat and idle at %.2f cores", why, u.cpuMedian)
	case d.c.CPUSpinIsHang:
		u.verdict, u.reason = verdictFlat, ReasonFlatCPUSpin
		u.msg = text("%s; CPU flat at %.2f cores (spinning)", why, u.cpuMedian)
	default:
		// Flat but busy: a computation or a spin; cannot tell.
		u.msg = text("%s; CPU flat at %.2f cores, busy (not judged a hang)", why, u.cpuMedian)
	}
}

// classifyDevices sets u's verdict, reason and message from the devices'
// statistics (u.devs, tallied in t) and the CPU's: flat only when every
// device and the CPU are, and then the reason says at which level the
// devices sit.
func (d *Detector) classifyDevices(u *usage, t deviceTally, cpuFlat bool) {
	switch {
	case !t.allFlat:
		if ds, ok := firstBusy(u.devs); ok {
			u.verdict = verdictBusy
			u.msg = text("device %s: %s (util %.1f±%.1f%%, power %.0f±%.1f W, memory changed %.0f MiB)",
				ds.ID, ds.Why, ds.UtilMedian, ds.UtilStddev, ds.PowerMedianW, ds.PowerStddevW, ds.MemChangeMiB)
		} else {
			u.msg = text("too few readings of some devices")
		}
		return
	case !u.cpuKnown:
		u.msg = text("devices flat but CPU readings missing")
		return
	case !cpuFlat:
		u.verdict = verdictBusy
		u.msg = text("devices flat but CPU rate varies (%.2f±%.2f cores)", u.cpuMedian, u.cpuStddev)
		return
	}
	u.verdict = verdictFlat
	n, high, idle, cpu := len(u.devs), t.high, t.idle, u.cpuMedian
	switch {
	case high == n:
		u.reason = ReasonFlatUsageStuckCollective
		u.msg = text("all %d devices flat at high utilisation with low power (stuck collective), CPU flat at %.2f cores", n, cpu)
	case idle == n:
		u.reason = ReasonFlatUsageIdle
		u.msg = text("all %d devices flat and idle, CPU flat at %.2f cores", n, cpu)
	case high+idle == n:
		u.reason = ReasonFlatUsageMixed
		u.msg = text("all %d devices flat: %d at high utilisation, %d idle, CPU flat at %.2f cores", n, high, idle, cpu)
	default:
		u.reason = ReasonFlatUsage
		u.msg = text("all %d devices flat, CPU flat at %.2f cores", n, cpu)
	}
}

// firstBusy returns the first device of devs that is judged and not flat.
func firstBusy(devs []DeviceStats) (DeviceStats, bool) {
	for _, ds := range devs {
		if !ds.Flat && ds.Why != whyTooFew {
			return ds, true
		}
	}
	return DeviceStats{}, false
}
