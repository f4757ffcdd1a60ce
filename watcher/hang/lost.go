package hang

import (
	"fmt"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// observeLost takes a watcher's record that another host's watcher was
// lost: the host is noted (the first word counts), and its address maps
// to it, so that the peers' sockets to it name it.
func (j *jobTrack) observeLost(s trace.Sample) {
	l, ok := trace.ParseLost(s.Log.Line)
	if !ok || l.Host == s.Host {
		return
	}
	if _, said := j.lost[l.Host]; !said {
		j.lost[l.Host] = s.Time
	}
	if l.Unreachable && !j.unreachable[l.Host] {
		j.unreachable[l.Host] = true
		if j.strong.at.IsZero() {
			j.strong = strongEvidence{at: s.Time, by: digest.DetectedEvidence, host: l.Host,
				what: fmt.Sprintf("%s: its watcher stopped answering and its address does not answer a connection from %s", l.Host, s.Host)}
		}
	}
	if l.Addr != "" {
		if _, known := j.addrs[l.Addr]; !known {
			j.addrs[l.Addr] = l.Host
		}
	}
}

// noteLostPeer takes a waits record s of a host (its reader): when its
// processes' data to a host whose watcher was lost is being retransmitted,
// that host is cut off or down: strong evidence, confirmed like any other
// (a link may come back), unless stronger evidence is pending.
func (j *jobTrack) noteLostPeer(s trace.Sample) {
	if !j.strong.at.IsZero() {
		return
	}
	w, ok := trace.ParseWaits(s.Log.Line)
	if !ok {
		return
	}
	addrs := w.Retransmitted()
	for _, a := range addrs {
		if h := j.addrs[a]; h != "" && h != s.Host {
			if _, lost := j.lost[h]; lost {
				j.strong = strongEvidence{at: s.Time, by: digest.DetectedEvidence, host: h,
					what: fmt.Sprintf("%s: its watcher stopped answering and %s's data to it (%s) is being retransmitted", h, s.Host, a)}
				return
			}
		}
	}
}
