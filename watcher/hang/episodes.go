package hang

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/hang/straggler"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Episodes follows the jobs of a replay, and says when a digest or a
// straggler event is due: it is what the live coordinator does with the
// watchers' summaries, over a trace.
//
// Digests and stragglers come at the job's rounds, as the live
// coordinator gives them once per period after its own sample. On a
// tracker from NewLiveEpisodes every call of Due is a round (the
// coordinator's Hub, a lone watcher); on one from NewEpisodes (a replay)
// the rounds are the readings of the job's first host in name order, the
// node whose watcher coordinates (rendezvous.Coordinator), or, while its
// readings are more than two periods older than a peer's (its watcher is
// gone and another took over), of the next host in name order.
//
// A hang episode of a job opens at the first hung event of one of its
// hosts; its digest is due at the first round at least one Config.Period
// later (so that the verdicts of the other hosts, sampled at other moments
// of the period, are in), and is computed from every host's state and the
// matched lines of all hosts from digest.DigestLookback windows before the first
// verdict. Its Since is the earliest "since" of the episode's hung events
// before it: when the I/O of the first host to stall stopped. The episode
// closes when no host of the job is hung any more after one of them
// recovered; the next hung event opens a new one. While no host of a job
// is suspect or hung, the straggler rule runs at every round; a host it
// names is reported once, until the rule no longer names it.
type Episodes struct {
	c    Config
	live bool // every Due is a round
	jobs map[string]*jobTrack
	// det keeps every host's readings for the pulse and evidence rules,
	// which judge stretches shorter than the window (Detector.JudgeSpan).
	det *Detector
}

// jobTrack is what Episodes keeps of one job.
type jobTrack struct {
	hosts      map[string]*hostTrack
	addrs      map[string]string // address -> host
	last       time.Time         // the job's latest record
	open       bool              // a hang episode is open
	opened     time.Time         // its first hung event
	since      time.Time         // the earliest since of its hung events
	round      time.Time         // replay: the latest reading of the round's host
	judged     time.Time         // replay: the latest round judged
	digested   bool              // its digest was given
	sent       sentDigest        // what that digest said
	revised    bool              // it was revised once (at most one update per episode)
	newest     time.Time         // the job's newest matched line
	tornDown   bool              // Slurm said the job or a step is cancelled
	recovered  bool              // a host recovered since it opened
	stragglers map[string]bool   // hosts named in their current episode
	layout     joblog.Layout     // the step's layout, from its layout record
	ended      bool              // the watcher of the job's view stopped (an end record)
	endDone    bool              // the end was judged
	pulse      pulseTrack        // the beats of the job's progress lines
	strong     strongEvidence    // strong evidence since the last progress, pending confirmation
	// failing is the first line since the last progress line that says
	// something failed (digest.IsFailure): the launcher is likely ending
	// the job (teardownHold).
	failing time.Time
	// fast is set while the open episode is one the pulse or evidence
	// rule opened and the job has not moved since; detection says how
	// the open episode was detected.
	fast      bool
	detection *digest.Detection
	banner    hostBanner // a launcher's banner, placing the next matched line
	// lost are the hosts whose watcher a peer's watcher lost (a
	// trace.StreamLost record), with when it was first said.
	lost map[string]time.Time
	// unreachable are those of the lost hosts whose address did not
	// answer a connection (trace.Lost.Unreachable).
	unreachable map[string]bool
}

// hostTrack is what Episodes keeps of one host of a job.
type hostTrack struct {
	state  string
	reason string
	latest trace.Sample
	read   bool // latest holds a reading
	// hadProcs is set once a reading showed the job's processes here: a
	// host whose ranks have not started yet (srun still launching, or
	// failed before this host) has none to lose.
	hadProcs bool
	moved    time.Time            // the latest reading whose I/O grew since the one before
	logs     []digest.LogEvidence // matched lines of the last few windows, oldest first
	ranks    map[int]*rankProgress
	load     straggler.Track // its readings and pace over the window, for the straggler rule
}

type rankProgress struct{ epoch, step, interval int64 }

// maxHostLogs bounds the matched lines kept per host.
const maxHostLogs = 256

// maxRanks bounds the ranks whose progress is kept per host.
const maxRanks = 64

