// Package digest says what caused a job's hang, on which hosts, and what
// the job's user can do: Digest computes it from what the job's watchers
// saw (the hosts' latest readings and states, their matched lines, the
// step's layout), and Culprits names the outlier hosts of the telemetry
// alone. It is a function of its input: watcher/hang's episodes gather
// the input, decide when a digest is due, and import this package, which
// never imports watcher/hang.
package digest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Event kinds of a digest (DigestEvent.Event): of a job rather than of
// one host.
const (
	EventDigest = "digest" // one per hang episode per job: cause, culprits, hint
	// EventFailed: the digest of a job that ended with evidence of a
	// failure in its last lines (a rank killed, tracebacks, srun's word
	// that tasks exited badly) and no hang digest: what went wrong, and
	// on which host.
	EventFailed = "failed"
)

// Origins of a digest: whether what went wrong looks like the cluster's
// (a device, the network, the file system, a node that went silent) or
// the job's own (a rank that crashed or desynchronised with no device or
// network evidence).
const (
	OriginCluster = "cluster"
	OriginJob     = "job"
	OriginUnknown = "unknown"
)

// Causes of a digest, in the order the rules are tried.
const (
	// CauseBadDevice: a fault XID, an NPU error code raised in a major or
	// critical alarm, or an uncorrectable ECC error on the culprit host
	// around the hang.
	CauseBadDevice = "bad-device"
	// CauseRankFailed: a rank exited or crashed (processes gone, a
	// traceback, a CUDA error, its watcher silent) while its peers wait.
	CauseRankFailed = "rank-failed"
	// CauseNetwork: NCCL transport errors on the culprit host's links (a
	// host in several bad links is the culprit).
	CauseNetwork = "network"
	// CauseDataStall: the culprit host is stuck on input (devices idle,
	// processes in D) while its peers wait in a collective.
	CauseDataStall = "data-stall"
	// CauseDifferentProgress: ranks are at different places (another
	// collective at the same sequence number, behind in completed work, in
	// another epoch or step); the odd ones out are the culprits.
	CauseDifferentProgress = "different-progress"
	// CauseUnknown: hung, and no evidence points at a host: no culprit.
	CauseUnknown = "unknown"
)

// Host states, as HostView.State gives them.
const (
	StateOK      = "ok"
	StateSuspect = "suspect"
	StateHung    = "hung"
)

// DigestCulprit is a host with evidence against it.
type DigestCulprit struct {
	Host     string         `json:"host"`
	Reason   string         `json:"reason"`   // a stable token, e.g. "DeviceFault", "BadLinks"
	Evidence map[string]any `json:"evidence"` // what was seen: numbers and at most a few matched lines
}

// DigestEvent is the digest of one hang episode of a job. Its JSON form is
// one line of the event stream:
//
//	{"time":T,"since":S,"job":J,"event":"digest","cause":C,"culprits":[{"host":H,"reason":R,"evidence":{...}}],"hint":"...","hosts":[...]}
type DigestEvent struct {
	Time time.Time `json:"time"`
	// Since is when the hang began: the earliest "since" of the
	// episode's hung verdicts, the last I/O progress of the first host to
	// stall (zero when unknown: a digest of an older coordinator).
	Since time.Time `json:"since,omitzero"`
	Job   string    `json:"job"`
	Event string    `json:"event"` // EventDigest, or EventFailed for a job that ended
	Cause string    `json:"cause"` // one of the Cause constants
	// Origin says whose the trouble looks like: OriginCluster, OriginJob
	// or OriginUnknown ("" in digests of older versions).
	Origin   string          `json:"origin,omitempty"`
	Culprits []DigestCulprit `json:"culprits"`
	Hint     string          `json:"hint"`  // what the job's user can do, one or two sentences
	Hosts    []string        `json:"hosts"` // every host of the job, sorted
	// Chain lists, when several causes named culprits, each with the time
	// its anomaly first showed, earliest first: the first is the cause.
	Chain []string `json:"chain,omitempty"`
	// JobEvidence are lines of the job's output that name no host and
	// support the cause when no host could be named (a CUDA error with no
	// prefix): they never make a culprit.
	JobEvidence []string `json:"job_evidence,omitempty"`
	// Because is the chain of evidence when the cause and the culprits
	// come from different evidence: the root that names no host, then
	// what names the culprits (a consequence, a rank or peer a line names).
	Because []string `json:"because,omitempty"`
	// Detection says how and when the hang was detected (nil in a failed
	// job's digest and in digests of older versions).
	Detection *Detection `json:"detection,omitempty"`
	// Revises, when not zero, marks the episode's one update: later
	// evidence changed the cause or the culprits of the digest given at
	// that time, which this one replaces.
	Revises time.Time `json:"revises,omitzero"`
}

