package straggler

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
	"github.com/vigil-hpc/vigil/watcher/joblog"
)

// StragglerSlowSteps: the host's ranks take longer per step than its
// peers', over the last half window, in a run of slow logging intervals.
const StragglerSlowSteps = "SlowSteps"

// Thresholds of the step-cadence rule (SlowSteps).
const (
	// StragglerStepRatio: a slow host's seconds per step are at least this
	// multiple of its peers' median over the same span. Poll timing and
	// jitter move a healthy host's figure by a few tens of percent; a
	// rank slowed two or three times is far beyond.
	StragglerStepRatio = 1.5
	// StragglerStepMADs: and above the peers' median by more than this
	// many (scaled) median absolute deviations of the peers' figures.
	StragglerStepMADs = 5
	// StragglerStepRun: its latest logging intervals, at least this many,
	// are each at least StragglerStepRatio times the peers' median: a
	// pause (a checkpoint, an evaluation, a one-off slow step) is one
	// long interval, a slowed rank is slow in every interval.
	StragglerStepRun = 2
)

// Bounds of what is kept of a host's progress lines.
const (
	maxStepRanks  = 16  // ranks followed per host
	maxStepPoints = 128 // progress points kept per rank
)

// stepPoint is a rank's progress as of one line: the latest line of a
// poll (lines read in one poll share its time).
type stepPoint struct {
	t     time.Time
	epoch int64
	step  int64
	// seg is set on a point that starts a run of comparable steps (the
	// rank's first, a new epoch, a step that went back: a restart).
	seg bool
}

// stepTrack keeps, per rank, the progress points of a host's own lines
// (attributed to it by their text) over the last window.
type stepTrack struct {
	ranks map[int][]stepPoint
}

// observe takes a progress line m of the host at t; lines without a step,
// and lines that do not advance the rank's step, are not kept.
func (s *stepTrack) observe(t time.Time, m joblog.Match, window time.Duration) {
	if m.Kind != joblog.KindProgress || m.Step < 0 {
		return
	}
	if s.ranks == nil {
		s.ranks = map[int][]stepPoint{}
	}
	ps, ok := s.ranks[m.Rank]
	if !ok && len(s.ranks) >= maxStepRanks {
		return
	}
	p := stepPoint{t: t, epoch: m.Epoch, step: m.Step, seg: true}
	if n := len(ps); n > 0 {
		last := ps[n-1]
		switch {
		case t.Before(last.t):
			return
		case m.Epoch == last.epoch && m.Step == last.step:
			return // no step since: the next advance carries the time
		case m.Epoch == last.epoch && m.Step > last.step:
			p.seg = false
		}
		if t.Equal(last.t) {
			p.seg = p.seg || last.seg
			ps = ps[:n-1] // the same poll: its latest line counts
		}
	}
	ps = append(ps, p)
	// Keep the window and the point before it (the base of its first
	// interval).
	cut := t.Add(-window)
	i := 0
	for i+1 < len(ps) && !ps[i+1].t.After(cut) || len(ps)-i > maxStepPoints {
		i++
	}
	s.ranks[m.Rank] = append(ps[:0], ps[i:]...)
}

// stepInterval is a rank's pace between two of its points.
type stepInterval struct {
	from, to time.Time
	steps    int64
	perStep  float64 // seconds per step
}

// intervals are the rank's intervals within its segments, oldest first.
func intervals(ps []stepPoint) []stepInterval {
	var out []stepInterval
	for i := 1; i < len(ps); i++ {
		if ps[i].seg {
			continue
		}
		a, b := ps[i-1], ps[i]
		out = append(out, stepInterval{a.t, b.t, b.step - a.step, b.t.Sub(a.t).Seconds() / float64(b.step-a.step)})
	}
	return out
}

// stepPace is a rank's pace over a span ending now: its seconds per step
// from its points in the span's current segment.
type stepPace struct {
	rank    int
	perStep float64
	ivs     []stepInterval // the rank's intervals over the window
}

// pace is the rank's pace over [now-span, now]: from its last point at or
// before the span's start (or its first in it) to its last, within one
// segment; ok is false when those cover less than half the span, or the
// rank's last line is more than half a span old (it went quiet: a pause
// or a hang, which other rules judge).
func pace(rank int, ps []stepPoint, now time.Time, span time.Duration) (stepPace, bool) {
	if len(ps) < 2 {
		return stepPace{}, false
	}
	end := ps[len(ps)-1]
	if now.Sub(end.t) > span/2 {
		return stepPace{}, false
	}
	start := now.Add(-span)
	b := len(ps) - 1
	for b > 0 && !ps[b].seg && ps[b].t.After(start) {
		b--
	}
	base := ps[b]
	if end.t.Sub(base.t) < span/2 || end.step <= base.step {
		return stepPace{}, false
	}
	return stepPace{rank: rank, perStep: end.t.Sub(base.t).Seconds() / float64(end.step-base.step), ivs: intervals(ps)}, true
}

