package digest

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
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
	return whilePeersRun(in, func(s trace.Sample) bool { return s.Procs == 0 && !s.HasMissing("pids") }, func(h HostView) DigestCulprit {
		return DigestCulprit{Host: h.Host, Reason: CulpritProcessesGone, Evidence: map[string]any{
			"message": "no processes left while a peer still has processes", "procs": 0}}
	})
}

// whilePeersRun names, with culprit, the hosts whose latest reading is odd
// while another host has processes and is not: none in a job that ended,
// or when every host is odd.
func whilePeersRun(in DigestInput, odd func(trace.Sample) bool, culprit func(HostView) DigestCulprit) []DigestCulprit {
	if in.Ended {
		return nil
	}
	var out []DigestCulprit
	others := false
	for _, h := range in.Hosts {
		switch {
		case odd(h.Latest):
			out = append(out, culprit(h))
		case h.Latest.Procs > 0:
			others = true
		}
	}
	if !others || len(out) >= len(in.Hosts) {
		return nil
	}
	return out
}

// inDWhilePeersRun names the hosts with processes in uninterruptible
// sleep (D: waiting on storage or a driver) while another host has
// processes and none in D: the telemetry rule ProcessesInD without its
// minority bar, so that a two-host job is judged too. It is asked only
// when no line says anything (anyEvidenceLine).
func inDWhilePeersRun(in DigestInput) []DigestCulprit {
	return whilePeersRun(in, func(s trace.Sample) bool { return s.ProcsD > 0 }, func(h HostView) DigestCulprit {
		e := map[string]any{"message": fmt.Sprintf("%d processes in uninterruptible sleep (D) while a peer's run with none", h.Latest.ProcsD),
			"procs": h.Latest.Procs, "procs_d": h.Latest.ProcsD}
		if u, ok := meanUtil(h.Latest); ok {
			e["util"] = hangfmt.Round(u)
		}
		return DigestCulprit{Host: h.Host, Reason: CulpritProcessesInD, Evidence: e}
	})
}

// reCrashSignal is a task that died of a signal the program raises on
// itself: a fault of its own code or a library's (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL) or an abort (SIGABRT), never the teardown's SIGTERM nor
// SIGKILL (a launcher's kill, the OOM killer): srun's strsignal names,
// torchrun's negative exit code and signal name, mpirun's "exited on
// signal N", Open MPI's own handler's "*** Process received signal
// ***", which it installs for SIGABRT, SIGBUS, SIGFPE and SIGSEGV only
// (open-mpi/ompi opal/runtime/opal_params_core.c, the opal_signal
// parameter's default), and abseil's failure signal handler's "*** SIGSEGV
// received at time=..." (Ray, TensorFlow, XLA).
var reCrashSignal = regexp.MustCompile(`: tasks? [\d,-]+: (?:Segmentation fault|Aborted|Bus error|Illegal instruction|Floating point exception)|` +
	`exitcode\s*:\s*-(?:4|6|7|8|11)\b|` +
	`(?i)\bsignal (?:4|6|7|8|11) \(SIG(?:ILL|ABRT|BUS|FPE|SEGV)\)|exited on signal (?:4|6|7|8|11)\b|` +
	`^\[[A-Za-z][A-Za-z0-9._-]*:\d+\] \*\*\* Process received signal \*\*\*|\*\*\* SIG(?:SEGV|ILL|FPE|ABRT|BUS) received at time=\d+`)

// crashedEverywhere is, by host, the lines that say a task died of a
// crash signal (reCrashSignal), when every host of the job (at least two)
// has one and nothing deeper explains them: no device fault, no transport
// error, no collective that timed out at or before the first of them. Ranks
// that crash on every host are the program's failure, no host's: the
// digest says rank-failed and names none. Nil otherwise.
func crashedEverywhere(in DigestInput, ev evidence) map[string][]LogEvidence {
	hosts := digestHosts(in)
	if len(hosts) < 2 {
		return nil
	}
	isSignal := func(m joblog.Match) bool { return m.Kind == joblog.KindTaskExit }
	byHost := map[string][]LogEvidence{}
	var first time.Time
	for _, h := range hosts {
		for _, l := range ev.of(h, isSignal) {
			if reCrashSignal.MatchString(l.Line) {
				byHost[h] = append(byHost[h], l)
				if first.IsZero() || l.Time.Before(first) {
					first = l.Time
				}
			}
		}
		if len(byHost[h]) == 0 {
			return nil
		}
	}
	for _, l := range ev.all() {
		if l.Match.Fault || isNet(l.Match) || l.Match.Kind == joblog.KindWatchdog && !l.Time.After(first) {
			return nil
		}
	}
	return byHost
}

// everywhereBecause is the chain of a digest whose ranks crashed on every
// host: the cause, then each host's first line.
func everywhereBecause(byHost map[string][]LogEvidence) []string {
	hosts := slices.Sorted(maps.Keys(byHost))
	out := []string{fmt.Sprintf("%s on every host (%s): a crash signal, and no device, network or timeout error before it", CauseRankFailed, strings.Join(hosts, ","))}
	for _, h := range hosts {
		out = append(out, h+": "+byHost[h][0].Line)
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

// appXIDGone names the hosts whose processes are all gone and whose kernel
// logged an application XID (isAppXID: the GPU stopped that process's
// work), when not every host of the job did: the rank there crashed on its
// GPU (a two-host job too, where the telemetry rules name no minority).
func appXIDGone(in DigestInput, ev evidence, named map[string]bool) []DigestCulprit {
	var out []DigestCulprit
	with := 0
	for _, h := range in.Hosts {
		ls := ev.of(h.Host, isAppXID)
		if len(ls) == 0 {
			continue
		}
		with++
		if !named[h.Host] && h.Latest.Procs == 0 && !h.Latest.HasMissing("pids") {
			out = append(out, DigestCulprit{Host: h.Host, Reason: DigestCrashed, Evidence: map[string]any{"lines": lines(ls), "count": len(ls), "procs": 0}})
		}
	}
	if with >= len(in.Hosts) {
		return nil
	}
	return out
}