// HostView is what the digest knows of one host of the job from its
// telemetry.
type HostView struct {
	Host   string
	State  string       // StateOK, StateSuspect or StateHung
	Reason string       // reason of the host's latest event ("" without one)
	Latest trace.Sample // the host's latest reading
}

// LogEvidence is one matched line of a host.
type LogEvidence struct {
	Time time.Time
	// Host printed the line (joblog.Attribute); "" for a line of the
	// job's output that names no host: job-level evidence, which may
	// support a cause and never makes a culprit.
	Host string
	// Reader is the node whose watcher read the line ("" when not known).
	Reader string
	Stream string // trace.StreamStdout, StreamStderr or StreamKmsg
	Line   string
	Match  joblog.Match
}

// DigestInput is what a digest is computed from: the job's hosts and the
// matched lines of all of them around the hang (live: the summaries the
// watchers send to their coordinator; in a replay: the trace).
type DigestInput struct {
	Time  time.Time
	Job   string
	Hosts []HostView
	// Logs are the matched lines of the job's hosts from DigestLookback
	// before the first hung verdict up to Time, in time order.
	Logs []LogEvidence
	// Addrs maps a host's network address (from NCCL's start-up line, and
	// the nodes' addresses in the step's layout) to the host, so that a
	// peer named in a transport error is a host.
	Addrs map[string]string
	// Layout is the step's layout: it places the ranks a line names (a
	// collective mismatch's) on hosts, and a peer named by host name.
	Layout joblog.Layout
	// Ended is set for the digest of a job that ended (EventFailed): its
	// hosts' last readings are of processes that were stopping, so the
	// telemetry rules are not run; the lines alone say what went wrong.
	Ended bool
	// Lost are the hosts whose watcher a peer's watcher lost (no tick
	// from the job's coordinator for the takeover's wait: its node down
	// or cut off, or its watcher dead), sorted.
	Lost []string
	// Unreachable are those of Lost whose address did not answer a TCP
	// connection from the peer that lost it: down, or cut off.
	Unreachable []string
}

// DigestLookback is how far before the first hung verdict of an episode
// the digest looks for evidence in the logs, in windows: the stall began
// one window before the verdict, and what led to it a little earlier.
const DigestLookback = 2

// evidenceLines is how many matched lines a culprit's evidence holds at most.
const evidenceLines = 3

