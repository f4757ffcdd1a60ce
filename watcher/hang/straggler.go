package hang

import (
	"fmt"
	"sort"
	"time"
)

// Straggler reasons.
const (
	// StragglerBusyWhilePeersIdle: the host's devices are pinned busy over
	// the window while its peers' devices idle-wait.
	StragglerBusyWhilePeersIdle = "BusyWhilePeersIdle"
	// StragglerProgressBehind: the host's progress lines are behind its
	// peers' (an earlier epoch, or more than two logging intervals of steps).
	StragglerProgressBehind = "ProgressBehind"
)

// StragglerGap is how far, in percentage points, a straggler's mean device
// utilisation over the window stands above the median of its peers', which
// must be at most 100 - StragglerGap - 10 (idle-waiting).
const StragglerGap = 40

// HostLoad is one host's load and progress over the last window, what the
// straggler rule compares.
type HostLoad struct {
	Host string
	// Util is the mean device utilisation over the window, percent; valid
	// when Samples covers Config.MinCoverage of the window.
	Util    float64
	Samples int
	// Epoch and Step are the host's slowest rank's latest progress (-1:
	// none); Interval is its last step increment between two progress
	// lines (0: unknown).
	Epoch, Step, Interval int64
}

// Stragglers names the hosts of a progressing job that hold the others
// back, as straggler events at time t:
//   - BusyWhilePeersIdle: mean device utilisation at least c.HighUtil and
//     StragglerGap above the median of the other hosts', which is at most
//     100 - StragglerGap - 10 (they idle-wait for it);
//   - ProgressBehind: in an earlier epoch than the median of the others,
//     or in the same epoch more than two logging intervals of steps behind
//     their median step.
//
// Only hosts whose samples cover c.MinCoverage of the window count for the
// first rule, and each rule names at most a minority of the compared hosts
// (one of two counts as a minority: the evidence is one-sided). A healthy,
// balanced job, however noisy, has none. The result is sorted by host.
func Stragglers(t time.Time, job string, loads []HostLoad, c Config) []Event {
	ls := append([]HostLoad(nil), loads...)
	sort.Slice(ls, func(i, j int) bool { return ls[i].Host < ls[j].Host })
	expected := float64(c.Window/c.Period) + 1
	var covered []HostLoad
	for _, l := range ls {
		if float64(l.Samples) >= c.MinCoverage*expected {
			covered = append(covered, l)
		}
	}
	mk := func(l HostLoad, reason, msg string, ev map[string]any) Event {
		return Event{Time: t, Host: l.Host, Job: job, Event: EventStraggler, Reason: reason, Message: msg, Evidence: ev}
	}
	var out []Event
	utils := sortedOf(covered, func(o HostLoad) float64 { return o.Util })
	busy := minority(covered, func(l HostLoad) (Event, bool) {
		m := medianExcept(utils, l.Util)
		if l.Util < c.HighUtil || l.Util-m < StragglerGap || m > 100-StragglerGap-10 {
			return Event{}, false
		}
		return mk(l, StragglerBusyWhilePeersIdle,
			fmt.Sprintf("devices at %.0f%% over the window while its peers idle-wait at %.0f%% (median)", l.Util, m),
			map[string]any{"util": round(l.Util), "peers_util_median": round(m), "window_s": c.Window.Seconds()}), true
	})
	out = append(out, busy...)
	var withProgress []HostLoad
	for _, l := range ls {
		if l.Step >= 0 || l.Epoch >= 0 {
			withProgress = append(withProgress, l)
		}
	}
	p := progressPeers{
		epochs:    sortedOf(withProgress, func(o HostLoad) float64 { return float64(o.Epoch) }),
		steps:     sortedOf(withProgress, func(o HostLoad) float64 { return float64(o.Step) }),
		intervals: sortedOf(withProgress, func(o HostLoad) float64 { return float64(o.Interval) }),
	}
	out = append(out, minority(withProgress, func(l HostLoad) (Event, bool) {
		return progressBehind(l, p, mk)
	})...)
	return out
}

// progressBehind: an earlier epoch than the others' median, or the same
// epoch and more than two logging intervals of steps behind their median.
func progressBehind(l HostLoad, p progressPeers, mk func(HostLoad, string, string, map[string]any) Event) (Event, bool) {
	me := medianExcept(p.epochs, float64(l.Epoch))
	ms := medianExcept(p.steps, float64(l.Step))
	mi := medianExcept(p.intervals, float64(l.Interval))
	ev := map[string]any{"epoch": l.Epoch, "step": l.Step, "peers_epoch_median": me, "peers_step_median": ms}
	switch {
	case l.Epoch >= 0 && float64(l.Epoch) < me:
		return mk(l, StragglerProgressBehind, fmt.Sprintf("in epoch %d while its peers are in epoch %.0f (median)", l.Epoch, me), ev), true
	case float64(l.Epoch) == me && mi > 0 && ms-float64(l.Step) > 2*mi:
		ev["step_interval"] = mi
		return mk(l, StragglerProgressBehind, fmt.Sprintf("at step %d while its peers are at %.0f (median)", l.Step, ms), ev), true
	}
	return Event{}, false
}

// progressPeers holds the sorted progress values of the hosts compared.
type progressPeers struct{ epochs, steps, intervals []float64 }

// minority applies match to each host and keeps the matches when they are
// a minority of hosts (or one of two).
func minority(ls []HostLoad, match func(l HostLoad) (Event, bool)) []Event {
	if len(ls) < 2 {
		return nil
	}
	var out []Event
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
