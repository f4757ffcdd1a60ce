package straggler

import (
	"fmt"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// StragglerStoppedOrThrottled: the host's job processes are held back
// (stopped, state T, or their cgroup throttled by its CPU quota) in a
// share of the window's readings while its peers' are not: its peers wait
// for it in every collective, at its pace. In a job whose ranks step in
// lockstep every host's pace is the slowed one's (SlowSteps cannot tell),
// and a job without devices has no clocks or power to read.
const StragglerStoppedOrThrottled = "StoppedOrThrottled"

// Thresholds of the held-back rule (StoppedOrThrottled).
const (
	// StragglerHeldShare: a held-back host is held in at least this share
	// of its readings over the window, and in StragglerHeldMin readings at
	// least; its peers' median share is at most StragglerPeersHeldShare.
	// A rank stopped (a debugger's breakpoint, job control) or throttled
	// for one reading is no straggler; one stopped 60% of every 2 s is
	// caught in 60% of the readings.
	StragglerHeldShare      = 0.25
	StragglerHeldMin        = 3
	StragglerPeersHeldShare = 0.05
	// StragglerThrottledShare: a reading counts as throttled when the job
	// cgroups' throttled time grew by at least this share of the time
	// since the reading before.
	StragglerThrottledShare = 0.1
)

// heldPoint is what the held-back rule keeps of one reading.
type heldPoint struct {
	t                  time.Time
	stopped, throttled bool
}

// heldTrack keeps a host's readings of the last window for the held-back
// rule, and the latest throttled time, to read its growth.
type heldTrack struct {
	points []heldPoint
	prev   trace.Sample // the latest reading, once there is one
	read   bool
}

// observe takes the host's reading s (a telemetry record, not a log
// record) and drops the readings older than the window.
func (h *heldTrack) observe(s trace.Sample, window time.Duration) {
	if s.IsLog() || (h.read && !s.Time.After(h.prev.Time)) {
		return
	}
	p := heldPoint{t: s.Time, stopped: s.ProcsT > 0 && !s.HasMissing("pids")}
	if h.read && s.CPUThrottledUsec > h.prev.CPUThrottledUsec {
		grew := float64(s.CPUThrottledUsec - h.prev.CPUThrottledUsec)
		p.throttled = grew >= StragglerThrottledShare*float64(s.Time.Sub(h.prev.Time).Microseconds())
	}
	h.prev, h.read = s, true
	cut := s.Time.Add(-window)
	i := 0
	for i < len(h.points) && h.points[i].t.Before(cut) {
		i++
	}
	h.points = append(h.points[i:], p)
}

// fill sets l's held-back figures from the readings of the window.
func (h *heldTrack) fill(l *HostLoad) {
	l.HeldSamples, l.Stopped, l.Throttled, l.HeldSince, l.stoppedSpan = len(h.points), 0, 0, time.Time{}, 0
	for _, p := range h.points {
		if p.stopped || l.Stopped > 0 {
			l.stoppedSpan++
		}
		if p.stopped {
			l.Stopped++
		}
		if p.throttled {
			l.Throttled++
		}
		if (p.stopped || p.throttled) && l.HeldSince.IsZero() {
			l.HeldSince = p.t
		}
	}
}

// held is how many of l's readings were held back (stopped or throttled).
// A host stopped in every reading since its first stopped one, while the
// job progresses (the rule runs only then), holds a process nobody waits
// for (a tool suspended with ^Z in the job's shell, a helper stopped for
// good): a rank stopped for good stalls its peers, and a slowed one runs
// now and then; its stopped readings do not count.
func (l HostLoad) held() int {
	stopped := l.Stopped
	if stopped >= l.stoppedSpan {
		stopped = 0
	}
	return max(stopped, l.Throttled)
}

// heldShare is the share of l's readings held back.
func (l HostLoad) heldShare() float64 {
	return float64(l.held()) / float64(max(l.HeldSamples, 1))
}

// stoppedOrThrottled: the host's processes stopped or its cgroup throttled
// in StragglerHeldShare of its readings of the window (StragglerHeldMin at
// least) while its peers' median share is at most StragglerPeersHeldShare.
// Only hosts whose readings cover the window (enough) are compared; hosts
// in named are skipped, and the hosts it names are added.
func stoppedOrThrottled(ls []HostLoad, enough func(int) bool, named map[string]bool, c watchcfg.Hang) []Straggler {
	var covered []HostLoad
	for _, l := range ls {
		if enough(l.HeldSamples) {
			covered = append(covered, l)
		}
	}
	shares := sortedOf(covered, HostLoad.heldShare)
	evs := minority(covered, func(l HostLoad) (Straggler, bool) {
		sh, m := l.heldShare(), medianExcept(shares, l.heldShare())
		if named[l.Host] || l.held() < StragglerHeldMin || sh < StragglerHeldShare || m > StragglerPeersHeldShare {
			return Straggler{}, false
		}
		what := "processes stopped (state T)"
		n := l.Stopped
		if l.Throttled == l.held() {
			what, n = "cgroup throttled by its CPU quota", l.Throttled
		}
		return newStraggler(l, StragglerStoppedOrThrottled,
			fmt.Sprintf("%s in %d of %d readings since %s while its peers' are not (%.0f%%, median): its peers wait for it",
				what, n, l.HeldSamples, l.HeldSince.UTC().Format("15:04:05"), 100*m),
			map[string]any{"stopped": l.Stopped, "throttled": l.Throttled, "samples": l.HeldSamples, "held_share": hangfmt.Round(sh),
				"peers_held_share_median": hangfmt.Round(m), "since": l.HeldSince.UTC().Format(time.RFC3339), "window_s": c.StragglerSpan().Seconds()}), true
	})
	for _, e := range evs {
		named[e.Host] = true
	}
	return evs
}
