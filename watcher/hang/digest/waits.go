package digest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Culprit reasons from what the job's processes wait on (trace.StreamWaits
// records: the system call, the file descriptor and the socket's peer each
// process is blocked on, and the cgroup freezer).
const (
	// DigestRetransmitting: every other host's processes wait on sockets
	// to the host, and the data sent to it is unacknowledged and being
	// retransmitted: the host does not answer on the network.
	DigestRetransmitting = "Retransmitting"
	// DigestWaitsOnInput: the host's processes wait on a file or a pipe
	// while its peers' wait on sockets to it.
	DigestWaitsOnInput = "WaitsOnInput"
	// DigestUnreachable: the host's watcher stopped answering and its
	// address does not answer a TCP connection from its peers' watchers:
	// the node is down or cut off from them.
	DigestUnreachable = "Unreachable"
	// DigestFrozen: the host's processes are in a frozen cgroup (the v1
	// freezer, v2 cgroup.freeze) while its peers' are not.
	DigestFrozen = "Frozen"
)

// hostWaits is the latest waits record of each host in in's lines: the
// host whose watcher read it (a record is its reader's own).
func hostWaits(in DigestInput) map[string]trace.Waits {
	out := map[string]trace.Waits{}
	for _, l := range in.Logs {
		if l.Stream != trace.StreamWaits {
			continue
		}
		h := l.Reader
		if h == "" {
			h = l.Host
		}
		if w, ok := trace.ParseWaits(l.Line); ok && h != "" {
			out[h] = w
		}
	}
	return out
}

// waitsJudgement is the cause and culprits that what the processes wait
// on names, tried in this order:
//   - rank-failed, Frozen: hosts whose processes are frozen, when not
//     every host's are;
//   - network, Retransmitting: a host to which every other host with a
//     waits record waits on sockets whose data is being retransmitted (the
//     host itself may be silent: cut off, its watcher's records do not
//     arrive);
//   - data-stall, WaitsOnInput: a host whose processes wait on a file or a
//     pipe while every other host's wait on sockets to it; else the one
//     host whose processes wait to read a named input (a file, a FIFO)
//     while the others wait on none (loneReader).
//
// ok is false when the waits name nobody.
func waitsJudgement(in DigestInput) (cause string, culprits []DigestCulprit, ok bool) {
	ws := hostWaits(in)
	if len(ws) == 0 {
		if cs := lostAndRetransmitted(in, ws); len(cs) > 0 {
			return CauseNetwork, cs, true // no waits, but a lost host that does not answer
		}
		return "", nil, false
	}
	if cs := frozenHosts(ws); len(cs) > 0 {
		return CauseRankFailed, cs, true
	}
	if cs := lostAndRetransmitted(in, ws); len(cs) > 0 {
		return CauseNetwork, cs, true
	}
	toward := map[string]map[string][]string{} // target host -> waiting host -> what it waits on there
	retrans := map[string]map[string]bool{}    // target -> hosts whose data to it is retransmitted
	for _, h := range slices.Sorted(maps.Keys(ws)) {
		for _, g := range ws[h].Waits {
			if g.Peer == "" {
				continue
			}
			t, known := peerHost(in, g.Peer)
			if !known || t == h {
				continue
			}
			if toward[t] == nil {
				toward[t], retrans[t] = map[string][]string{}, map[string]bool{}
			}
			toward[t][h] = append(toward[t][h], waitWords(g))
			retrans[t][h] = retrans[t][h] || g.Retrans
		}
	}
	var net, stall []DigestCulprit
	for _, t := range slices.Sorted(maps.Keys(toward)) {
		peers := slices.DeleteFunc(slices.Sorted(maps.Keys(ws)), func(h string) bool { return h == t })
		if len(peers) == 0 || len(toward[t]) < len(peers) {
			continue // not every other host waits on it
		}
		said := []string{}
		for _, p := range peers {
			said = append(said, p+": "+toward[t][p][0])
		}
		e := map[string]any{"waiting": peers, "waits": said[:min(len(said), evidenceLines)]}
		if len(retrans[t]) == len(peers) && !slices.Contains(boolValues(retrans[t]), false) {
			net = append(net, DigestCulprit{Host: t, Reason: DigestRetransmitting, Evidence: e})
			continue
		}
		if own, waited := ws[t]; waited && len(onInput(own)) > 0 {
			e["own"] = onInput(own)
			stall = append(stall, DigestCulprit{Host: t, Reason: DigestWaitsOnInput, Evidence: e})
		}
	}
	if len(net) == 0 {
		if c, ok := commonEnd(in, ws); ok {
			net = append(net, c)
		} else if c, ok := loneRetransmitter(in, ws); ok {
			net = append(net, c)
		}
	}
	switch {
	case len(net) > 0:
		return CauseNetwork, net, true
	case len(stall) > 0:
		return CauseDataStall, stall, true
	}
	if c, ok := loneReader(ws); ok {
		return CauseDataStall, []DigestCulprit{c}, true
	}
	return "", nil, false
}