// NewEpisodes returns an empty tracker for configuration c whose rounds
// are read from the records (a replay).
func NewEpisodes(c Config) *Episodes {
	return &Episodes{c: c, jobs: map[string]*jobTrack{}, det: spanDetector(c)}
}

// spanDetector keeps the readings the pulse and evidence rules judge:
// stretches of at most a window (older evidence is the window rule's),
// so one window and a little of each host's readings.
func spanDetector(c Config) *Detector {
	d := New(c)
	d.windows = 1
	return d
}

// NewLiveEpisodes returns an empty tracker for configuration c for a caller
// that calls Due once per round, after the round's records.
func NewLiveEpisodes(c Config) *Episodes {
	return &Episodes{c: c, live: true, jobs: map[string]*jobTrack{}, det: spanDetector(c)}
}

func (e *Episodes) job(id string) *jobTrack {
	j := e.jobs[id]
	if j == nil {
		j = &jobTrack{hosts: map[string]*hostTrack{}, addrs: map[string]string{}, stragglers: map[string]bool{}, lost: map[string]time.Time{},
			unreachable: map[string]bool{}}
		e.jobs[id] = j
	}
	return j
}

func (j *jobTrack) host(name string) *hostTrack {
	h := j.hosts[name]
	if h == nil {
		h = &hostTrack{state: digest.StateOK, ranks: map[int]*rankProgress{}}
		j.hosts[name] = h
	}
	return h
}

// Observe takes one record and the detector's events for it (none for a
// log record).
func (e *Episodes) Observe(s trace.Sample, events []Event) {
	j := e.job(s.Job)
	if s.Time.After(j.last) {
		j.last = s.Time
	}
	if s.IsLog() && s.Log.Stream == trace.StreamLayout {
		j.observeLayout(s.Log.Line)
		return
	}
	if s.IsLog() && s.Log.Stream == trace.StreamLost {
		j.observeLost(s)
		return
	}
	if s.IsLog() && s.Log.Stream == trace.StreamEnd {
		var end trace.End
		if json.Unmarshal([]byte(s.Log.Line), &end) == nil && (end.Role == trace.RoleCoordinator || end.Role == trace.RoleLone) {
			j.ended = true
		}
		return
	}
	h := j.host(s.Host)
	if s.IsLog() {
		e.observeLog(j, h, s)
		return
	}
	if h.read && !s.HasMissing("io") && s.IO.Total() > h.latest.IO.Total() {
		h.moved = s.Time
	}
	h.observeReading(s)
	e.det.record(s)
	j.noteTelemetry(s)
	if e.roundHost(j, s) {
		j.round = s.Time
	}
	h.load.ObserveReading(s, e.c.StragglerSpan())
	for _, ev := range events {
		e.observeEvent(j, h, ev)
	}
}

func (e *Episodes) observeEvent(j *jobTrack, h *hostTrack, ev Event) {
	h.reason = ev.Reason
	switch ev.Event {
	case EventSuspect:
		h.state = digest.StateSuspect
	case EventHung:
		h.state = digest.StateHung
		if !j.open {
			j.open, j.opened, j.since, j.digested, j.recovered = true, ev.Time, time.Time{}, false, false
			j.revised, j.tornDown = false, false
			j.detection = &digest.Detection{By: digest.DetectedWindow}
		}
		if !j.digested && !ev.Since.IsZero() && (j.since.IsZero() || ev.Since.Before(j.since)) {
			j.since = ev.Since
		}
	case EventRecovered:
		h.state = digest.StateOK
		j.recovered = j.open
		j.closeEpisode()
	}
}

// observeLayout takes the step's layout record (joblog.Layout as JSON); a
// record that does not decode is ignored.
func (j *jobTrack) observeLayout(text string) {
	var l joblog.Layout
	if json.Unmarshal([]byte(text), &l) == nil {
		j.layout = l
		for node, addr := range l.Addrs {
			j.addrs[addr] = node
		}
	}
}

// attribution is the layout that attributes the job's lines: the step's,
// with the job's hosts seen so far when it names no nodes (an older trace
// without a layout record).
func (j *jobTrack) attribution() joblog.Layout {
	l := j.layout
	if len(l.Nodes) == 0 {
		for name := range j.hosts {
			l.Nodes = append(l.Nodes, name)
		}
		sort.Strings(l.Nodes)
	}
	return l
}

