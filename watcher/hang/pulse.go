package hang

import (
	"fmt"
	"slices"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// maxPulseIntervals bounds the intervals a job's pulse keeps: the cadence
// is the median of the latest ones, so that a job whose pace changes
// (gradient accumulation, a new phase) is judged by its recent pace.
const maxPulseIntervals = 32

// maxPulseSources bounds the progress sources (host and rank) whose latest
// step a job's pulse keeps.
const maxPulseSources = 4096

// pulseTrack is a job's pulse: the beats of its progress lines. A beat is
// a progress line that advances its source (host and rank: another epoch
// or step than the source's previous line) at least half a period after
// the previous beat: the lines of one poll of the job's output, stamped at
// the poll, are one beat, so the cadence is never below the sampling
// period's grain.
type pulseTrack struct {
	beats     int
	beat      time.Time // the latest beat
	lastLine  time.Time // the newest advancing progress line
	intervals []time.Duration
	sources   map[string][2]int64 // "host/rank" -> its latest (epoch, step)
}

// observe takes one progress line at t of host (the host the line names,
// "" for none) and reports whether it is a new beat.
func (p *pulseTrack) observe(t time.Time, host string, m joblog.Match, period time.Duration) (beat bool) {
	if p.sources == nil {
		p.sources = map[string][2]int64{}
	}
	key := fmt.Sprintf("%s/%d", host, m.Rank)
	cur := [2]int64{m.Epoch, m.Step}
	if prev, ok := p.sources[key]; ok && prev == cur && cur != [2]int64{-1, -1} {
		return false // the same step again: not progress
	}
	if _, ok := p.sources[key]; ok || len(p.sources) < maxPulseSources {
		p.sources[key] = cur
	}
	if t.After(p.lastLine) {
		p.lastLine = t
	}
	if p.beats > 0 && t.Sub(p.beat) < period/2 {
		return false
	}
	if p.beats > 0 {
		p.intervals = append(p.intervals, t.Sub(p.beat))
		if len(p.intervals) > maxPulseIntervals {
			p.intervals = p.intervals[1:]
		}
	}
	p.beat = t
	p.beats++
	return true
}

// cadence is the median interval between beats and its median absolute
// deviation.
func (p *pulseTrack) cadence() (median, spread time.Duration) {
	if len(p.intervals) == 0 {
		return 0, 0
	}
	s := slices.Clone(p.intervals)
	slices.Sort(s)
	median = s[len(s)/2]
	for i, v := range s {
		s[i] = max(v-median, median-v)
	}
	slices.Sort(s)
	return median, s[len(s)/2]
}

// PulseDeadline is the silence after the job's last progress line at
// which the pulse rule judges it, for a learned cadence: max(PulseFactor ×
// cadence, PulseFloor, cadence + 3 periods). The last term keeps 3 periods
// of readings in the flat stretch, which starts when the next line was due.
func PulseDeadline(c Config, cadence time.Duration) time.Duration {
	return max(time.Duration(c.PulseFactor*float64(cadence)), c.PulseFloor, cadence+3*c.Period)
}

// strongEvidence is what made a job's hang likely before any window: when
// it came, what it was, and whether it is a telemetry observation (a
// host's processes gone) that ends when it no longer holds.
type strongEvidence struct {
	at    time.Time
	by    string // DetectedEvidence, or DetectedRAS for NCCL's word
	what  string
	host  string // for telemetry evidence: the host whose processes are gone
	telem bool
	final bool // it cannot heal (unhealable.go): no confirmation
}

// isStrong is a line that makes a hang likely at once: a device fault
// (fault XID, uncorrectable ECC error, an NPU error code in a major alarm),
// an NCCL transport error, a collective that timed out, NCCL's RAS
// service naming ranks dead or missing.
func isStrong(m joblog.Match) bool {
	return m.Fault || m.Kind == joblog.KindNCCLNet || m.Kind == joblog.KindWatchdog && m.Seq >= 0 || m.Kind == joblog.KindRASFailed
}

// wentOnAfter says whether a progress line stamped t shows that the job
// went on after its strong evidence. Output is read once a period and
// stamped when read, so a line read in the round after a device event
// may have been printed before it: evidence that cannot heal, and is not
// telemetry (a device fault, NCCL RAS naming dead ranks), is cleared only
// by a line read more than a period after it.
func (j *jobTrack) wentOnAfter(t time.Time, period time.Duration) bool {
	ev := j.strong
	switch {
	case ev.at.IsZero() || !t.After(ev.at):
		return false
	case ev.final && !ev.telem:
		return t.After(ev.at.Add(period))
	}
	return true
}

// noteStrongLine records a strong line at t of host as the job's strong
// evidence (final: it cannot heal), unless earlier evidence is pending
// that can heal no more than it.
func (j *jobTrack) noteStrongLine(t time.Time, host, line string, m joblog.Match, final bool) {
	if !j.strong.at.IsZero() && (j.strong.final || !final) {
		return
	}
	if host == "" {
		host = "the job"
	}
	by := digest.DetectedEvidence
	if m.Kind == joblog.KindRASFailed {
		by, line = digest.DetectedRAS, "NCCL RAS names ranks dead or missing"
	}
	if len(line) > 160 {
		line = line[:160] + "..."
	}
	j.strong = strongEvidence{at: t, by: by, what: host + ": " + line, final: final}
}

// noteTelemetry updates the job's telemetry evidence after a reading of
// host: a host whose processes are all gone while a peer still has some,
// or some of whose processes are stopped (state T: SIGSTOP, a debugger)
// while no peer has any stopped. Such evidence ends when it no longer
// holds.
func (j *jobTrack) noteTelemetry(s trace.Sample) {
	gone := s.Procs == 0 && !s.HasMissing("pids") && j.hosts[s.Host] != nil && j.hosts[s.Host].hadProcs
	stopped := s.ProcsT > 0
	if j.strong.telem && j.strong.host == s.Host && !gone && !stopped {
		j.strong = strongEvidence{}
	}
	if !j.strong.at.IsZero() || !gone && !stopped {
		return
	}
	// One pass over the peers, no sort: the peer named is the first in
	// name order that still has processes.
	peer := ""
	for name, h := range j.hosts {
		switch {
		case name == s.Host || !h.read:
		case stopped && h.latest.ProcsT > 0:
			return // peers stopped too: the job itself was stopped
		case h.latest.Procs > 0 && (peer == "" || name < peer):
			peer = name
		}
	}
	if gone && peer != "" {
		j.strong = strongEvidence{at: s.Time, by: digest.DetectedEvidence, host: s.Host, telem: true, final: true,
			what: fmt.Sprintf("%s: no processes of the job left while %s still has %d", s.Host, peer, j.hosts[peer].latest.Procs)}
		return
	}
	if stopped && len(j.hosts) > 1 {
		j.strong = strongEvidence{at: s.Time, by: digest.DetectedEvidence, host: s.Host, telem: true,
			what: fmt.Sprintf("%s: %d of the job's %d processes stopped (state T) while no peer's are", s.Host, s.ProcsT, s.Procs)}
	}
}

// fastVerdict is the pulse and evidence rules at a round of job j, which
// has no open episode: the detection when one of them calls the job hung
// now, nil otherwise.
func (e *Episodes) fastVerdict(id string, j *jobTrack) *digest.Detection {
	now := j.last
	p := &j.pulse
	if e.c.ConfirmPeriods > 0 && !j.strong.at.IsZero() {
		if now.Sub(j.strong.at) > e.c.Window {
			j.strong = strongEvidence{} // the window rule's turn
		} else if det := e.evidenceVerdict(id, j); det != nil {
			return det
		}
	}
	if e.c.PulseFactor == 0 || p.beats < e.c.PulseBeats || j.endingNow(e.c) {
		return nil
	}
	cadence, spread := p.cadence()
	deadline := PulseDeadline(e.c, cadence)
	if now.Sub(p.lastLine) < deadline {
		return nil
	}
	flat, ok := e.allFlat(id, j, p.lastLine.Add(cadence), now)
	if !ok {
		return nil
	}
	return &digest.Detection{By: digest.DetectedPulse, LastProgress: p.lastLine, AfterProgressS: now.Sub(p.lastLine).Seconds(),
		Beats: p.beats, CadenceS: cadence.Seconds(), SpreadS: spread.Seconds(), DeadlineS: deadline.Seconds(), Flat: flat}
}

// endingNow reports whether j's pulse and confirmation rules wait: a line
// since its last progress said something failed less than teardownHold
// ago. A rank that failed is usually followed within seconds by its
// launcher ending the job (srun, torchrun: its peers' errors, the tasks'
// exits), and that job failed, which its end's digest says; a job that
// stays after the hold is judged as before. Evidence that cannot heal
// does not wait (unhealableVerdict).
func (j *jobTrack) endingNow(c Config) bool {
	return !j.failing.IsZero() && j.last.Sub(j.failing) < teardownHold(c)
}

// evidenceVerdict confirms j's strong evidence: no progress line since it,
// and every host flat from one period after it (the ranks may still finish
// what they were doing) for Config.ConfirmPeriods periods. Evidence followed
// by I/O progress on some host is dropped: the job went on.
func (e *Episodes) evidenceVerdict(id string, j *jobTrack) *digest.Detection {
	ev := j.strong
	if ev.final {
		if det := e.unhealableVerdict(id, j); det != nil {
			return det
		}
	}
	from := ev.at.Add(e.c.Period)
	confirm := time.Duration(e.c.ConfirmPeriods) * e.c.Period
	if j.last.Sub(from) < confirm || j.endingNow(e.c) {
		return nil
	}
	flat, ok := e.allFlat(id, j, from, j.last)
	if !ok {
		if e.movedSince(id, j, from, j.last) {
			j.strong = strongEvidence{}
		}
		return nil
	}
	det := &digest.Detection{By: ev.by, Evidence: ev.what, EvidenceAt: ev.at, ConfirmS: j.last.Sub(from).Seconds(), Flat: flat}
	if p := &j.pulse; p.beats > 0 {
		det.LastProgress, det.AfterProgressS, det.Beats = p.lastLine, j.last.Sub(p.lastLine).Seconds(), p.beats
	}
	return det
}

// allFlat judges every host of j read since from over [from, now]: ok when
// at least one was judged and every one judged flat (I/O below the
// threshold, usage flat); a host with readings in the stretch that cannot
// be judged (too few readings) makes it not ok. Hosts without a reading
// since from (their watcher is gone) are left out. flat maps each host to
// its usage reason.
func (e *Episodes) allFlat(id string, j *jobTrack, from, now time.Time) (flat map[string]string, ok bool) {
	flat = map[string]string{}
	for _, name := range sortedKeys(j.hosts) {
		h := j.hosts[name]
		if !h.read || h.latest.Time.Before(from) {
			continue
		}
		v := e.det.JudgeSpan(name, id, from, now)
		if !v.Judged || !v.Flat {
			return nil, false
		}
		flat[name] = v.Reason
	}
	return flat, len(flat) > 0
}

// movedSince reports whether some host of j made I/O progress (at least
// Config.IOBytes) over [from, now].
func (e *Episodes) movedSince(id string, j *jobTrack, from, now time.Time) bool {
	for name, h := range j.hosts {
		if h.read && !h.latest.Time.Before(from) && e.det.JudgeSpan(name, id, from, now).IOBytes >= e.c.IOBytes {
			return true
		}
	}
	return false
}

// hangSince is when the hang that det detected began: the last progress
// line when the job printed one, else the earliest time since which a
// host's I/O stayed below the threshold, else the evidence's time.
func (e *Episodes) hangSince(id string, j *jobTrack, det *digest.Detection) time.Time {
	if !det.LastProgress.IsZero() {
		return det.LastProgress
	}
	var since time.Time
	for _, name := range sortedKeys(j.hosts) {
		if t, ok := e.det.SinceNoProgress(name, id); ok && (since.IsZero() || t.Before(since)) {
			since = t
		}
	}
	if since.IsZero() || !det.EvidenceAt.IsZero() && det.EvidenceAt.Before(since) {
		return det.EvidenceAt
	}
	return since
}

// Suspect reports whether job id may be hung: a host of it is suspect or
// hung, strong evidence waits for its confirmation, or its progress lines
// have been silent for twice their cadence less a period and a half (for
// a job that prints at every poll: from the first round without a line).
// The watchers then read what their processes wait on, and ask NCCL's RAS
// service; a member hears of it at the next round and its reading comes a
// round later still, so it starts two rounds or more before the pulse's
// verdict (max(3 × cadence, floor, cadence + 3 periods)) for the digest to
// have every host's.
func (e *Episodes) Suspect(id string) bool {
	j := e.jobs[id]
	if j == nil {
		return false
	}
	if j.fast || !j.strong.at.IsZero() {
		return true
	}
	for _, at := range j.lost {
		if !e.movedSince(id, j, at, j.last) {
			return true // a watcher lost and the job flat since: read the waits
		}
	}
	for _, h := range j.hosts {
		if h.state != digest.StateOK {
			return true
		}
	}
	p := &j.pulse
	if e.c.PulseFactor == 0 || p.beats < e.c.PulseBeats {
		return false
	}
	cadence, _ := p.cadence()
	return j.last.Sub(p.lastLine) >= max(2*cadence, 2*e.c.Period)-3*e.c.Period/2
}

// fastOver reports whether the hang j's pulse or evidence rule opened has
// ended: a progress line came since, or some host made I/O progress since
// the verdict.
func (e *Episodes) fastOver(id string, j *jobTrack) bool {
	return j.pulse.lastLine.After(j.opened) || e.movedSince(id, j, j.opened, j.last)
}
