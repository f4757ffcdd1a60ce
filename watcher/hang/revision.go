package hang

import (
	"slices"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

// sentDigest is what an episode's digest said: its time, cause and
// culprit hosts, and the newest matched line it had seen.
type sentDigest struct {
	at       time.Time
	cause    string
	culprits []string
	lines    time.Time
}

func sentOf(d digest.DigestEvent, newest time.Time) sentDigest {
	return sentDigest{at: d.Time, cause: d.Cause, culprits: culpritHosts(d), lines: newest}
}

func culpritHosts(d digest.DigestEvent) []string {
	out := make([]string, 0, len(d.Culprits))
	for _, c := range d.Culprits {
		out = append(out, c.Host)
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// revision is the one update of j's open episode's digest: due at a round
// after the digest when lines came after it (new evidence: a fingerprint
// that tells who is behind, an epoch line, a device fault read late) and
// the digest computed now names another cause or other culprits. A digest
// is never revised to say less: not to unknown with no culprit. At most
// one revision per episode; it carries Revises, the time of the digest it
// replaces. None once Slurm said the job or a step is cancelled: what
// changes then is the teardown. None to culprits that telemetry alone
// names (telemetryOnly): what the processes do after the verdict is the
// hang's consequence, not new evidence of its cause.
func (e *Episodes) revision(id string, j *jobTrack) (digest.DigestEvent, bool) {
	if !j.open || !j.digested || j.revised || j.tornDown || !j.newest.After(j.sent.lines) {
		return digest.DigestEvent{}, false
	}
	d := digest.Digest(e.digestInput(id, j), e.c)
	if d.Cause == digest.CauseUnknown && len(d.Culprits) == 0 || telemetryOnly(d) {
		return digest.DigestEvent{}, false
	}
	if d.Cause == j.sent.cause && slices.Equal(culpritHosts(d), j.sent.culprits) {
		j.sent.lines = j.newest // judged: wait for lines newer still
		return digest.DigestEvent{}, false
	}
	j.revised = true
	d.Since, d.Detection, d.Revises = j.since, e.detectionOf(j), j.sent.at
	j.sent = sentOf(d, j.newest)
	return d, true
}

// telemetryReasons are the culprit reasons read from the hosts' readings
// (digest.Culprit): processes gone, fewer, stopped, in D state, idle
// devices, stale samples.
var telemetryReasons = []string{digest.CulpritProcessesGone, digest.CulpritFewerProcesses, digest.CulpritProcessesStopped,
	digest.CulpritIdleWhilePeersBusy, digest.CulpritProcessesInD, digest.CulpritStaleSamples}

// telemetryOnly says every culprit of d is named by telemetry alone. After
// a hang's verdict the job's processes leave (Slurm tears the step down,
// the framework's own watchdog aborts a rank, one host's ranks exit first),
// so such a culprit is no reason to replace a digest.
func telemetryOnly(d digest.DigestEvent) bool {
	for _, c := range d.Culprits {
		if !slices.Contains(telemetryReasons, c.Reason) {
			return false
		}
	}
	return len(d.Culprits) > 0
}
