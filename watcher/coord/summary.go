// Package coord is how the watchers of one job share what they see: every
// period each watcher sends a compact summary of its node (the detector's
// state, its latest reading, the job's matched output lines) to one
// coordinator among them, over a MUNGE-sealed rendezvous session; the
// coordinator follows the job's hang episodes (hang.Episodes) over the
// summaries, computes the one digest per episode, and alone announces it.
// A watcher without peers (a one-node job, no MUNGE, no coordinator left)
// tracks its own node (Lone) and acts for itself.
package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Out is one of the job's own events for the watch loop to print and act on.
type Out struct {
	Event any // digest.DigestEvent, or a straggler hang.Event
	// Notify says this node announces it (comment, webhook, mail, the
	// job's hang action); otherwise it is recorded only.
	Notify bool
}

// MaxSummaryLogs bounds the matched lines one summary carries; the lines
// past it in one period are dropped and counted (the first errors tell most).
const MaxSummaryLogs = 256

// Summary is what a watcher tells the coordinator about its node once per
// period.
type Summary struct {
	State  string `json:"state"`            // digest.StateOK, StateSuspect or StateHung
	Reason string `json:"reason,omitempty"` // of the node's latest event
	// Since is, while the node is suspect or hung, since when its I/O
	// stayed below the threshold (the detector's "since": its last
	// progress); zero while it is ok.
	Since  time.Time     `json:"since,omitzero"`
	Sample *trace.Sample `json:"sample,omitempty"` // the latest reading (processes, I/O, CPU, devices); nil before the first
	// Earlier are the node's readings since the previous summary before
	// Sample, oldest first, when more than one was taken in between (a
	// round late for this node): the coordinator's short stretches (the
	// pulse, strong evidence) count every reading. At most MaxEarlier.
	Earlier []trace.Sample `json:"earlier,omitempty"`
	Logs    []LogLine      `json:"logs,omitempty"` // matched lines since the previous summary
	// Dropped counts the matched lines left out since the previous summary.
	Dropped int `json:"dropped,omitempty"`
	// Ranks are the global ranks of the job's processes on the node, as
	// last read from their environment (sample.Sampler.Ranks); the
	// coordinator makes the job's rank map of them (RankMap).
	Ranks []int `json:"ranks,omitempty"`
}

// LogLine is one matched line of the node's job output or kernel log.
type LogLine struct {
	Time   time.Time `json:"t"`
	Stream string    `json:"s"` // trace.StreamStdout, StreamStderr or StreamKmsg
	Line   string    `json:"l"`
	// Host is the job's node the line is about when that is not the
	// sender (a line of the job's output that names its host); "" is the sender.
	Host string `json:"h,omitempty"`
}

// Encode is the summary's wire form (JSON).
func (s Summary) Encode() ([]byte, error) { return json.Marshal(s) }

// DecodeSummary reads a summary from its wire form.
func DecodeSummary(b []byte) (Summary, error) {
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return Summary{}, fmt.Errorf("coord: summary: %w", err)
	}
	switch s.State {
	case digest.StateOK, digest.StateSuspect, digest.StateHung:
	default:
		return Summary{}, fmt.Errorf("coord: summary: state %q", s.State)
	}
	if !validRanks(s.Ranks) {
		return Summary{}, fmt.Errorf("coord: summary: %d ranks, or a rank out of [0, %d)", len(s.Ranks), maxRank)
	}
	return s, nil
}

// MaxEarlier bounds Summary.Earlier.
const MaxEarlier = 4

// pending is the summary a node builds between two sends.
type pending struct {
	mu    sync.Mutex
	sum   Summary
	fresh bool // sum.Sample was taken since the previous send
}

func newPending() *pending { return &pending{sum: Summary{State: digest.StateOK}} }

