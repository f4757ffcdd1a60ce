package coord

import (
	"sort"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Hub is the coordinator's view of the job: it feeds the watchers'
// summaries to hang.Episodes, as a replay feeds it the recorded traces, so
// that the live digest and the replayed one are the same function of the
// same records. A host whose summaries stop keeps its last reading: once
// its peers' readings are two periods newer, the culprit rules name it
// (StaleSamples, a rank-failed digest).
type Hub struct {
	job   string
	ep    *hang.Episodes
	hosts map[string]*hubHost
	// inherited is a digest an earlier coordinator announced; the first
	// digest of a hang already open when this hub started is not announced again.
	inherited *digest.DigestEvent
	started   bool
	suppress  bool
	nodes     map[string]bool // the job's nodes a line may be about; nil: any
	announced announcement    // the open hang this hub announced
	ranks     RankMap         // the job's ranks by host, from the summaries
	log       logrus.FieldLogger
	// Seen, when set, is given every host's reading that Ingest takes in,
	// with the state change it carries (the live hang report's page).
	Seen func(s trace.Sample, evs []hang.Event)
}

// JobRecovered is the end of an announced hang of the job: no host is hung
// any more. Its JSON form is one line of the event stream:
//
//	{"time":T,"job":J,"event":"recovered","digest":T0,"since":S}
type JobRecovered struct {
	Time   time.Time `json:"time"`
	Job    string    `json:"job"`
	Event  string    `json:"event"`  // hang.EventRecovered
	Digest time.Time `json:"digest"` // when the hang's digest was computed
	// Since is the digest's since: when the hang began (zero when the
	// digest had none).
	Since time.Time `json:"since,omitzero"`
}

// announcement is the open hang a watcher announced, until the job moves
// again: then its end is announced once (JobRecovered).
type announcement struct{ digest, since time.Time }

// open records d as the announced digest of the open hang.
func (a *announcement) open(d digest.DigestEvent) { a.digest, a.since = d.Time, d.Since }

// end appends to out, when a hang is announced and the job is no longer
// hung, the announcement of its end at now, and forgets the hang. A job
// that ended (its watcher's end record: cancelled, requeued, killed) is
// not announced recovered: its processes went with it, which is what
// moved it.
func (a *announcement) end(out []Out, now time.Time, job string, hung, ended bool) []Out {
	if a.digest.IsZero() || hung || ended {
		return out
	}
	out = append(out, Out{Event: JobRecovered{Time: now, Job: job, Event: hang.EventRecovered,
		Digest: a.digest, Since: a.since}, Notify: true})
	*a = announcement{}
	return out
}

type hubHost struct {
	state string
	last  time.Time // of the latest reading taken
}

// NewHub returns the coordinator's view of job with the detector's
// configuration. nodes are the job's nodes: a line a summary says is about
// another host counts for that host only when it is one of them (nil: any).
// inherited, when not nil, is the digest an earlier coordinator of the job
// announced.
func NewHub(job string, c hang.Config, nodes []string, inherited *digest.DigestEvent, log logrus.FieldLogger) *Hub {
	if log == nil {
		log = logrus.StandardLogger()
	}
	h := &Hub{job: job, ep: hang.NewLiveEpisodes(c), hosts: map[string]*hubHost{}, inherited: inherited, log: log}
	if nodes != nil {
		h.nodes = map[string]bool{}
		for _, n := range nodes {
			h.nodes[n] = true
		}
	}
	return h
}

type hubRecord struct {
	s   trace.Sample
	evs []hang.Event
}

// Ingest takes one period's summaries, by host, and returns the job's
// events due at now: digests to announce (Notify) and stragglers.
func (h *Hub) Ingest(now time.Time, sums map[string]Summary) []Out {
	claims := map[string][]int{}
	for host, s := range sums {
		if h.nodes == nil || h.nodes[host] {
			claims[host] = s.Ranks
		}
	}
	h.ranks.Update(claims)
	recs := h.records(sums)
	if !h.started {
		h.started = true
		// A hang the previous coordinator announced from the job's pulse
		// or strong evidence shows in no host's state: its next digest is
		// not announced again either, but this hub, which has not seen
		// the job stall, does not announce its end.
		fast := h.inherited != nil && h.inherited.Detection != nil && h.inherited.Detection.By != digest.DetectedWindow
		hung := h.inherited != nil && h.anyHung()
		h.suppress = hung || fast
		if hung {
			h.announced.open(*h.inherited)
		}
	}
	for _, r := range recs {
		h.ep.Observe(r.s, r.evs)
		if h.Seen != nil && !r.s.IsLog() {
			h.Seen(r.s, r.evs)
		}
		if r.s.Time.After(now) { // another node's clock runs ahead
			now = r.s.Time.Add(time.Nanosecond)
		}
	}
	var out []Out
	out = h.announced.end(out, now, h.job, h.anyHung(), h.ep.Ended(h.job))
	for _, e := range h.ep.Due(now) {
		d, ok := e.(digest.DigestEvent)
		if ok && h.suppress {
			h.suppress = false
			h.log.WithFields(logrus.Fields{"cause": d.Cause, "announced": h.inherited.Time.UTC().Format(time.RFC3339)}).
				Info("the digest of this hang was announced by the previous coordinator; not again")
			continue
		}
		if ok {
			h.announced.open(d)
		}
		out = append(out, Out{Event: e, Notify: ok})
	}
	return out
}

// anyHung reports whether the job is hung: a host is, or the pulse or
// evidence rule called it hung and it has not moved since.
func (h *Hub) anyHung() bool {
	for _, hh := range h.hosts {
		if hh.state == digest.StateHung {
			return true
		}
	}
	return h.ep.Hung(h.job)
}

// Ranks is the job's rank map from the summaries so far (RankMap).
func (h *Hub) Ranks() map[int]string { return h.ranks.Map() }

// Suspect reports whether the job may be hung (hang.Episodes.Suspect).
func (h *Hub) Suspect() bool { return h.ep.Suspect(h.job) }

// records turns the summaries into trace records and the events of each
// host's state changes, in time order (hosts in name order at equal times).
func (h *Hub) records(sums map[string]Summary) []hubRecord {
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	var recs []hubRecord
	for _, name := range names {
		s := sums[name]
		hh := h.hosts[name]
		if hh == nil {
			hh = &hubHost{state: digest.StateOK}
			h.hosts[name] = hh
		}
		for _, l := range s.Logs {
			about := name
			if l.Host != "" && (h.nodes == nil || h.nodes[l.Host]) {
				about = l.Host
			}
			recs = append(recs, hubRecord{s: trace.Sample{V: trace.Version, Time: l.Time, Host: about, Job: h.job,
				Log: &trace.Log{Stream: l.Stream, Line: l.Line}}})
		}
		for _, e := range s.Earlier { // readings of a late round, before the latest
			if e.IsLog() || !e.Time.After(hh.last) || s.Sample == nil || !e.Time.Before(s.Sample.Time) {
				continue
			}
			e.Host, e.Job = name, h.job
			hh.last = e.Time
			recs = append(recs, hubRecord{s: e})
		}
		if s.Sample == nil || !s.Sample.Time.After(hh.last) {
			continue
		}
		r := *s.Sample
		r.Host, r.Job, r.Log = name, h.job, nil // a node speaks for itself only
		hh.last = r.Time
		var evs []hang.Event
		if s.State != hh.state {
			kind := s.State
			if s.State == digest.StateOK {
				kind = hang.EventRecovered
			}
			evs = []hang.Event{{Time: r.Time, Host: name, Job: h.job, Event: kind, Reason: s.Reason, Since: s.Since}}
			hh.state = s.State
		}
		recs = append(recs, hubRecord{s: r, evs: evs})
	}
	sort.SliceStable(recs, func(a, b int) bool { return recs[a].s.Time.Before(recs[b].s.Time) })
	return recs
}
