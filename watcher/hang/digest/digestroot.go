package digest

import (
	"fmt"
	"maps"
	"slices"

	"github.com/vigil-hpc/vigil/config/watchcfg"
)

// Culprit reasons that come from evidence other than the cause's own
// lines: the root names no host, a line or the telemetry does.
const (
	// DigestRankNamed: a line that names no host names a rank (torchrun's
	// "rank2 (local rank: 2) exitcode: -9"), placed on its host through
	// the step's layout.
	DigestRankNamed = "RankNamed"
	// DigestNamedAsPeer: a transport error names the host as the peer it
	// lost (the line's own host, if any, only lost its peer).
	DigestNamedAsPeer = "NamedAsPeer"
)

// Evidence classes, from the deepest root to the consequences: what an
// item of evidence tells. A digest's cause is the deepest root that the
// evidence supports; a consequence (a rank that died, processes gone)
// never outranks the root that explains it.
var rootDepth = map[string]int{
	CauseBadDevice:         5, // device fault: ECC, XID, NVLink, an NPU in a major alarm
	CauseNetwork:           4, // link or peer failure
	CauseRankFailed:        3, // a node-level kill (OOM, a signal) or a rank's own exception
	CauseDataStall:         2, // input stall
	CauseDifferentProgress: 1, // ranks at different places
}

// consequenceOnly reports whether hit is a rank that died and nothing
// more: rank-failed whose every culprit is named by the telemetry alone
// (processes gone or fewer, a silent watcher), with no line of its own
// that says why.
func consequenceOnly(h ruleHit) bool {
	if h.cause != CauseRankFailed || len(h.culprits) == 0 {
		return false
	}
	for _, c := range h.culprits {
		switch c.Reason {
		case CulpritProcessesGone, CulpritFewerProcesses, CulpritStaleSamples:
		default:
			return false
		}
		if _, ok := c.Evidence["lines"]; ok {
			return false
		}
	}
	return true
}

// rooted is the cause when the root evidence names no host: the root's
// cause (from the job-level lines), its culprits from the evidence that
// does name a host, and the chain that says so ("because").
func rooted(in DigestInput, ev evidence, c watchcfg.Hang, root string, rootLines []LogEvidence, hits []ruleHit) ([]DigestCulprit, []string) {
	because := []string{fmt.Sprintf("%s (root, names no host): %s", root, firstOf(lines(rootLines)))}
	var out []DigestCulprit
	for _, h := range hits {
		if consequenceOnly(h) {
			for _, cu := range h.culprits {
				e := map[string]any{}
				for k, v := range cu.Evidence {
					e[k] = v
				}
				e["lines"] = lines(rootLines)
				out = append(out, DigestCulprit{Host: cu.Host, Reason: cu.Reason, Evidence: e})
				because = append(because, fmt.Sprintf("%s: %s (consequence: its ranks died)", cu.Host, cu.Reason))
			}
			return out, because
		}
	}
	if out = namedByRootLines(in, root, rootLines); len(out) > 0 {
		for _, cu := range out {
			because = append(because, fmt.Sprintf("%s: %s (the line names it)", cu.Host, cu.Reason))
		}
		return out, because
	}
	for _, cu := range goneWhilePeersRun(in, c) {
		cu.Evidence["lines"] = lines(rootLines)
		out = append(out, cu)
		because = append(because, fmt.Sprintf("%s: %s (consequence: its ranks died first)", cu.Host, cu.Reason))
	}
	return out, because
}

// namedByRootLines names the hosts that the root's own lines place: the
// rank a crash line names (through the layout), the peer a transport
// error names (through the job's addresses).
func namedByRootLines(in DigestInput, root string, ls []LogEvidence) []DigestCulprit {
	byHost, reason := map[string][]LogEvidence{}, map[string]string{}
	for _, l := range ls {
		switch {
		case root == CauseNetwork && l.Match.Peer != "":
			if h, ok := peerHost(in, l.Match.Peer); ok {
				byHost[h], reason[h] = append(byHost[h], l), DigestNamedAsPeer
			}
		case root == CauseRankFailed && isCrash(l.Match) && l.Match.Rank >= 0:
			if h := in.Layout.RankHost(l.Match.Rank); h != "" {
				byHost[h], reason[h] = append(byHost[h], l), DigestRankNamed
			}
		}
	}
	out := make([]DigestCulprit, 0, len(byHost))
	for _, h := range slices.Sorted(maps.Keys(byHost)) {
		out = append(out, DigestCulprit{Host: h, Reason: reason[h], Evidence: map[string]any{"lines": lines(byHost[h]), "count": len(byHost[h])}})
	}
	return out
}

// goneWhilePeersRun names the hosts whose processes are all gone while
// another host still has processes: the telemetry rule without its
// minority bar, so that a two-host job is judged too. It is asked only
// when a root says a rank failed and names no host.
func goneWhilePeersRun(in DigestInput, c watchcfg.Hang) []DigestCulprit {
	if in.Ended {
		return nil
	}
	var gone []HostView
	running := false
	for _, h := range in.Hosts {
		switch {
		case h.Latest.Procs == 0 && !h.Latest.HasMissing("pids"):
			gone = append(gone, h)
		case h.Latest.Procs > 0:
			running = true
		}
	}
	if !running || len(gone) == 0 || len(gone) >= len(in.Hosts) {
		return nil
	}
	out := make([]DigestCulprit, 0, len(gone))
	for _, h := range gone {
		out = append(out, DigestCulprit{Host: h.Host, Reason: CulpritProcessesGone, Evidence: map[string]any{
			"message": "no processes left while a peer still has processes", "procs": 0}})
	}
	return out
}

// deeper reports whether root explains a hit of cause: a deeper root
// than the consequence it would otherwise lose to.
func deeper(root, cause string) bool { return rootDepth[root] > rootDepth[cause] }

// explained reports whether w, the cause the rules chose, is a
// consequence that the job-level root explains.
func explained(w ruleHit, root string) bool {
	return consequenceOnly(w) && deeper(root, w.cause) && slices.Contains([]string{CauseBadDevice, CauseNetwork}, root)
}
