// Package hangview draws a replay of the hang detector as one
// self-contained HTML page: the digests and their culprits on top, then
// one chart per host of its I/O rate, CPU, device utilisation and device
// power over the window before the verdict, with the host's events marked
// and the culprit hosts highlighted. The page loads nothing from outside
// (inline CSS and SVG, no scripts).
//
// Render is a pure function of the collected samples and events; a
// Collector gathers them from a replay's inputs and output.
package hangview

import (
	"bytes"
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
)

// Data is what the page is drawn from.
type Data struct {
	Title  string             // the page's title; "" is "vigil hang replay"
	Window time.Duration      // the detector's hang window (Config.Window)
	Hosts  map[string][]Point // each host's readings, in time order
	Events []Event            // the replay's output, in its order
}

// page is what the template fills in.
type page struct {
	Title    string
	Jobs     string
	Window   string
	From, To string
	Digests  []Event
	// NoDigest says, when there is no digest, what the page shows
	// instead: this watcher's own hung verdicts, or that there was none.
	NoDigest string
	Verdicts []verdict
	Charts   []hostChart
}

// verdict is a host's row in the page's table: its latest state as this
// page knows it, and what the digests blame it for.
type verdict struct {
	Host, State, Reason, Time, Message string
	Culprit                            bool
	Blame                              string // "culprit: REASONS", "" when the digests name it not
}

type hostChart struct {
	Host    string
	ID      string
	Culprit bool
	Reasons string // the culprit reasons given by the digests
	// NoData: the page has no reading of this host (a host of the digest
	// that this watcher never heard from): no chart, a note instead.
	NoData bool
	// NoAccel: no device reading of this host in the charts' range: its
	// chart has no device panels, and a note says why.
	NoAccel bool
	SVG     template.HTML
}

// Render returns the page for d: digests and the hosts' latest verdicts
// on top, then one chart per host in host order. The time range shown
// runs from two windows before the first hung verdict to a quarter window
// after it (clipped to the readings); without a hung verdict, the last
// three windows of the readings.
func Render(d Data) []byte {
	from, to := timeRange(d)
	culprits := culpritReasons(d.Events)
	title := d.Title
	if title == "" {
		title = "vigil hang replay"
	}
	p := page{Title: title, Window: hangfmt.ShortDuration(d.Window),
		From: stamp(from), To: stamp(to), Jobs: strings.Join(jobs(d), ", "), Verdicts: verdicts(d, culprits)}
	for _, e := range d.Events {
		if e.Event == digest.EventDigest {
			p.Digests = append(p.Digests, e)
		}
	}
	if len(p.Digests) == 0 {
		p.NoDigest = noDigest(d)
	}
	for i, h := range hostNames(d) {
		c := hostChart{Host: h, ID: "host-" + itoa(i), Culprit: culprits[h] != "", Reasons: culprits[h],
			NoData: len(d.Hosts[h]) == 0}
		if !c.NoData {
			c.NoAccel = !hasAccel(d.Hosts[h], from, to)
			c.SVG = template.HTML(chart(h, d.Hosts[h], d.Events, from, to, d.Window)) //nolint:gosec // chart escapes its text
		}
		p.Charts = append(p.Charts, c)
	}
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, p); err != nil {
		panic(err) // the template and its data are ours: a failure is a bug
	}
	return b.Bytes()
}