// closeEpisode closes the open episode once its digest is given, a host
// recovered and no host is hung.
func (j *jobTrack) closeEpisode() {
	if j.open && j.digested && j.recovered && !j.fast && !j.anyHung() {
		j.open = false
	}
}

// Ended reports whether the watcher of job id's view stopped (its end
// record): a hang open then ends with the job, which is no recovery.
func (e *Episodes) Ended(id string) bool {
	j := e.jobs[id]
	return j != nil && j.ended
}

// Hung reports whether job id is hung now: a host of it is hung, or the
// pulse or evidence rule called it hung and it has not moved since.
func (e *Episodes) Hung(id string) bool {
	j := e.jobs[id]
	return j != nil && (j.fast || j.anyHung())
}

// detectionOf is how j's open episode was detected, with the job's last
// progress line as of now.
func (e *Episodes) detectionOf(j *jobTrack) *digest.Detection {
	det := digest.Detection{By: digest.DetectedWindow}
	if j.detection != nil {
		det = *j.detection
	}
	if det.LastProgress.IsZero() && !j.pulse.lastLine.IsZero() {
		det.LastProgress = j.pulse.lastLine
		det.Beats = j.pulse.beats
	}
	if !det.LastProgress.IsZero() {
		det.AfterProgressS = j.last.Sub(det.LastProgress).Seconds()
	}
	return &det
}

func (j *jobTrack) anyHung() bool {
	for _, h := range j.hosts {
		if h.state == digest.StateHung {
			return true
		}
	}
	return false
}

func (e *Episodes) observeLog(j *jobTrack, h *hostTrack, s trace.Sample) {
	m, ok := joblog.LineIn(s.Log.Stream, s.Log.Line)
	if !ok {
		return
	}
	// A kernel-log line or a device event is its own host's; a line of
	// the job's output belongs to the host it names (joblog.Attribute),
	// never to the node that read the file: "" when it names none
	// (job-level evidence).
	from, line := s.Host, s.Log.Line
	switch s.Log.Stream {
	case trace.StreamKmsg:
	case trace.StreamRAS: // NCCL's view of the job, as this node asked it
	case trace.StreamDevice: // this node's device: shown in words
		if e, ok := trace.ParseDeviceEvent(line); ok {
			line = e.Text()
		}
	default:
		if from = j.placeLine(s); from != "" {
			h = j.host(from)
		}
	}
	if j.takeBanner(s, m) {
		return
	}
	if m.Kind == joblog.KindCancelled {
		// Slurm's "*** STEP|JOB ... CANCELLED ***": the job is being torn
		// down; what follows (processes gone) is the teardown's, not new
		// evidence of the hang, so the digest is not revised after it.
		j.tornDown = true
	} else if s.Time.After(j.newest) {
		j.newest = s.Time
	}
	if m.Kind == joblog.KindNCCLAddr {
		if from != "" {
			j.addrs[m.Addr] = from
		}
		return
	}
	if m.Kind == joblog.KindProgress && (len(h.ranks) < maxRanks || h.ranks[m.Rank] != nil) {
		p := h.ranks[m.Rank]
		if p == nil {
			p = &rankProgress{epoch: -1, step: -1}
			h.ranks[m.Rank] = p
		}
		if m.Step > p.step && p.step >= 0 && m.Epoch == p.epoch {
			p.interval = m.Step - p.step
		}
		p.epoch, p.step = m.Epoch, m.Step
	}
	j.noteFailing(s.Time, m)
	if m.Kind == joblog.KindProgress {
		j.pulse.observe(s.Time, from, m, e.c.Period)
		if from != "" {
			h.load.ObserveProgress(s.Time, m, e.c.StragglerSpan())
		}
		if j.pulse.lastLine.Equal(s.Time) && j.wentOnAfter(s.Time, e.c.Period) {
			j.strong = strongEvidence{} // the job went on after it
		}
	}
	if isStrong(m) {
		j.noteStrongLine(s.Time, from, line, m, unhealable(s.Log.Stream, s.Log.Line, m))
	}
	if m.Kind == joblog.KindWaits && len(j.lost) > 0 {
		j.noteLostPeer(s)
	}
	if len(line) > joblog.MaxLine {
		line = line[:joblog.MaxLine]
	}
	h.logs = append(h.logs, digest.LogEvidence{Time: s.Time, Host: from, Reader: s.Host, Stream: s.Log.Stream, Line: line, Match: m})
	cut := s.Time.Add(-time.Duration(digest.DigestLookback+1) * e.c.Window)
	i := 0
	for i < len(h.logs) && (h.logs[i].Time.Before(cut) || len(h.logs)-i > maxHostLogs) {
		i++
	}
	h.logs = h.logs[i:]
}