// slowest is the host's slowest rank's pace over the span ending now.
func (s *stepTrack) slowest(now time.Time, span time.Duration) (stepPace, bool) {
	ranks := make([]int, 0, len(s.ranks))
	for r := range s.ranks {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	var out stepPace
	found := false
	for _, r := range ranks {
		if p, ok := pace(r, s.ranks[r], now, span); ok && (!found || p.perStep > out.perStep) {
			out, found = p, true
		}
	}
	return out, found
}

// fill sets l's step pace (HostLoad.Steps) from the host's lines as of
// now, over the last half window.
func (s *stepTrack) fill(l *HostLoad, now time.Time, window time.Duration) {
	if p, ok := s.slowest(now, stepSpan(window)); ok {
		l.Steps = &p
	}
}

// stepSpan is the span over which the step pace is compared: half the
// window, so that a rank slowed for a few minutes is seen while it lasts.
func stepSpan(window time.Duration) time.Duration { return window / 2 }

// slowSteps names the hosts whose slowest rank takes StragglerStepRatio
// times or more its peers' median seconds per step, beyond
// StragglerStepMADs of their spread, in a run of at least StragglerStepRun
// slow intervals up to its latest; the event says by how much and since
// when. Hosts in named are skipped.
func slowSteps(t time.Time, ls []HostLoad, named map[string]bool, c watchcfg.Hang) []Straggler {
	var paced []HostLoad
	for _, l := range ls {
		if l.Steps != nil {
			paced = append(paced, l)
		}
	}
	paces := sortedOf(paced, func(o HostLoad) float64 { return o.Steps.perStep })
	return minority(paced, func(l HostLoad) (Straggler, bool) {
		p := l.Steps
		m := medianExcept(paces, p.perStep)
		if named[l.Host] || m <= 0 || p.perStep < StragglerStepRatio*m || p.perStep-m <= StragglerStepMADs*peersMAD(paces, p.perStep, m) {
			return Straggler{}, false
		}
		since, run, runPerStep := slowRun(p.ivs, StragglerStepRatio*m)
		if run < StragglerStepRun {
			return Straggler{}, false
		}
		ratio := runPerStep / m
		span := stepSpan(c.StragglerSpan())
		return newStraggler(l, StragglerSlowSteps,
			fmt.Sprintf("rank %d takes %.3g s per step since %s (%s), %.1f× its peers' %.3g s (median over the last %s)",
				p.rank, runPerStep, since.UTC().Format(time.TimeOnly), hangfmt.ShortDuration(t.Sub(since).Round(time.Second)), ratio, m, hangfmt.ShortDuration(span)),
			map[string]any{"rank": p.rank, "step_s": hangfmt.Round(runPerStep), "span_step_s": hangfmt.Round(p.perStep), "peers_step_s_median": hangfmt.Round(m),
				"ratio": hangfmt.Round(ratio), "since": since.UTC(), "slow_intervals": run, "span_s": span.Seconds()}), true
	})
}

// slowRun is the start of the run of the latest intervals whose pace is
// at least limit seconds per step, how many intervals it holds, and its
// seconds per step.
func slowRun(ivs []stepInterval, limit float64) (since time.Time, n int, perStep float64) {
	var steps int64
	for i := len(ivs) - 1; i >= 0 && ivs[i].perStep >= limit; i-- {
		since, n, steps = ivs[i].from, n+1, steps+ivs[i].steps
	}
	if n > 0 {
		perStep = ivs[len(ivs)-1].to.Sub(since).Seconds() / float64(steps)
	}
	return since, n, perStep
}

// peersMAD is the scaled median absolute deviation (1.4826 × MAD: the
// standard deviation of normal noise) of sorted without one element equal
// to x, around their median m.
func peersMAD(sorted []float64, x, m float64) float64 {
	dev := make([]float64, 0, len(sorted))
	skipped := false
	for _, v := range sorted {
		if v == x && !skipped {
			skipped = true
			continue
		}
		dev = append(dev, math.Abs(v-m))
	}
	if len(dev) == 0 {
		return 0
	}
	sort.Float64s(dev)
	n := len(dev)
	mad := dev[n/2]
	if n%2 == 0 {
		mad = (dev[n/2-1] + dev[n/2]) / 2
	}
	return 1.4826 * mad
}