// timeRange is the stretch of time the charts show.
func timeRange(d Data) (from, to time.Time) {
	for _, ps := range d.Hosts {
		if len(ps) == 0 {
			continue
		}
		if from.IsZero() || ps[0].Time.Before(from) {
			from = ps[0].Time
		}
		if last := ps[len(ps)-1].Time; last.After(to) {
			to = last
		}
	}
	var verdict time.Time
	for _, e := range d.Events {
		if e.Event == hang.EventHung && (verdict.IsZero() || e.Time.Before(verdict)) {
			verdict = e.Time
		}
	}
	if d.Window <= 0 {
		return from, to
	}
	if !verdict.IsZero() {
		return later(from, verdict.Add(-2*d.Window)), earlier(to, verdict.Add(d.Window/4))
	}
	return later(from, to.Add(-3*d.Window)), to
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// culpritReasons maps each culprit host of a digest to its reasons.
func culpritReasons(evs []Event) map[string]string {
	m := map[string]string{}
	for _, e := range evs {
		if e.Event != digest.EventDigest {
			continue
		}
		for _, c := range e.Culprits {
			if m[c.Host] == "" {
				m[c.Host] = c.Reason
			} else if !strings.Contains(m[c.Host], c.Reason) {
				m[c.Host] += ", " + c.Reason
			}
		}
	}
	return m
}

// Table states of a host without a verdict on the page.
const (
	// StateNoVerdict: the page has the host's readings and no suspect or
	// hung verdict of it, but a digest names it a culprit ("ok" would say
	// it is fine).
	StateNoVerdict = "no verdict"
	// StateUnknown: the page has neither readings nor verdicts of the host
	// (a host of the digest on another node's copy): it cannot tell.
	StateUnknown = "unknown here"
)

// verdicts is every host's row: its latest suspect, hung or recovered
// event; "ok" for a host with readings and no event; StateNoVerdict for
// such a host that a digest blames; StateUnknown for a host the page has
// no reading of.
func verdicts(d Data, culprits map[string]string) []verdict {
	latest := map[string]Event{}
	for _, e := range d.Events {
		switch e.Event {
		case hang.EventSuspect, hang.EventHung, hang.EventRecovered:
			latest[e.Host] = e
		}
	}
	var out []verdict
	for _, h := range hostNames(d) {
		v := verdict{Host: h, State: "ok", Culprit: culprits[h] != ""}
		if v.Culprit {
			v.Blame = "culprit: " + culprits[h]
		}
		e, ok := latest[h]
		switch {
		case ok:
			v.State, v.Reason, v.Time, v.Message = e.Event, e.Reason, stamp(e.Time), e.Message
		case len(d.Hosts[h]) == 0:
			v.State, v.Message = StateUnknown, "no readings or verdicts of "+h+" on this page: the page of the job's coordinator has them"
		case v.Culprit:
			v.State, v.Message = StateNoVerdict, "no suspect or hung verdict of its own; the digest names it for the evidence above"
		}
		out = append(out, v)
	}
	return out
}

// noDigest is what a page without a digest says: the hosts hung on it
// (a watcher's report of its own node: the digest is the coordinator's),
// or that there was no hang.
func noDigest(d Data) string {
	var hung []string
	for _, v := range verdicts(d, nil) {
		if v.State == hang.EventHung {
			hung = append(hung, v.Host+" at "+v.Time+" ("+v.Reason+")")
		}
	}
	if len(hung) == 0 {
		return "No hang episode: no host is hung on this page, and there is no digest."
	}
	return "Hung: " + strings.Join(hung, ", ") + ". No digest on this page: it is one watcher's report of its own node; " +
		"a digest (cause and culprits across the job's nodes) comes from the job's coordinator."
}

// hostNames is every host of the readings and of the events, sorted.
func hostNames(d Data) []string {
	seen := map[string]bool{}
	for h := range d.Hosts {
		seen[h] = true
	}
	for _, e := range d.Events {
		if e.Host != "" {
			seen[e.Host] = true
		}
		for _, h := range e.Hosts {
			seen[h] = true
		}
	}
	out := make([]string, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

func jobs(d Data) []string {
	seen := map[string]bool{}
	for _, ps := range d.Hosts {
		for _, p := range ps {
			seen[p.Job] = true
		}
	}
	var out []string
	for j := range seen {
		if j != "" {
			out = append(out, j)
		}
	}
	sort.Strings(out)
	return out
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