// noteFailing keeps j.failing: the first line since the last progress
// line that says something failed.
func (j *jobTrack) noteFailing(at time.Time, m joblog.Match) {
	switch {
	case m.Kind == joblog.KindProgress:
		j.failing = time.Time{}
	case j.failing.IsZero() && digest.IsFailure(m):
		j.failing = at
	}
}

// Due returns, in job order, the digests and straggler events due once
// every record before now has been observed: call it before observing a
// record at now, and with the zero time at the end of the input (then
// every open episode without a digest gets one).
func (e *Episodes) Due(now time.Time) []any {
	ids := make([]string, 0, len(e.jobs))
	for id := range e.jobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []any
	end := now.IsZero()
	for _, id := range ids {
		j := e.jobs[id]
		if j.ended && !j.endDone && (end || j.last.Before(now)) {
			j.endDone = true
			if d, ok := e.failure(id, j); ok {
				out = append(out, d)
			}
			continue
		}
		if !end && (!j.last.Before(now) || !e.isRound(j)) {
			continue // records at j.last may still come, or no round
		}
		if !end && !j.open {
			if det := e.fastVerdict(id, j); det != nil {
				j.open, j.opened, j.digested, j.recovered, j.revised, j.tornDown = true, j.last, false, false, false, false
				j.since, j.fast, j.detection, j.strong = e.hangSince(id, j, det), true, det, strongEvidence{}
			}
		}
		if j.open && !j.digested && (end || j.fast || !j.last.Before(j.opened.Add(e.c.Period))) {
			j.digested = true
			d := digest.Digest(e.digestInput(id, j), e.c)
			d.Since = j.since
			d.Detection = e.detectionOf(j)
			out = append(out, d)
			j.sent = sentOf(d, j.newest)
			j.closeEpisode()
		} else if !end && j.open && j.fast && e.fastOver(id, j) {
			j.fast, j.recovered = false, true
			j.closeEpisode()
		} else if d, ok := e.revision(id, j); ok {
			out = append(out, d)
		}
		if !end && !j.open {
			for _, ev := range e.stragglers(id, j) {
				out = append(out, ev)
			}
		}
	}
	return out
}

// failure is the digest of job id, which ended (its coordinator's or lone
// watcher's end record): when the job's lines of its last digest.DigestLookback
// windows hold evidence that something failed (digest.FirstFailure) and no hang
// digest of the job was given for an episode still open, a digest of
// event digest.EventFailed, computed from those lines alone (DigestInput.Ended),
// whose Since is the earliest of them.
func (e *Episodes) failure(id string, j *jobTrack) (digest.DigestEvent, bool) {
	if j.open && j.digested {
		return digest.DigestEvent{}, false // the hang's digest said it
	}
	in := digest.DigestInput{Time: j.last, Job: id, Addrs: j.addrs, Layout: j.attribution(), Ended: true, Lost: sortedKeys(j.lost),
		Unreachable: sortedKeys(j.unreachable)}
	from := j.last.Add(-digest.DigestLookback * e.c.Window)
	var first time.Time
	for _, name := range j.layout.Nodes { // the job's nodes, read or not
		if h := j.hosts[name]; h == nil || !h.read {
			in.Hosts = append(in.Hosts, digest.HostView{Host: name, State: digest.StateOK})
		}
	}
	for _, name := range sortedKeys(j.hosts) {
		h := j.hosts[name]
		if h.read {
			in.Hosts = append(in.Hosts, digest.HostView{Host: name, State: h.state, Reason: h.reason, Latest: h.latest})
		}
		for _, l := range h.logs {
			if !l.Time.Before(from) {
				in.Logs = append(in.Logs, l)
			}
		}
	}
	sort.SliceStable(in.Logs, func(a, b int) bool { return in.Logs[a].Time.Before(in.Logs[b].Time) })
	if l, ok := digest.FirstFailure(in.Logs); ok {
		first = l.Time
	}
	if first.IsZero() {
		// No line says the job failed; a host cut off says it, when the
		// others' data to it was being retransmitted (Slurm ends a job
		// whose node stopped answering: NODE_FAIL).
		d := digest.Digest(in, e.c)
		if d.Cause != digest.CauseNetwork || len(in.Lost) == 0 {
			return digest.DigestEvent{}, false
		}
		d.Since = j.lost[in.Lost[0]]
		return d, true
	}
	d := digest.Digest(in, e.c)
	d.Since = first
	return d, true
}