// lostAndRetransmitted names the hosts whose watcher was lost (in.Lost)
// and to which some other host's processes have data being retransmitted,
// or whose address answered no connection (in.Unreachable): the host does
// not answer on the network, neither its watcher nor its kernel (a host
// cut off, or down). Its own waits never arrive.
func lostAndRetransmitted(in DigestInput, ws map[string]trace.Waits) []DigestCulprit {
	var out []DigestCulprit
	for _, t := range in.Lost {
		var said []string
		var waiting []string
		for _, h := range slices.Sorted(maps.Keys(ws)) {
			if h == t {
				continue
			}
			addrs := ws[h].Retransmitted()
			for _, a := range addrs {
				if p, known := peerHost(in, a); known && p == t {
					waiting = append(waiting, h)
					said = append(said, fmt.Sprintf("%s: data to %s (%s) retransmitted", h, t, a))
					break
				}
			}
		}
		unreachable := slices.Contains(in.Unreachable, t)
		switch {
		case len(waiting) > 0:
			out = append(out, DigestCulprit{Host: t, Reason: DigestRetransmitting, Evidence: map[string]any{
				"lost": true, "unreachable": unreachable, "waiting": waiting, "waits": said[:min(len(said), evidenceLines)],
				"message": t + "'s watcher stopped answering and its peers' data to it is not acknowledged"}})
		case unreachable:
			out = append(out, DigestCulprit{Host: t, Reason: DigestUnreachable, Evidence: map[string]any{
				"lost": true, "unreachable": true,
				"message": t + "'s watcher stopped answering and its address does not answer a connection from its peers"}})
		}
	}
	return out
}

// commonEnd is the one host at an end of every link whose data is being
// retransmitted (a host's Waits.RetransTo, or a group's retransmitted
// Peer), when those links reach at least two other hosts: the host that
// does not answer, though not every peer had data in flight to it. In a
// ring collective over a host cut off, the host itself retransmits to its
// right neighbour and its left neighbour to it, while the ranks further on
// only wait: every link that fails has the cut host at one end. Two hosts
// retransmitting to each other alone name nobody (either side may be the
// one cut off).
func commonEnd(in DigestInput, ws map[string]trace.Waits) (DigestCulprit, bool) {
	type link struct{ from, to string }
	seen := map[link]bool{}
	for _, h := range slices.Sorted(maps.Keys(ws)) {
		addrs := ws[h].Retransmitted()
		for _, a := range addrs {
			if t, known := peerHost(in, a); known && t != h {
				seen[link{h, t}] = true
			}
		}
	}
	ends := map[string]map[string]bool{} // host -> the other ends of its failing links
	for l := range seen {
		for _, p := range [][2]string{{l.from, l.to}, {l.to, l.from}} {
			if ends[p[0]] == nil {
				ends[p[0]] = map[string]bool{}
			}
			ends[p[0]][p[1]] = true
		}
	}
	var common []string
	for h := range ends {
		every := true
		for l := range seen {
			every = every && (l.from == h || l.to == h)
		}
		if every && len(ends[h]) >= 2 {
			common = append(common, h)
		}
	}
	if len(common) != 1 {
		return DigestCulprit{}, false
	}
	t := common[0]
	var said []string
	for _, l := range slices.SortedFunc(maps.Keys(seen), func(a, b link) int {
		return strings.Compare(a.from+" "+a.to, b.from+" "+b.to)
	}) {
		said = append(said, fmt.Sprintf("%s: data to %s retransmitted", l.from, l.to))
	}
	e := map[string]any{"waiting": slices.Sorted(maps.Keys(ends[t])), "waits": said[:min(len(said), evidenceLines)]}
	return DigestCulprit{Host: t, Reason: DigestRetransmitting, Evidence: e}, true
}

