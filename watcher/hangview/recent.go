package hangview

import (
	"sort"
	"sync"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Recent keeps what the live hang report's page is drawn from, as a
// running watcher sees it: each host's readings of the last Keep, and the
// hosts' suspect, hung and recovered events. The watch loop gives it this
// node's readings and the detector's events; on the job's coordinator, the
// coordinator also gives it every host's readings and state changes from
// the watchers' summaries. It is safe for concurrent use.
type Recent struct {
	mu     sync.Mutex
	window time.Duration
	keep   time.Duration
	hosts  map[string][]Point
	state  map[string]string // each host's latest event kind
	events []Event
}

// NewRecent returns an empty Recent for a hang window: it keeps
// KeepWindows windows of readings, what the page shows before a verdict
// and a little after.
func NewRecent(window time.Duration) *Recent {
	return &Recent{window: window, keep: time.Duration(KeepWindows * float64(window)),
		hosts: map[string][]Point{}, state: map[string]string{}}
}

// KeepWindows is how many hang windows of readings Recent keeps per host:
// the page shows two windows before the first hung verdict and a quarter
// window after it.
const KeepWindows = 2.5

// Observe takes one record of a host and the events about it. A log
// record, and a reading not newer than the host's latest one (the same
// reading seen twice: through the loop and through the coordinator), are
// left out, as is an event that repeats the host's latest kind.
func (r *Recent) Observe(s trace.Sample, evs []hang.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !s.IsLog() && s.Host != "" {
		ps := r.hosts[s.Host]
		if len(ps) == 0 || s.Time.After(ps[len(ps)-1].Time) {
			ps = append(ps, PointOf(s))
			cut := s.Time.Add(-r.keep)
			i := 0
			for i < len(ps) && ps[i].Time.Before(cut) {
				i++
			}
			r.hosts[s.Host] = ps[i:]
		}
	}
	for _, ev := range evs {
		r.event(ev)
	}
}

// event records a suspect, hung or recovered event that changes its host's
// state, and drops the events older than Keep before it that are not
// their host's latest (the page's table shows each host's latest).
func (r *Recent) event(ev hang.Event) {
	switch ev.Event {
	case hang.EventSuspect, hang.EventHung, hang.EventRecovered:
	default:
		return
	}
	if ev.Host == "" || r.state[ev.Host] == ev.Event {
		return
	}
	r.state[ev.Host] = ev.Event
	r.events = append(r.events, Event{Time: ev.Time, Host: ev.Host, Job: ev.Job, Event: ev.Event,
		Reason: ev.Reason, Message: ev.Message})
	cut := ev.Time.Add(-r.keep)
	latest := map[string]int{}
	for i, e := range r.events {
		latest[e.Host] = i
	}
	kept := r.events[:0]
	for i, e := range r.events {
		if !e.Time.Before(cut) || latest[e.Host] == i {
			kept = append(kept, e)
		}
	}
	r.events = kept
}

// Data returns a copy of what is kept, events in time order, with the
// hang window.
func (r *Recent) Data() Data {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := Data{Window: r.window, Hosts: make(map[string][]Point, len(r.hosts)), Events: append([]Event(nil), r.events...)}
	for h, ps := range r.hosts {
		d.Hosts[h] = append([]Point(nil), ps...)
	}
	sort.SliceStable(d.Events, func(i, j int) bool { return d.Events[i].Time.Before(d.Events[j].Time) })
	return d
}
