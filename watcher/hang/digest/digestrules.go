package digest

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/internal/xid"
	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
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
	DigestPortDown         = "PortDown"         // its own adapter reported its port down (an InfiniBand async port error)
	DigestOtherCollective  = "OtherCollective"  // another collective at the same sequence number
	DigestBehindInWork     = "BehindInWork"     // fewer completed NCCL works than its peers
	DigestOtherEpoch       = "OtherEpoch"       // another epoch than its peers
	DigestBehindInSteps    = "BehindInSteps"    // fewer steps than its peers
	DigestIOStalled        = "IOStalled"        // the kernel says its I/O is stuck (hung task, NFS not responding)
	DigestRankKilled       = "RankKilled"       // srun or torchrun says its task died of a signal while its peers' exited
	DigestPeerClosed       = "PeerClosed"       // its peers' connections to it closed or reset: its rank left first
	DigestLeftEarly        = "LeftEarly"        // a failed job's host that printed no error while all its peers failed
	DigestOOMKilled        = "OOMKilled"        // srun, slurmstepd or the kernel says the OOM killer killed its rank
	// DigestLocalRankClosed: the host's other processes say one local rank
	// of theirs closed its connections (NCCL's service thread), with no
	// collective timed out: that process left first.
	DigestLocalRankClosed = "LocalRankClosed"
	// DigestCollectiveMismatch: the host holds a rank that PyTorch, NCCL or
	// Horovod names as running another collective, or missing from one.
	DigestCollectiveMismatch = "CollectiveMismatch"
)

// digestRule names culprits for cause; shows is the kind of line that
// shows its anomaly (nil for a rule of telemetry only), whose earliest
// time orders the causes.
type digestRule struct {
	cause string
	find  func(in DigestInput, ev evidence, c watchcfg.Hang) []DigestCulprit
	shows func(joblog.Match) bool
}

// digestRules are the causes, each with the rule that names its culprits,
// in their order of precedence. Of those that name culprits, the first
// gives the cause unless a later one's anomaly showed in the job's lines
// strictly earlier (winner): the earliest anomaly explains what follows (a
// transport error, then ranks that exit because of it, is network).
var digestRules = []digestRule{
	{CauseBadDevice, badDevice, isDeviceFault},
	{CauseRankFailed, withRAS(rankFailed, rasFailed), orRAS(isCrash, joblog.KindRASFailed)},
	{CauseNetwork, network, isNet},
	{CauseDataStall, dataStall, isStall},
	{CauseDifferentProgress, withMismatch(withRAS(differentProgress, rasBehind)),
		orRAS(func(m joblog.Match) bool { return m.Kind == joblog.KindWatchdog || isMismatch(m) }, joblog.KindRASBehind)},
}

