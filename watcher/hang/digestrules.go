package hang

import (
	"regexp"
	"slices"
	"sort"

	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Culprit reasons of a digest.
const (
	DigestDeviceFault      = "DeviceFault"      // a fault XID in the kernel log, an NPU error code in a major alarm
	DigestUncorrectableECC = "UncorrectableECC" // an uncorrectable ECC error
	DigestCrashed          = "Crashed"          // a traceback or CUDA error on a minority of hosts
	DigestBadLinks         = "BadLinks"         // the host is an end of several links that reported errors
	DigestTransportErrors  = "TransportErrors"  // the host reported NCCL transport errors
	DigestGDRUnavailable   = "GDRUnavailable"   // NCCL warned that GPUDirect RDMA is not usable
	DigestOtherCollective  = "OtherCollective"  // another collective at the same sequence number
	DigestBehindInWork     = "BehindInWork"     // fewer completed NCCL works than its peers
	DigestOtherEpoch       = "OtherEpoch"       // another epoch than its peers
	DigestBehindInSteps    = "BehindInSteps"    // fewer steps than its peers
	DigestIOStalled        = "IOStalled"        // the kernel says its I/O is stuck (hung task, NFS not responding)
	DigestRankKilled       = "RankKilled"       // srun or torchrun says its task died of a signal while its peers' exited
	DigestPeerClosed       = "PeerClosed"       // its peers' connections to it closed or reset: its rank left first
	DigestLeftEarly        = "LeftEarly"        // a failed job's host that printed no error while all its peers failed
)

// digestRule names culprits for cause; shows is the kind of line that
// shows its anomaly (nil for a rule of telemetry only), whose earliest
// time orders the causes.
type digestRule struct {
	cause string
	find  func(in DigestInput, ev evidence, c Config) []DigestCulprit
	shows func(joblog.Match) bool
}

// digestRules are the causes, each with the rule that names its culprits,
// in their order of precedence. Of those that name culprits, the first
// gives the cause unless a later one's anomaly showed in the job's lines
// strictly earlier (winner): the earliest anomaly explains what follows (a
// transport error, then ranks that exit because of it, is network).
var digestRules = []digestRule{
	{CauseBadDevice, badDevice, func(m joblog.Match) bool { return m.Fault }},
	{CauseRankFailed, withRAS(rankFailed, rasFailed), orRAS(isCrash, joblog.KindRASFailed)},
	{CauseNetwork, network, isNet},
	{CauseDataStall, dataStall, isStall},
	{CauseDifferentProgress, withRAS(differentProgress, rasBehind),
		orRAS(func(m joblog.Match) bool { return m.Kind == joblog.KindWatchdog }, joblog.KindRASBehind)},
}

// badDevice names every host with a fault XID, an Ascend NPU error code
// raised in a major or critical alarm, or an uncorrectable ECC error: an
// application XID (13, 31, ...) or an NPU code in a minor alarm is not a
// fault.
func badDevice(in DigestInput, ev evidence, c Config) []DigestCulprit {
	var out []DigestCulprit
	for _, h := range ev.hosts {
		ls := ev.of(h, func(m joblog.Match) bool { return m.Fault })
		if len(ls) == 0 {
			continue
		}
		reason, xids, codes := DigestUncorrectableECC, []int{}, []string{}
		for _, l := range ls {
			switch l.Match.Kind {
			case joblog.KindXID:
				reason = DigestDeviceFault
				xids = append(xids, l.Match.XID)
			case joblog.KindNPUError:
				reason = DigestDeviceFault
				codes = append(codes, l.Match.Code)
			}
		}
		e := map[string]any{"lines": lines(ls), "count": len(ls)}
		if len(xids) > 0 {
			e["xid"] = xids[:min(len(xids), evidenceLines)]
		}
		if len(codes) > 0 {
			e["error_codes"] = codes[:min(len(codes), evidenceLines)]
		}
		out = append(out, DigestCulprit{Host: h, Reason: reason, Evidence: e})
	}
	return out
}

// isNet is an NCCL transport error.
func isNet(m joblog.Match) bool { return m.Kind == joblog.KindNCCLNet }

// isCrash is a traceback, a CUDA error or srun's word that a task ended
// badly.
func isCrash(m joblog.Match) bool {
	return m.Kind == joblog.KindTraceback || m.Kind == joblog.KindCUDAError || m.Kind == joblog.KindTaskExit ||
		m.Kind == joblog.KindOOMKill
}

// isStall is the kernel's word that the host's I/O is stuck: a task
// blocked for minutes, an NFS server that stopped answering.
func isStall(m joblog.Match) bool { return m.Kind == joblog.KindHungTask || m.Kind == joblog.KindNFS }

// rankFailed names the hosts whose processes are gone, few or stopped, or
// whose watcher fell silent (the telemetry culprit rules); then the hosts whose
// rank left first (firstToLeave); failing those, the hosts with a
// traceback or CUDA error when those are not every host (a watchdog that
// aborts every rank prints tracebacks everywhere, and ranks whose peer
// left exit with errors too). A host that reported transport errors
// itself is left to the network rule.
func rankFailed(in DigestInput, ev evidence, c Config) []DigestCulprit {
	named := map[string]bool{}
	var out []DigestCulprit
	for _, cu := range telemetryCulprits(in, c) {
		switch cu.Reason {
		case CulpritProcessesGone, CulpritFewerProcesses, CulpritProcessesStopped, CulpritStaleSamples:
		default:
			continue
		}
		if len(ev.of(cu.Host, isNet)) > 0 {
			continue
		}
		named[cu.Host] = true
		e := map[string]any{"message": cu.Message, "procs": cu.sample.Procs}
		if cu.sample.ProcsT > 0 {
			e["procs_t"] = cu.sample.ProcsT
		}
		if ls := ev.of(cu.Host, isCrash); len(ls) > 0 {
			e["lines"] = lines(ls)
		}
		out = append(out, DigestCulprit{Host: cu.Host, Reason: cu.Reason, Evidence: e})
	}
	if first := firstToLeave(in, ev, named); len(first) > 0 {
		return append(out, first...)
	}
	// A host that reported transport errors is the network rule's, but it
	// counts among the hosts whose ranks crashed: when every host's did,
	// none stands out (ranks exit with errors once a peer is gone).
	var crashed []string
	exited := 0
	for _, h := range ev.hosts {
		if len(ev.of(h, isCrash)) == 0 {
			continue
		}
		exited++
		if len(ev.of(h, isNet)) == 0 {
			crashed = append(crashed, h)
		}
	}
	all := len(digestHosts(in))
	if len(crashed) == 0 || (all > 1 && exited >= all) {
		return out
	}
	for _, h := range crashed {
		if !named[h] {
			ls := ev.of(h, isCrash)
			out = append(out, DigestCulprit{Host: h, Reason: DigestCrashed, Evidence: map[string]any{"lines": lines(ls), "count": len(ls)}})
		}
	}
	return out
}

// firstToLeave names the hosts whose rank left before its peers:
//   - RankKilled: a host whose task died of a signal (srun's "Killed",
//     torchrun's negative exitcode) while other hosts' tasks exited with
//     an error code (every task signalled is the job's teardown);
//   - LeftEarly: in a job that ended (in.Ended), the hosts whose ranks
//     printed no error at all while every other host's, at least two,
//     failed: they finished or left a collective early (a rank that skipped
//     one, uneven data), and their peers failed on the closed connections;
//   - PeerClosed: a host that peers' lines accuse of closing or resetting
//     their connections (gloo's "Connection closed by peer [ADDR]", the
//     address resolved through in.Addrs; a line may accuse a peer whoever
//     printed it) and that reported no error of its own: a peer whose rank
//     failed with an error closed its connections because it failed.
//
// Hosts in named are left out.
func firstToLeave(in DigestInput, ev evidence, named map[string]bool) []DigestCulprit {
	all := digestHosts(in)
	killed, errored := map[string][]LogEvidence{}, map[string]bool{}
	for _, h := range ev.hosts {
		for _, l := range ev.of(h, isCrash) {
			if l.Match.Kind == joblog.KindTaskExit && reSignalled.MatchString(l.Line) {
				killed[h] = append(killed[h], l)
			} else {
				errored[h] = true
			}
		}
	}
	if len(killed) >= len(all) {
		killed = nil // every rank died of a signal: the job was torn down
	}
	accused := map[string][]LogEvidence{}
	for _, l := range ev.all() {
		if l.Match.Kind != joblog.KindPeerClosed || l.Match.Peer == "" {
			continue
		}
		if h, ok := in.Addrs[l.Match.Peer]; ok && h != l.Host && !errored[h] {
			accused[h] = append(accused[h], l)
			if !slices.Contains(all, h) {
				all = append(all, h) // a node of the job that printed nothing
			}
		}
	}
	sort.Strings(all)
	var clean []string
	for _, h := range all {
		if len(ev.of(h, isCrash)) == 0 {
			clean = append(clean, h)
		}
	}
	early := in.Ended && len(clean) > 0 && len(errored) >= 2 && len(clean)+len(errored) == len(all) && len(clean) < len(errored)
	var out []DigestCulprit
	for _, h := range all {
		k, a := killed[h], accused[h]
		left := early && slices.Contains(clean, h)
		if named[h] || len(k)+len(a) == 0 && !left {
			continue
		}
		reason := DigestLeftEarly
		switch {
		case len(k) > 0:
			reason = DigestRankKilled
		case len(a) > 0:
			reason = DigestPeerClosed
		}
		ls := append(append([]LogEvidence(nil), k...), a...)
		e := map[string]any{"lines": lines(ls), "count": len(ls)}
		if left {
			e["failed_after"] = sortedKeys(errored)
		}
		out = append(out, DigestCulprit{Host: h, Reason: reason, Evidence: e})
	}
	return out
}

// reSignalled is srun's or torchrun's word that a task died of a signal
// (a task ended by the job's own teardown says "Terminated": not that).
var reSignalled = regexp.MustCompile(`: tasks? [\d,-]+: (?:Killed|Segmentation fault|Aborted|Bus error)|exitcode\s*:\s*-\d+`)

// hostCulprit is a telemetry culprit with the sample that named it.
type hostCulprit struct {
	Culprit
	sample trace.Sample
}

// telemetryCulprits runs Culprits over the latest readings of the job's
// hosts.
func telemetryCulprits(in DigestInput, c Config) []hostCulprit {
	if in.Ended {
		return nil
	}
	latest := make(map[string]trace.Sample, len(in.Hosts))
	for _, h := range in.Hosts {
		latest[h.Host] = h.Latest
	}
	var out []hostCulprit
	for _, cu := range Culprits(latest, c) {
		out = append(out, hostCulprit{cu, latest[cu.Host]})
	}
	return out
}

// network names, from the NCCL transport errors, the host that is an end
// of several bad links (peers resolved through in.Addrs); when no end is
// in more than one link, the hosts that reported the errors; GPUDirect
// RDMA warnings name the hosts that printed them.
func network(in DigestInput, ev evidence, c Config) []DigestCulprit {
	links := map[[2]string]bool{}
	reporters := map[string][]string{} // end -> hosts whose lines name the link
	var gdr []DigestCulprit
	for _, h := range ev.hosts {
		ls := ev.of(h, isNet)
		if g := ev.of(h, func(m joblog.Match) bool { return isNet(m) && m.GDR }); len(g) > 0 {
			gdr = append(gdr, DigestCulprit{Host: h, Reason: DigestGDRUnavailable, Evidence: map[string]any{"lines": lines(g)}})
		}
		for _, l := range ls {
			if l.Match.Peer == "" {
				continue
			}
			peer := l.Match.Peer
			if host, ok := in.Addrs[peer]; ok {
				peer = host
			}
			k := [2]string{min(h, peer), max(h, peer)}
			if !links[k] {
				links[k] = true
				reporters[h] = append(reporters[h], h)
				reporters[peer] = append(reporters[peer], h)
			}
		}
	}
	if len(gdr) > 0 {
		return gdr
	}
	if out := inSeveralLinks(reporters, ev); len(out) > 0 {
		return out
	}
	var out []DigestCulprit
	for _, h := range ev.hosts {
		if ls := ev.of(h, isNet); len(ls) > 0 {
			out = append(out, DigestCulprit{Host: h, Reason: DigestTransportErrors,
				Evidence: map[string]any{"lines": lines(ls), "count": len(ls), "peers": peersOf(ls, in.Addrs)}})
		}
	}
	return out
}

// inSeveralLinks names the ends of the most bad links when that is at
// least two links and not every end has as many.
func inSeveralLinks(reporters map[string][]string, ev evidence) []DigestCulprit {
	most := 0
	for _, rs := range reporters {
		most = max(most, len(rs))
	}
	if most < 2 {
		return nil
	}
	var ends []string
	for end, rs := range reporters {
		if len(rs) == most {
			ends = append(ends, end)
		}
	}
	if len(ends) == len(reporters) {
		return nil
	}
	var out []DigestCulprit
	for _, end := range ends {
		by := uniqueSorted(reporters[end])
		var ls []LogEvidence
		for _, r := range by {
			ls = append(ls, ev.of(r, isNet)...)
		}
		out = append(out, DigestCulprit{Host: end, Reason: DigestBadLinks,
			Evidence: map[string]any{"links": most, "reported_by": by, "lines": lines(ls)}})
	}
	return out
}

// peersOf lists the peers named in ls, as hosts where the address is known.
func peersOf(ls []LogEvidence, addrs map[string]string) []string {
	var out []string
	for _, l := range ls {
		if p := l.Match.Peer; p != "" {
			if h, ok := addrs[p]; ok {
				p = h
			}
			out = append(out, p)
		}
	}
	return uniqueSorted(out)
}

func uniqueSorted(xs []string) []string {
	out := append([]string{}, xs...)
	sort.Strings(out)
	k := 0
	for i, x := range out {
		if i == 0 || x != out[k-1] {
			out[k] = x
			k++
		}
	}
	return out[:k]
}

// dataStall names the hosts the telemetry culprit rules find idle while
// their peers spin in a collective, or in uninterruptible sleep alone.
func dataStall(in DigestInput, ev evidence, c Config) []DigestCulprit {
	var out []DigestCulprit
	for _, cu := range telemetryCulprits(in, c) {
		if cu.Reason != CulpritIdleWhilePeersBusy && cu.Reason != CulpritProcessesInD {
			continue
		}
		e := map[string]any{"message": cu.Message, "procs": cu.sample.Procs, "procs_d": cu.sample.ProcsD}
		if u, ok := meanUtil(cu.sample); ok {
			e["util"] = round(u)
		}
		if ls := ev.of(cu.Host, isStall); len(ls) > 0 {
			e["lines"] = lines(ls)
		}
		out = append(out, DigestCulprit{Host: cu.Host, Reason: cu.Reason, Evidence: e})
	}
	// The kernel's own word names the hosts whose I/O is stuck, when not
	// every host says it (a shared file system down for all is no culprit).
	var stalled []string
	for _, h := range ev.hosts {
		if len(ev.of(h, isStall)) > 0 && !slices.ContainsFunc(out, func(c DigestCulprit) bool { return c.Host == h }) {
			stalled = append(stalled, h)
		}
	}
	if all := len(digestHosts(in)); len(stalled) > 0 && (all <= 1 || len(stalled) < all) {
		for _, h := range stalled {
			ls := ev.of(h, isStall)
			out = append(out, DigestCulprit{Host: h, Reason: DigestIOStalled, Evidence: map[string]any{"lines": lines(ls), "count": len(ls)}})
		}
	}
	return out
}