// Digest computes the digest of a hang of in.Job: the first rule that
// names a culprit with evidence gives the cause (bad device, rank failed,
// network, data stall, different progress); when none does, the cause is
// "unknown" and no host is named. A host is never named for its place in a
// list: every culprit carries the evidence against it. The result depends
// only on in and c.
func Digest(in DigestInput, c watchcfg.Hang) DigestEvent {
	d := DigestEvent{Time: in.Time, Job: in.Job, Event: EventDigest, Cause: CauseUnknown,
		Culprits: []DigestCulprit{}, Hosts: digestHosts(in)}
	if in.Ended {
		d.Event = EventFailed
	}
	ev := newEvidence(in)
	root, rootLines := jobLevelCause(ev)
	hits := withWaits(in, ruleHits(in, ev, c)) // what the processes wait on (waits.go)
	if len(hits) > 0 && !explained(winner(hits), root) {
		w := winner(hits)
		d.Cause, d.Culprits = w.cause, w.culprits
		if len(hits) > 1 {
			sort.SliceStable(hits, func(i, j int) bool {
				a, b := hits[i].first, hits[j].first
				return !a.IsZero() && (b.IsZero() || a.Before(b))
			})
			for _, h := range hits {
				d.Chain = append(d.Chain, h.String())
			}
		}
	}
	if d.Cause == CauseUnknown && root != CauseUnknown {
		d.Cause, d.JobEvidence = root, lines(rootLines)
		d.Culprits, d.Because = rooted(in, ev, c, root, rootLines, hits)
	}
	if d.Cause == CauseUnknown {
		if byHost := crashedEverywhere(in, ev); len(byHost) > 0 {
			d.Cause, d.Because = CauseRankFailed, everywhereBecause(byHost)
			d.Hint = fmt.Sprintf("The ranks on every host (%s) died of a crash signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT) "+
				"with no device, network or timeout error before: a fault of the program or of a library it loads, not of one host; "+
				"read the first stack trace in the job's output, and rerun with core dumps (ulimit -c unlimited).", strings.Join(slices.Sorted(maps.Keys(byHost)), ","))
		}
	}
	if d.Cause == CauseUnknown && len(in.Hosts) == 2 && !anyEvidenceLine(in) {
		if cs := goneWhilePeersRun(in, c); len(cs) > 0 {
			d.Cause, d.Culprits = CauseRankFailed, cs
			d.Because = []string{cs[0].Host + ": " + CulpritProcessesGone + " (the other host's ranks still run and wait; no line says why)"}
		} else if cs := inDWhilePeersRun(in); len(cs) > 0 {
			d.Cause, d.Culprits = CauseDataStall, cs
			d.Because = []string{cs[0].Host + ": " + CulpritProcessesInD + " (the other host's ranks run with none in D; no line says why)"}
		}
	}
	for _, c := range d.Culprits {
		if !slices.Contains(d.Hosts, c.Host) { // named by a peer's line only
			d.Hosts = append(d.Hosts, c.Host)
			sort.Strings(d.Hosts)
		}
	}
	d.Origin = origin(d)
	if d.Hint == "" {
		d.Hint = hint(d, ev)
	}
	return d
}

// anyEvidenceLine says a line of the job's output or the kernel's matched a
// rule beyond progress and addresses: a timeout, an error, an exit. With
// none, a two-host job whose one host's ranks are gone while the other's
// still run and wait is judged on that alone (the telemetry rules name
// only a minority, never one host of two), and so is one whose one host
// has processes in uninterruptible sleep (D) while the other's have none
// (data-stall; the gone ranks are tried first); a line that says the
// ranks timed out first makes their exit the timeout's consequence.
func anyEvidenceLine(in DigestInput) bool {
	for _, l := range in.Logs {
		switch l.Match.Kind {
		case "", joblog.KindProgress, joblog.KindNCCLAddr, joblog.KindWaits:
		default:
			if !isLocalRankClosed(l.Match) { // NCCL's INFO, printed at every exit too
				return true
			}
		}
	}
	return false
}

// origin is whose the trouble of d looks like: a device, the network or
// stuck I/O are the cluster's, as is a host whose watcher fell silent (the
// node itself may be down); a rank that crashed, was killed or left early,
// or ranks at different places, with no device or network evidence, are
// the job's own.
func origin(d DigestEvent) string {
	switch d.Cause {
	case CauseBadDevice, CauseNetwork, CauseDataStall:
		return OriginCluster
	case CauseRankFailed:
		for _, c := range d.Culprits {
			if c.Reason == CulpritStaleSamples {
				return OriginCluster
			}
		}
		return OriginJob
	case CauseDifferentProgress:
		return OriginJob
	}
	return OriginUnknown
}

// ruleHit is a rule that named culprits, and when its anomaly first
// showed in a line (zero for none).
type ruleHit struct {
	cause    string
	culprits []DigestCulprit
	first    time.Time
}