// loneRetransmitter is the one host whose processes have data that is
// not acknowledged, to addresses that are no host of the job, while at
// least two other hosts report their waits with nothing unacknowledged:
// the far end is out of vigil's sight (another network's address, the
// loopback a test's node aliases connect from), and the peers that do
// report are reachable and have nothing in flight, so the side vigil sees
// failing is the host's own. A far end that is a host of the job is left
// to commonEnd: a link seen from one side only could have failed at either.
func loneRetransmitter(in DigestInput, ws map[string]trace.Waits) (DigestCulprit, bool) {
	var senders, quiet []string
	var to []string
	for _, h := range slices.Sorted(maps.Keys(ws)) {
		addrs := ws[h].Retransmitted()
		if len(addrs) == 0 {
			quiet = append(quiet, h)
			continue
		}
		for _, a := range addrs {
			if p, known := peerHost(in, a); known && p != h {
				return DigestCulprit{}, false
			}
		}
		senders, to = append(senders, h), addrs
	}
	if len(senders) != 1 || len(quiet) < 2 {
		return DigestCulprit{}, false
	}
	to = slices.Compact(slices.Sorted(slices.Values(to)))
	return DigestCulprit{Host: senders[0], Reason: DigestRetransmitting, Evidence: map[string]any{
		"retransmitting_to": to[:min(len(to), evidenceLines)], "waiting": quiet,
		"message": senders[0] + "'s data is not acknowledged while its peers have nothing in flight"}}, true
}

// loneReader is the one host whose processes wait to read a named input
// (a file, or a FIFO: to open it or read from it) while the other hosts
// with a waits record wait on none: a rank blocked on its input while its
// peers wait for it in a collective (a lock, a poll: on no socket vigil
// can name). An anonymous pipe is not one: a launcher's own plumbing
// (srun's helper on the batch host reads one all the job long).
func loneReader(ws map[string]trace.Waits) (DigestCulprit, bool) {
	var readers []string
	for _, h := range slices.Sorted(maps.Keys(ws)) {
		if len(namedInput(ws[h])) > 0 {
			readers = append(readers, h)
		}
	}
	if len(readers) != 1 || len(ws) < 2 {
		return DigestCulprit{}, false
	}
	t := readers[0]
	peers := slices.DeleteFunc(slices.Sorted(maps.Keys(ws)), func(h string) bool { return h == t })
	said := []string{}
	for _, p := range peers {
		if len(ws[p].Waits) > 0 {
			said = append(said, p+": "+waitWords(ws[p].Waits[0]))
		}
	}
	e := map[string]any{"own": namedInput(ws[t]), "waiting": peers, "waits": said[:min(len(said), evidenceLines)]}
	return DigestCulprit{Host: t, Reason: DigestWaitsOnInput, Evidence: e}, true
}

// namedInput says the host's waits to read a named input: a read-like
// call on a file or a FIFO with a path (its file system known), or an open
// of a FIFO that no writer has opened.
func namedInput(w trace.Waits) []string {
	var out []string
	for _, g := range w.Waits {
		named := g.On == trace.WaitFile || g.On == trace.WaitPipe && (g.FS != "" || g.Syscall == "openat")
		if named && slices.Contains(readCalls, g.Syscall) {
			out = append(out, waitWords(g))
		}
	}
	return out[:min(len(out), evidenceLines)]
}

// readCalls are the system calls of a process waiting for its input.
var readCalls = []string{"read", "pread64", "readv", "openat"}

// frozenHosts names the hosts with frozen processes, when not every host
// with a waits record has them (a job frozen everywhere was suspended).
func frozenHosts(ws map[string]trace.Waits) []DigestCulprit {
	var out []DigestCulprit
	for _, h := range slices.Sorted(maps.Keys(ws)) {
		if w := ws[h]; w.Frozen > 0 {
			out = append(out, DigestCulprit{Host: h, Reason: DigestFrozen,
				Evidence: map[string]any{"frozen": w.Frozen, "procs": w.Procs, "message": fmt.Sprintf("%d of %d processes frozen", w.Frozen, w.Procs)}})
		}
	}
	if len(ws) > 1 && len(out) == len(ws) {
		return nil
	}
	return out
}