// observe takes one record of this node and the detector's events for it.
func (p *pending) observe(s trace.Sample, evs []hang.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.IsLog() {
		if len(p.sum.Logs) >= MaxSummaryLogs {
			p.sum.Dropped++
			return
		}
		p.sum.Logs = append(p.sum.Logs, LogLine{Time: s.Time, Stream: s.Log.Stream, Line: s.Log.Line, Host: s.Host})
		return
	}
	c := s
	if p.fresh && p.sum.Sample != nil {
		p.sum.Earlier = append(p.sum.Earlier, *p.sum.Sample)
		if len(p.sum.Earlier) > MaxEarlier {
			p.sum.Earlier = p.sum.Earlier[1:]
		}
	}
	p.sum.Sample, p.fresh = &c, true
	for _, ev := range evs {
		p.sum.Reason = ev.Reason
		switch ev.Event {
		case hang.EventSuspect:
			p.sum.State, p.sum.Since = digest.StateSuspect, ev.Since
		case hang.EventHung:
			p.sum.State, p.sum.Since = digest.StateHung, ev.Since
		case hang.EventRecovered:
			p.sum.State, p.sum.Since = digest.StateOK, time.Time{}
		}
	}
}

// setRanks sets the node's ranks, sent with every summary from now on.
func (p *pending) setRanks(ranks []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sum.Ranks = ranks
}

// take returns the summary to send and starts the next one (same state,
// reading and ranks, no lines).
func (p *pending) take() Summary {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.sum
	p.sum.Logs, p.sum.Dropped, p.sum.Earlier, p.fresh = nil, 0, nil, false
	return out
}

// Lone is the job view of a watcher without peers: the digest and
// stragglers of its own node, from its own records. Its hang digests are
// recorded, not announced: the node's own hung event already was. The
// digest of a failed job (digest.EventFailed, at End) is announced when
// AnnounceFailures is set: the watcher follows the job's output (the
// batch host), the only lone watcher that sees the job's own words.
//
// A hang the job's pulse or strong evidence detected (a digest whose
// Detection is not the window's) has no hung event of the node before
// it: a lone watcher that follows the job's output announces it, and its
// end (JobRecovered) once the job moves again.
type Lone struct {
	ep               *hang.Episodes
	ranks            RankMap // this node's ranks (SetRanks)
	AnnounceFailures bool
	job              string       // of the latest record
	announced        announcement // the open hang this watcher announced
}

// NewLone returns the view of a lone watcher with the detector's configuration.
func NewLone(c hang.Config) *Lone { return &Lone{ep: hang.NewLiveEpisodes(c)} }

// Observe takes one record of the node and the detector's events for it.
func (l *Lone) Observe(s trace.Sample, evs []hang.Event) {
	l.job = s.Job
	l.ep.Observe(s, evs)
}

// Due returns the digests and stragglers due at now.
func (l *Lone) Due(_ context.Context, now time.Time) []Out {
	var out []Out
	out = l.announced.end(out, now, l.job, l.ep.Hung(l.job), l.ep.Ended(l.job))
	for _, e := range l.ep.Due(now) {
		d, ok := e.(digest.DigestEvent)
		fast := ok && d.Event == digest.EventDigest && d.Detection != nil && d.Detection.By != digest.DetectedWindow
		notify := ok && l.AnnounceFailures && (d.Event == digest.EventFailed || fast)
		if notify && fast {
			l.announced.open(d)
		}
		out = append(out, Out{Event: e, Notify: notify})
	}
	return out
}

// SetRanks takes the global ranks of the job's processes on this node,
// host, read now.
func (l *Lone) SetRanks(host string, ranks []int) {
	l.ranks.Update(map[string][]int{host: ranks})
}

// Ranks is the job's rank map as this watcher knows it: its own node's.
func (l *Lone) Ranks() map[int]string { return l.ranks.Map() }

// Suspect reports whether the job may be hung as this watcher sees it
// (hang.Episodes.Suspect).
func (l *Lone) Suspect() bool { return l.ep.Suspect(l.job) }

// Role is trace.RoleLone.
func (l *Lone) Role() string { return trace.RoleLone }

// End returns the job's events due at the watcher's stop, once its last
// records (its end record among them) are observed: the digest of a job
// that failed.
func (l *Lone) End(ctx context.Context, now time.Time) []Out { return l.Due(ctx, now) }