// roundHost reports whether reading s is of the host whose readings are
// j's rounds in a replay: no host before it in name order has a reading
// less than two periods older than s.
func (e *Episodes) roundHost(j *jobTrack, s trace.Sample) bool {
	for name, h := range j.hosts {
		if name < s.Host && h.read && s.Time.Sub(h.latest.Time) <= 2*e.c.Period {
			return false
		}
	}
	return true
}

// isRound reports whether j is at a round that Due has not judged yet:
// always when live, else when the round host's reading is j's latest record.
func (e *Episodes) isRound(j *jobTrack) bool {
	if e.live {
		return true
	}
	if j.round.IsZero() || !j.round.Equal(j.last) || !j.round.After(j.judged) {
		return false
	}
	j.judged = j.round
	return true
}

// digestInput gathers what the digest of j's open episode is computed from.
func (e *Episodes) digestInput(id string, j *jobTrack) digest.DigestInput {
	in := digest.DigestInput{Time: j.last, Job: id, Addrs: j.addrs, Layout: j.attribution(), Lost: sortedKeys(j.lost),
		Unreachable: sortedKeys(j.unreachable)}
	from := j.opened.Add(-digest.DigestLookback * e.c.Window)
	for _, name := range sortedKeys(j.hosts) {
		h := j.hosts[name]
		if h.read {
			in.Hosts = append(in.Hosts, digest.HostView{Host: name, State: h.state, Reason: h.reason, Latest: h.latest})
		}
		for _, l := range h.logs {
			if !l.Time.Before(from) {
				in.Logs = append(in.Logs, l)
			}
		}
	}
	sort.SliceStable(in.Logs, func(a, b int) bool { return in.Logs[a].Time.Before(in.Logs[b].Time) })
	return in
}

// stragglers runs the straggler rule over j while the job progresses (no
// host suspect or hung, and every host's I/O grew within the last two
// periods), and returns the events of hosts newly named.
func (e *Episodes) stragglers(id string, j *jobTrack) []Event {
	loads := make([]straggler.HostLoad, 0, len(j.hosts))
	for _, name := range sortedKeys(j.hosts) {
		h := j.hosts[name]
		if h.state != digest.StateOK || (h.read && j.last.Sub(h.moved) > 2*e.c.Period) {
			return nil
		}
		if !h.read {
			continue
		}
		l := h.load.Load(name, j.last, e.c.StragglerSpan())
		h.slowest(&l)
		loads = append(loads, l)
	}
	named := map[string]bool{}
	var out []Event
	for _, st := range straggler.Stragglers(j.last, loads, e.c) {
		named[st.Host] = true
		if !j.stragglers[st.Host] && !hasHost(out, st.Host) {
			out = append(out, Event{Time: j.last, Host: st.Host, Job: id, Event: EventStraggler, Reason: st.Reason, Message: st.Message, Evidence: st.Evidence})
		}
	}
	j.stragglers = named
	return out
}

// slowest fills l's progress with the host's slowest rank.
func (h *hostTrack) slowest(l *straggler.HostLoad) {
	ranks := make([]int, 0, len(h.ranks))
	for r := range h.ranks {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	for _, r := range ranks {
		p := h.ranks[r]
		if l.Step < 0 && l.Epoch < 0 || p.epoch < l.Epoch || (p.epoch == l.Epoch && p.step < l.Step) {
			l.Epoch, l.Step, l.Interval = p.epoch, p.step, p.interval
		}
	}
}

func hasHost(evs []Event, host string) bool {
	for _, e := range evs {
		if e.Host == host {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// observeReading takes a telemetry reading of the host as its latest.
func (h *hostTrack) observeReading(s trace.Sample) {
	h.latest, h.read = s, true
	h.hadProcs = h.hadProcs || s.Procs > 0
}
