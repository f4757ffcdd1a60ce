package digest

import (
	"slices"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/joblog"
)

// peerHost is the host a peer-closed line names: by address (in.Addrs,
// the layout's), by the rank a coordinated task's name carries (JAX's
// "/job:jax_worker/replica:0/task:3", through the layout's ranks), or by
// the node's own name (Open MPI's "Peer host:").
func peerHost(in DigestInput, peer string) (string, bool) {
	if h, ok := in.Addrs[peer]; ok {
		return h, true
	}
	if r, ok := joblog.CoordinatedTask(peer); ok {
		h := in.Layout.RankHost(r)
		return h, h != ""
	}
	h := in.Layout.Node(peer)
	return h, h != ""
}

// network names, from the NCCL transport errors, the host that is an end
// of several bad links (peers resolved through in.Addrs); when no end is
// in more than one link, the one peer the errors name (onePeer), or else
// the hosts that reported them; GPUDirect RDMA warnings name the hosts
// that printed them.
func network(in DigestInput, ev evidence, c watchcfg.Hang) []DigestCulprit {
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
	if out := portsDown(ev); len(out) > 0 {
		return out
	}
	if out := inSeveralLinks(reporters, ev); len(out) > 0 {
		return out
	}
	if out := onePeer(in, ev); len(out) > 0 {
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

// portsDown names the hosts whose own adapter reported its port down (an
// InfiniBand async port error, a catastrophic adapter error): the event is
// the host's own, and the errors its peers report on links to it are its
// consequence, so those peers are not named.
func portsDown(ev evidence) []DigestCulprit {
	var out []DigestCulprit
	for _, h := range ev.hosts {
		if ls := ev.of(h, isPortDown); len(ls) > 0 {
			out = append(out, DigestCulprit{Host: h, Reason: DigestPortDown, Evidence: map[string]any{"lines": lines(ls), "count": len(ls)}})
		}
	}
	return out
}

// isPortDown is a transport error about the host's own adapter.
func isPortDown(m joblog.Match) bool { return isNet(m) && m.PortDown }

// isLinkNet is a transport error other than a TCP socket's: a socket
// closed or reset by the other end is what a peer that exited causes too.
func isLinkNet(m joblog.Match) bool { return isNet(m) && !m.Socket }

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

// uniqueSorted is xs sorted, each value once.
func uniqueSorted(xs []string) []string { return slices.Compact(slices.Sorted(slices.Values(xs))) }

// onePeer names the peer that every transport error naming a peer names,
// when it is one host of the job that reported no transport error of its
// own: a link seen from one side, whose far end stopped answering (an IB
// completion with its retries exceeded, a socket it reset or closed, a
// connect with no route to it). Its reporters only lost their links to
// it. A link reported from both ends, or errors naming several peers,
// name nobody here.
func onePeer(in DigestInput, ev evidence) []DigestCulprit {
	peer := ""
	var ls []LogEvidence
	for _, h := range ev.hosts {
		for _, l := range ev.of(h, isNet) {
			if l.Match.Peer == "" {
				continue
			}
			p, ok := peerHost(in, l.Match.Peer)
			if !ok || p == h || peer != "" && p != peer {
				return nil
			}
			peer, ls = p, append(ls, l)
		}
	}
	if peer == "" || len(ev.of(peer, isNet)) > 0 {
		return nil
	}
	return []DigestCulprit{{Host: peer, Reason: DigestNamedAsPeer, Evidence: map[string]any{"lines": lines(ls), "count": len(ls)}}}
}