// String is "network at 10:30:01Z (gpu03)".
func (h ruleHit) String() string {
	var names []string
	for _, c := range h.culprits {
		names = append(names, c.Host)
	}
	at := ""
	if !h.first.IsZero() {
		at = " at " + h.first.UTC().Format("15:04:05Z")
	}
	return h.cause + at + " (" + strings.Join(names, ",") + ")"
}

// winner is the cause among hits (in digestRules' order): the first, unless
// a later one's anomaly showed in a line strictly before the current
// choice's (both seen in lines: a cause known from telemetry alone, such as
// a host whose processes are gone, has no time to compare and keeps its
// place).
func winner(hits []ruleHit) ruleHit {
	w := hits[0]
	for _, h := range hits[1:] {
		if !h.first.IsZero() && !w.first.IsZero() && h.first.Before(w.first) {
			w = h
		}
	}
	return w
}

// ruleHits runs every rule and returns those that named culprits, in
// digestRules' order, each with its anomaly's first time.
func ruleHits(in DigestInput, ev evidence, c watchcfg.Hang) []ruleHit {
	var hits []ruleHit
	for _, r := range digestRules {
		cs := r.find(in, ev, c)
		if len(cs) == 0 {
			continue
		}
		sort.Slice(cs, func(i, j int) bool { return cs[i].Host < cs[j].Host })
		h := ruleHit{cause: r.cause, culprits: cs}
		if r.shows != nil {
			h.first = ev.first(r.shows)
		}
		hits = append(hits, h)
	}
	return hits
}

// firstAll is first over the job-level lines too.
func (e evidence) firstAll(keep func(joblog.Match) bool) time.Time {
	t := e.first(keep)
	for _, l := range e.job {
		if keep(l.Match) && (t.IsZero() || l.Time.Before(t)) {
			t = l.Time
		}
	}
	return t
}

// first is the time of the earliest line of any host for which keep
// holds, zero for none.
func (e evidence) first(keep func(joblog.Match) bool) time.Time {
	var t time.Time
	for _, h := range e.hosts {
		for _, l := range e.of(h, keep) {
			if t.IsZero() || l.Time.Before(t) {
				t = l.Time
			}
		}
	}
	return t
}

// jobLevelCause is the cause that the lines naming no host support when
// no rule named a culprit: a device fault, a transport error, then a
// crash, in that order, with the lines; CauseUnknown without any. A crash
// after a collective timed out (PyTorch's watchdog takes the process down
// and the launcher reports its exit) is the timeout's effect, not a cause.
func jobLevelCause(ev evidence) (string, []LogEvidence) {
	timedOut := ev.firstAll(func(m joblog.Match) bool { return m.Kind == joblog.KindWatchdog })
	for _, k := range []struct {
		cause string
		is    func(joblog.Match) bool
	}{
		{CauseBadDevice, func(m joblog.Match) bool { return m.Fault }},
		{CauseNetwork, isNet},
		{CauseRankFailed, func(m joblog.Match) bool {
			return isCrash(m) || m.Kind == joblog.KindPeerClosed && !isLocalRankClosed(m)
		}},
	} {
		var ls []LogEvidence
		for _, l := range ev.job {
			if k.is(l.Match) && (k.cause != CauseRankFailed || timedOut.IsZero() || l.Time.Before(timedOut)) {
				ls = append(ls, l)
			}
		}
		if len(ls) > 0 {
			return k.cause, ls
		}
	}
	return CauseUnknown, nil
}

