package digest

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/watcher/joblog"
)

// localRankPeer is the local rank that a peer-closed line names (NCCL's
// service thread: "Connection closed by localRank 7"), and whether it
// names one: a process of the host that printed the line, never a host.
func localRankPeer(m joblog.Match) (int, bool) {
	n, ok := strings.CutPrefix(m.Peer, "localRank ")
	if m.Kind != joblog.KindPeerClosed || !ok {
		return -1, false
	}
	r, err := strconv.Atoi(n)
	return r, err == nil && r >= 0
}

// isLocalRankClosed is NCCL's service-thread line that a local rank
// closed its connection: printed at every exit too, it is evidence only
// as localRankGone reads several of them.
func isLocalRankClosed(m joblog.Match) bool {
	_, ok := localRankPeer(m)
	return ok
}

// reNCCLPID is the PID in NCCL's prefix ("HOST:PID:TID [dev] NCCL INFO").
var reNCCLPID = regexp.MustCompile(`:(\d+):\d+ \[\d+\] NCCL INFO `)

// localRankGone names the hosts where one local rank closed its
// connections to the other processes' NCCL proxies: at least two
// processes of the host (NCCL's prefix: distinct PIDs) print "[Service
// thread] Connection closed by localRank N", all naming the same N, and no
// collective timed out anywhere in the job. Those that print it still
// run; the one they name left first (it crashed or was killed). At a
// normal exit the processes name one another, and after a timeout every
// communicator aborts: neither names one local rank alone. When every
// host of the job shows it, none stands out. Hosts in named are left out.
func localRankGone(in DigestInput, ev evidence, named map[string]bool) []DigestCulprit {
	timedOut := func(m joblog.Match) bool { return m.Kind == joblog.KindWatchdog }
	if ev.any(timedOut) || slices.ContainsFunc(ev.job, func(l LogEvidence) bool { return timedOut(l.Match) }) {
		return nil
	}
	var out []DigestCulprit
	for _, h := range ev.hosts {
		if named[h] {
			continue
		}
		ls := ev.of(h, isLocalRankClosed)
		ranks, pids := map[int]bool{}, map[string]bool{}
		for _, l := range ls {
			r, _ := localRankPeer(l.Match)
			ranks[r] = true
			if m := reNCCLPID.FindStringSubmatch(l.Line); m != nil {
				pids[m[1]] = true
			}
		}
		if len(ranks) != 1 || len(pids) < 2 {
			continue
		}
		r, _ := localRankPeer(ls[0].Match)
		out = append(out, DigestCulprit{Host: h, Reason: DigestLocalRankClosed, Evidence: map[string]any{
			"local_rank": r, "reported_by": len(pids), "lines": lines(ls), "count": len(ls)}})
	}
	if all := len(digestHosts(in)); all > 1 && len(out) >= all {
		return nil
	}
	return out
}