// badDevice names every host with a fault XID, an XID 94 (a contained ECC
// error), an Ascend NPU error code raised in a major or critical alarm, or
// an uncorrectable ECC error: an application XID (13, 31, ...: that
// process's crash, isCrash) or an NPU code in a minor alarm is not a
// fault.
func badDevice(in DigestInput, ev evidence, c watchcfg.Hang) []DigestCulprit {
	var out []DigestCulprit
	for _, h := range ev.hosts {
		ls := ev.of(h, isDeviceFault)
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
				if l.Match.Code != "" { // a runtime's line (lost heartbeat) carries none
					codes = append(codes, l.Match.Code)
				}
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

// IsFailure is a line that says something failed: a device fault, a
// crash, a task that ended badly, a transport error, a rank that could not
// reach the job's rendezvous, a peer that left (not
// NCCL's service-thread line that a local rank closed its connection,
// printed at every exit), a collective that timed out. A job that ended
// with one gets a digest (EventFailed).
func IsFailure(m joblog.Match) bool {
	return isDeviceFault(m) || isCrash(m) || isAppXID(m) || isNet(m) || m.Kind == joblog.KindPeerClosed && !isLocalRankClosed(m) || isMismatch(m) ||
		m.Kind == joblog.KindRendezvous ||
		m.Kind == joblog.KindWatchdog && m.Seq >= 0
}

// isCrash is a traceback, a CUDA error or srun's word that a task ended
// badly.
func isCrash(m joblog.Match) bool {
	return m.Kind == joblog.KindTraceback || m.Kind == joblog.KindCUDAError || m.Kind == joblog.KindTaskExit ||
		m.Kind == joblog.KindOOMKill
}

// isWaitTimeout is a rank's word that a collective it waited in timed out
// (PyTorch's watchdog, XLA's barrier): a host whose processes left after
// it left because its peers did not come, and its readings name no cause.
func isWaitTimeout(m joblog.Match) bool { return m.Kind == joblog.KindWatchdog }

// isAppXID is the driver's XID that a process's work on the GPU failed
// (xid.AppError: a graphics engine exception, a memory page fault), on
// the host whose kernel logged it: no device fault, and no cause that
// outranks another either (a job's ranks may go on after one), but the
// word of why a host's processes went.
func isAppXID(m joblog.Match) bool {
	return m.Kind == joblog.KindXID && !m.Fault && xid.AppError(m.XID)
}

// isDeviceFault is a device fault (m.Fault), or XID 94, a contained ECC
// error: no fault to drain the node for, but a device memory error ended
// the job's process there (xid.ContainedECC).
func isDeviceFault(m joblog.Match) bool {
	return m.Fault || m.Kind == joblog.KindXID && m.XID == xid.ContainedECC
}

// isStall is the kernel's word that the host's I/O is stuck: a task
// blocked for minutes, an NFS server that stopped answering.
func isStall(m joblog.Match) bool { return m.Kind == joblog.KindHungTask || m.Kind == joblog.KindNFS }

// rankFailed names the hosts whose processes are gone, few or stopped, or
// whose watcher fell silent (the telemetry culprit rules); then the hosts whose
// rank left first (firstToLeave), or whose other processes say one local
// rank closed its connections (localRankGone); failing those, the hosts with a
// traceback or CUDA error when those are not every host (a watchdog that
// aborts every rank prints tracebacks everywhere, and ranks whose peer
// left exit with errors too). A host that reported transport errors
// itself is left to the network rule, and one whose own lines say a
// collective it waited in timed out (isWaitTimeout) is not named by its
// readings; nor, when a collective timed out and lines name the ranks it
// waited for (mismatchHosts), is a host of none of those ranks.
func rankFailed(in DigestInput, ev evidence, c watchcfg.Hang) []DigestCulprit {
	named := map[string]bool{}
	var out []DigestCulprit
	behind, _ := mismatchHosts(in, ev)
	timedOut := !ev.firstAll(isWaitTimeout).IsZero()
	for _, cu := range telemetryCulprits(in, c) {
		switch cu.Reason {
		case CulpritProcessesGone, CulpritFewerProcesses, CulpritProcessesStopped, CulpritStaleSamples:
		default:
			continue
		}
		if len(ev.of(cu.Host, isNet)) > 0 || len(ev.of(cu.Host, isWaitTimeout)) > 0 {
			continue
		}
		if len(behind) > 0 && behind[cu.Host] == nil && timedOut {
			continue // it waited for the ranks a timed-out collective names, and left after the timeout
		}
		named[cu.Host] = true
		e := map[string]any{"message": cu.Message, "procs": cu.sample.Procs}
		if cu.sample.ProcsT > 0 {
			e["procs_t"] = cu.sample.ProcsT
		}
		if ls := ev.of(cu.Host, isCrash); len(ls) > 0 {
			e["lines"] = lines(ls)
		}
		reason := cu.Reason
		if cu.Reason == CulpritProcessesGone && len(ev.of(cu.Host, func(m joblog.Match) bool { return m.Kind == joblog.KindOOMKill })) > 0 {
			reason = DigestOOMKilled // its own line says why they went
		}
		out = append(out, DigestCulprit{Host: cu.Host, Reason: reason, Evidence: e})
	}
	if first := firstToLeave(in, ev, named); len(first) > 0 {
		return append(out, first...)
	}
	if gone := localRankGone(in, ev, named); len(gone) > 0 {
		return append(out, gone...)
	}
	if gone := appXIDGone(in, ev, named); len(gone) > 0 {
		return append(out, gone...)
	}
	// A host that reported transport errors (other than a socket its
	// peer closed, which its own crash explains) is the network rule's,
	// but it counts among the hosts whose ranks crashed: when every host's did,
	// none stands out (ranks exit with errors once a peer is gone).
	var crashed []string
	exited := 0
	for _, h := range ev.hosts {
		if len(ev.of(h, isCrash)) == 0 {
			continue
		}
		exited++
		if len(ev.of(h, isLinkNet)) == 0 {
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
//     an error code (every task signalled is the job's teardown); Crashed
//     when every such signal is one the program raises itself
//     (reCrashSignal: a segfault, an illegal instruction, an abort);
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
	killed, oom, errored := map[string][]LogEvidence{}, map[string][]LogEvidence{}, map[string]bool{}
	for _, h := range ev.hosts {
		for _, l := range ev.of(h, isCrash) {
			switch {
			case l.Match.Kind == joblog.KindOOMKill:
				oom[h] = append(oom[h], l)
			case l.Match.Kind == joblog.KindTaskExit && signalled(l.Line):
				killed[h] = append(killed[h], l)
			default:
				errored[h] = true
			}
		}
	}
	if len(killed) >= len(all) {
		killed = nil // every rank died of a signal: the job was torn down
	}
	for h, ls := range oom { // an OOM kill is no teardown, whoever else was killed
		killed[h] = append(ls, killed[h]...)
	}
	accused := map[string][]LogEvidence{}
	for _, l := range ev.all() {
		if l.Match.Kind != joblog.KindPeerClosed || l.Match.Peer == "" {
			continue
		}
		if h, ok := peerHost(in, l.Match.Peer); ok && h != l.Host && !errored[h] {
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
		case len(oom[h]) > 0:
			reason = DigestOOMKilled
		case len(k) > 0 && !slices.ContainsFunc(k, func(l LogEvidence) bool { return !reCrashSignal.MatchString(l.Line) }):
			reason = DigestCrashed // a signal the program raised itself (SIGSEGV, SIGILL, ...), not a kill
		case len(k) > 0:
			reason = DigestRankKilled
		case len(a) > 0:
			reason = DigestPeerClosed
		}
		ls := append(append([]LogEvidence(nil), k...), a...)
		e := map[string]any{"lines": lines(ls), "count": len(ls)}
		if left {
			e["failed_after"] = slices.Sorted(maps.Keys(errored))
		}
		out = append(out, DigestCulprit{Host: h, Reason: reason, Evidence: e})
	}
	return out
}

// reSignalled is srun's, torchrun's or mpirun's word that a task died of
// a signal (a task ended by the job's own teardown says "Terminated", or
// signal 15: not that).
var reSignalled = regexp.MustCompile(`: tasks? [\d,-]+: (?:Killed|Segmentation fault|Aborted|Bus error)|exitcode\s*:\s*-\d+|` +
	`(?i)\bsignal \d+ \(SIG[A-Z]+\) received by PID|noticed that process rank \d+ with PID \d+ on node \S+ exited on(?:$| signal (\d+))|` +
	`\*\*\* SIG(?:SEGV|ILL|FPE|ABRT|BUS|TRAP) received at time=`)

// signalled reports whether line says a task died of a signal other than
// the teardown's SIGTERM (15).
func signalled(line string) bool {
	m := reSignalled.FindStringSubmatch(line)
	return m != nil && m[1] != "15" && !strings.Contains(line, "(SIGTERM)") && !strings.Contains(line, "exitcode: -15")
}

// hostCulprit is a telemetry culprit with the sample that named it.
type hostCulprit struct {
	Culprit
	sample trace.Sample
}

// telemetryCulprits runs Culprits over the latest readings of the job's
// hosts.
func telemetryCulprits(in DigestInput, c watchcfg.Hang) []hostCulprit {
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

// dataStall names the hosts the telemetry culprit rules find idle while
// their peers spin in a collective, or in uninterruptible sleep alone.
func dataStall(in DigestInput, ev evidence, c watchcfg.Hang) []DigestCulprit {
	var out []DigestCulprit
	for _, cu := range telemetryCulprits(in, c) {
		if cu.Reason != CulpritIdleWhilePeersBusy && cu.Reason != CulpritProcessesInD {
			continue
		}
		e := map[string]any{"message": cu.Message, "procs": cu.sample.Procs, "procs_d": cu.sample.ProcsD}
		if u, ok := meanUtil(cu.sample); ok {
			e["util"] = hangfmt.Round(u)
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

// isMismatch is a line that names ranks at odd with the others'
// collectives (joblog.KindMismatch).
func isMismatch(m joblog.Match) bool { return m.Kind == joblog.KindMismatch }

// withMismatch names, before find's culprits, the hosts of the ranks that
// collective-mismatch lines name (PyTorch's "Rank 1 is running collective
// ..., but Rank 2 ...", "Ranks 2, 5 failed to pass monitoredBarrier",
// NCCL's "at and around rank 39", Horovod's "[missing ranks: 0]"), placed
// through the step's layout, job-level lines too: the ranks' own words
// prove where they run. A line naming ranks the layout cannot place names
// nobody, and so does a list of the ranks stuck in the earliest collective
// that holds every rank of the layout (none is behind another); find's
// culprits stand then.
func withMismatch(find func(DigestInput, evidence, watchcfg.Hang) []DigestCulprit) func(DigestInput, evidence, watchcfg.Hang) []DigestCulprit {
	return func(in DigestInput, ev evidence, c watchcfg.Hang) []DigestCulprit {
		byHost, ranks := mismatchHosts(in, ev)
		if len(byHost) == 0 {
			return find(in, ev, c)
		}
		out := make([]DigestCulprit, 0, len(byHost))
		for _, h := range slices.Sorted(maps.Keys(byHost)) {
			out = append(out, DigestCulprit{Host: h, Reason: DigestCollectiveMismatch,
				Evidence: map[string]any{"ranks": ranks[h], "lines": lines(byHost[h]), "count": len(byHost[h])}})
		}
		return out
	}
}

// mismatchHosts are the hosts of the ranks that collective-mismatch lines
// name as the odd ones out (over the layout), with those lines and ranks.
func mismatchHosts(in DigestInput, ev evidence) (map[string][]LogEvidence, map[string][]int) {
	byHost, ranks := map[string][]LogEvidence{}, map[string][]int{}
	for _, l := range ev.all() {
		if !isMismatch(l.Match) || l.Match.Stuck && len(in.Layout.Ranks) > 0 && len(l.Match.RankList()) >= len(in.Layout.Ranks) {
			continue
		}
		for _, r := range append(l.Match.RankList(), notReady(l.Match, in.Layout)...) {
			h := in.Layout.RankHost(r)
			if h == "" {
				continue
			}
			if !slices.Contains(ranks[h], r) {
				ranks[h] = append(ranks[h], r)
			}
			if n := len(byHost[h]); n == 0 || byHost[h][n-1].Line != l.Line {
				byHost[h] = append(byHost[h], l)
			}
		}
	}
	return byHost, ranks
}

// notReady are the odd ones out of a Horovod stall line that names the
// ranks ready for each stalled op ("[ready ranks: 2, 0, 1]"): for each op,
// the smaller side of ready and not ready over the layout's ranks (three
// ranks wait for the fourth: the fourth; one rank submitted an op the
// others never do: that one). Without the layout's ranks, or where both
// sides are as large, an op names nobody.
func notReady(m joblog.Match, l joblog.Layout) []int {
	var out []int
	for _, ready := range m.ReadyList() {
		var missing []int
		for r := range l.Ranks {
			if !slices.Contains(ready, r) {
				missing = append(missing, r)
			}
		}
		odd := ready
		switch {
		case len(l.Ranks) == 0 || len(missing) == len(ready) || len(ready) >= len(l.Ranks):
			continue
		case len(missing) < len(ready):
			odd = missing
		}
		for _, r := range odd {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	slices.Sort(out)
	return out
}

// killedHint is the hint of a rank-failed digest whose first culprit was
// killed: by the OOM killer, or by a signal.
func killedHint(d DigestEvent, who string) (string, bool) {
	if len(d.Culprits) == 0 {
		return "", false
	}
	switch d.Culprits[0].Reason {
	case DigestOOMKilled:
		return fmt.Sprintf("A rank on %s was killed for running out of memory (OOM): the others failed or waited after it; "+
			"ask for more memory (--mem, --mem-per-gpu) or lower the rank's host memory use (DataLoader workers, "+
			"pinned buffers, CPU offload).", who), true
	case DigestRankKilled:
		return fmt.Sprintf("A rank on %s was killed by a signal (SIGKILL, SIGSEGV or SIGABRT) while its peers still ran: "+
			"read the host's kernel log for an OOM kill, and the rank's last lines for a crash.", who), true
	}
	return "", false
}