// firstOf is the first of lines, "" for none.
func firstOf(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

// digestHosts lists the hosts of the job: those with readings and those
// with matched lines, sorted.
func digestHosts(in DigestInput) []string {
	seen := map[string]bool{}
	for _, h := range in.Hosts {
		seen[h.Host] = true
	}
	for _, l := range in.Logs {
		if l.Host != "" {
			seen[l.Host] = true
		}
	}
	out := make([]string, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// hint is the remediation sentence for d's cause, for the job's user.
func hint(d DigestEvent, ev evidence) string {
	names := make([]string, 0, len(d.Culprits))
	for _, c := range d.Culprits {
		names = append(names, c.Host)
	}
	who := strings.Join(names, ",")
	if len(names) == 0 && d.Cause != CauseUnknown {
		return fmt.Sprintf("The job's output shows %s (%s) but no line names the host that printed it: "+
			"run with srun --label, or look for the rank in the job's output, to find the host; nothing was re-checked or drained.",
			d.Cause, firstOf(d.JobEvidence))
	}
	if h, ok := evidenceHint(d, who); ok { // the culprit's evidence says more than its cause (waits.go)
		return h
	}
	switch d.Cause {
	case CauseBadDevice:
		return fmt.Sprintf("A device fault on %s stopped the job: the host is being re-checked and drained if it fails; "+
			"requeue or resubmit the job (e.g. with --exclude=%s).", who, who)
	case CauseNetwork:
		if ev.any(func(m joblog.Match) bool { return m.Kind == joblog.KindNCCLNet && m.GDR }) {
			return fmt.Sprintf("GPUDirect RDMA is not usable on every host (%s): set NCCL_NET_GDR_LEVEL=0 to run without it, "+
				"or ask the admins to check nvidia-peermem there.", who)
		}
		return fmt.Sprintf("NCCL reported transport errors on the links of %s: ask the admins to check that host's InfiniBand/RoCE "+
			"port and cable; on a flaky fabric raise NCCL_IB_TIMEOUT (e.g. 22), and on RoCE set NCCL_IB_GID_INDEX (e.g. 3) and "+
			"NCCL_IB_TC (e.g. 128) as your site documents.", who)
	case CauseRankFailed:
		if h, ok := killedHint(d, who); ok {
			return h
		}
		if d.Event == EventFailed && len(d.Culprits) > 0 && d.Culprits[0].Reason == DigestLeftEarly {
			return fmt.Sprintf("The ranks on %s printed no error and left first (done, or past a collective its peers still waited in); "+
				"the others failed on the closed connections: check that every rank runs the same collectives in the same order "+
				"and as many steps (an even data split: DistributedSampler, drop_last=True).", who)
		}
		if d.Event == EventFailed {
			return fmt.Sprintf("A rank on %s was the first to fail (killed, crashed, or gone while its peers still waited for it); "+
				"the others failed after it: read the first error in the job's output from that host, and the host's kernel log "+
				"(an OOM kill) if it was killed.", who)
		}
		return fmt.Sprintf("A rank on %s exited or crashed while its peers waited for it: read the first error in the job's output "+
			"from that host; set TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and a collective timeout so that the job fails instead of hanging.", who)
	case CauseDataStall:
		return fmt.Sprintf("%s is stuck on input while its peers wait in a collective: check the input file system from that host, "+
			"and lower the DataLoader's num_workers (or give it a timeout) if its workers deadlock.", who)
	case CauseDifferentProgress:
		return fmt.Sprintf("Ranks are at different places (odd ones out: %s): check that every rank runs the same collectives in "+
			"the same order, and that the data is split evenly (DistributedSampler, drop_last=True) so that all ranks run as many steps.", who)
	}
	if i := slices.IndexFunc(ev.all(), func(l LogEvidence) bool { return l.Match.Kind == joblog.KindRendezvous }); i >= 0 {
		l := ev.all()[i]
		return fmt.Sprintf("A rank could not reach the job's rendezvous (%s): check that MASTER_ADDR and MASTER_PORT "+
			"(or the launcher's main process address) name the first node on an interface every node reaches, and that "+
			"its rank started; no host is at fault on this evidence, and none was re-checked or drained.", l.Line)
	}
	if d.Event == EventFailed {
		return "The job failed and no host stands out: read the first error in the job's output."
	}
	return "The job stopped making progress but no host stands out: look at the job's output around the time of the hang; " +
		"`py-spy dump` of a rank shows where it waits."
}