// onInput says the host's waits on a file or a pipe.
func onInput(w trace.Waits) []string {
	var out []string
	for _, g := range w.Waits {
		if g.On == trace.WaitFile || g.On == trace.WaitPipe {
			out = append(out, waitWords(g))
		}
	}
	return out[:min(len(out), evidenceLines)]
}

// waitWords says a group for people: "2 processes in recvfrom on a socket
// to 10.0.0.3, data retransmitted", "1 process in read on a file (nfs4)".
func waitWords(g trace.Wait) string {
	s := fmt.Sprintf("%d process", g.Procs)
	if g.Procs != 1 {
		s += "es"
	}
	if g.Syscall != "" {
		s += " in " + g.Syscall
	}
	s += " on a " + g.On
	if g.FS != "" {
		s += " (" + g.FS + ")"
	}
	if g.Peer != "" {
		s += " to " + g.Peer
	}
	if g.Retrans {
		s += ", data retransmitted"
	}
	return s
}

func boolValues(m map[string]bool) []bool {
	out := make([]bool, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// withWaits puts the waits' judgement among hits, after the device faults
// (a fault explains what the processes then wait on) and before every
// other rule: what the kernel says each process is blocked on is the
// direct evidence. It carries no line time, so winner keeps its place.
func withWaits(in DigestInput, hits []ruleHit) []ruleHit {
	var cause string
	var cs []DigestCulprit
	var ok bool
	if in.Ended {
		// The job ended: its processes were stopping, so what they waited
		// on says nothing, but for a host cut off before the end (Slurm
		// ends a job whose node stopped answering).
		cs = lostAndRetransmitted(in, hostWaits(in))
		cause, ok = CauseNetwork, len(cs) > 0
	} else {
		cause, cs, ok = waitsJudgement(in)
	}
	if !ok {
		return hits
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Host < cs[j].Host })
	at := 0
	for at < len(hits) && hits[at].cause == CauseBadDevice {
		at++
	}
	return slices.Insert(hits, at, ruleHit{cause: cause, culprits: cs})
}

// evidenceHint is the hint for a digest whose first culprit's evidence
// says more than its cause: processes stopped (SIGSTOP, a debugger) or
// frozen did not exit or crash, a host cut off from the network is not a
// transport error NCCL reported, a rank waiting on a pipe is not (only)
// the input file system. false leaves the cause's own hint.
func evidenceHint(d DigestEvent, who string) (string, bool) {
	if len(d.Culprits) == 0 {
		return "", false
	}
	switch d.Culprits[0].Reason {
	case CulpritProcessesStopped:
		return fmt.Sprintf("Processes of the job on %s are stopped (state T: SIGSTOP, a debugger or job control), not exited: "+
			"its peers wait for them; resume them (kill -CONT, or detach the debugger), or cancel the job.", who), true
	case DigestFrozen:
		return fmt.Sprintf("The job's processes on %s are frozen (their cgroup's freezer), not exited: the node's admins or "+
			"Slurm froze them; ask the admins why, or requeue the job without that node (--exclude=%s).", who, who), true
	case DigestRetransmitting:
		if _, own := d.Culprits[0].Evidence["retransmitting_to"]; own {
			return fmt.Sprintf("The job's ranks on %s have data to other hosts that is not acknowledged (TCP retransmits) while "+
				"the other hosts have nothing in flight: %s's network link, or the path from it, fails; ask the admins to check "+
				"it, and requeue the job without it (--exclude=%s).", who, who, who), true
		}
		return fmt.Sprintf("The other hosts' ranks wait on sockets to %s and the data they sent there is not acknowledged "+
			"(TCP retransmits): %s is cut off from the network or down; ask the admins to check its network link, "+
			"and requeue the job without it (--exclude=%s).", who, who, who), true
	case DigestUnreachable:
		return fmt.Sprintf("vigil's watcher on %s stopped answering and %s's address does not answer a connection from "+
			"the other hosts: %s is cut off from the network or down; ask the admins to check it (sinfo -R, its network "+
			"link), and requeue the job without it (--exclude=%s).", who, who, who, who), true
	case DigestWaitsOnInput:
		return fmt.Sprintf("The ranks on %s wait on a file or a pipe while their peers wait on them: check what that rank "+
			"reads (the input file system from that host, a DataLoader worker or a subprocess writing the pipe), and "+
			"give the DataLoader a timeout.", who), true
	}
	return "", false
}
