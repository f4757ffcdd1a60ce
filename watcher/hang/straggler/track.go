package straggler

import (
	"time"

	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Track is what the straggler rule keeps of one host of a job over the
// last window: its devices' readings, the pace of the progress lines
// attributed to it, and whether its processes were held back (stopped or
// throttled). The zero Track is empty and ready.
type Track struct {
	util  []utilPoint // the devices' readings of the last window
	steps stepTrack   // the pace of the progress lines attributed to the host
	held  heldTrack   // its processes stopped or throttled
}

// ObserveReading takes the host's telemetry reading s and drops what is
// older than the window.
func (tr *Track) ObserveReading(s trace.Sample, window time.Duration) {
	tr.held.observe(s, window)
	if p, ok := newUtilPoint(s); ok && !s.HasMissing("accel") {
		tr.util = append(tr.util, p)
	}
	cut := s.Time.Add(-window)
	for len(tr.util) > 0 && tr.util[0].t.Before(cut) {
		tr.util = tr.util[1:]
	}
}

// ObserveProgress takes a progress line m of one of the host's ranks,
// read at t.
func (tr *Track) ObserveProgress(t time.Time, m joblog.Match, window time.Duration) {
	tr.steps.observe(t, m, window)
}

// Load is the host's load over the window as of now, what Stragglers
// compares; its ranks' progress (Epoch, Step, Interval) is left unknown
// for the caller, which reads the host's progress lines, to fill.
func (tr *Track) Load(host string, now time.Time, window time.Duration) HostLoad {
	l := newHostLoad(host, tr.util)
	tr.steps.fill(&l, now, window)
	tr.held.fill(&l)
	return l
}
