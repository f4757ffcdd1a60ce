package crossnet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/crossnet/judge"
	"github.com/vigil-hpc/vigil/rendezvous"
)

// nodeOutcome is what the coordinator tells one node: its result per
// check (without values: each node adds its own measurements).
type nodeOutcome struct {
	Results []benchmarks.PeerVerdict `json:"results"`
	// JobFailing is, per check, the nodes of the job that fail it.
	JobFailing map[string][]string `json:"job_failing,omitempty"`
	// BadLinks are the job's bad links that blame nobody.
	BadLinks []LinkNote `json:"bad_links,omitempty"`
}

// maxPeerNames is how many peers the device field of a drain names.
const maxPeerNames = 4

// outcomes computes each present node's outcome from the verdict.
// peers holds the verdicts of the PeerChecks (check → node → verdict).
func outcomes(v judge.Verdict, roster rendezvous.Roster, checks []string, peers map[string]map[string]benchmarks.PeerVerdict, failing map[string][]string, links []LinkNote) map[string][]byte {
	per := map[string][]byte{}
	for _, n := range roster.Present() {
		o := nodeOutcome{JobFailing: failing, BadLinks: links}
		for _, c := range checks {
			if _, ok := lookupCollective(c); ok {
				continue // its own rounds follow
			}
			if c == Connect || c == Bandwidth {
				o.Results = append(o.Results, outcomeOf(v, n, c))
				continue
			}
			r, ok := peers[c][n]
			if !ok {
				r = benchmarks.PeerVerdict{Check: c, Status: benchmarks.StatusUnknown, Reason: benchmarks.ReasonUndecided,
					Message: "no report of " + c + " from this node reached the coordinator"}
			}
			r.Check = c
			o.Results = append(o.Results, r)
		}
		per[n] = mustJSON(o)
	}
	return per
}

// outcomeOf is one node's outcome under one check: fail for a culprit of
// that check, unknown for a node the measurements could not tell, else
// pass. The message says what the job saw, absent nodes included.
func outcomeOf(v judge.Verdict, node, check string) benchmarks.PeerVerdict {
	out := benchmarks.PeerVerdict{Check: check}
	var texts []string
	for _, c := range v.CulpritsOf(node) {
		if c.Check != check {
			continue
		}
		if out.Status == "" {
			out.Status, out.Reason, out.Device = benchmarks.StatusFail, c.Reason, peerToken(c)
		}
		texts = append(texts, c.Text())
	}
	var notes []string
	for _, w := range v.Warnings {
		if w.Node == node && w.Check == check {
			notes = append(notes, "warning: "+w.Message)
		}
	}
	for _, l := range v.BadLinks {
		if (l.A == node || l.B == node) && l.State != judge.LinkBlamed {
			notes = append(notes, fmt.Sprintf("bad link %s-%s (%s)", l.A, l.B, l.State))
		}
	}
	var cut, away []string
	for _, a := range v.Absent {
		if cs := v.CulpritsOf(a); len(cs) > 0 {
			cut = append(cut, a+" ("+cs[0].Message+")")
		} else {
			away = append(away, a)
		}
	}
	if len(cut) > 0 {
		notes = append(notes, "cut off, never met: "+strings.Join(cut, ", "))
	}
	if len(away) > 0 {
		notes = append(notes, "absent (their prologs never met): "+strings.Join(away, ","))
	}
	switch {
	case out.Status == benchmarks.StatusFail:
		out.Message = strings.Join(append(texts, notes...), "; ")
		return out
	case slices.Contains(v.Busy, node):
		out.Status, out.Reason = benchmarks.StatusUnknown, benchmarks.ReasonEndpointBusy
		notes = append([]string{"a peer found this node's measurement endpoint full of connections that were not the job's (another process on its port): links not measured"}, notes...)
	case slices.Contains(v.Unknown, node):
		out.Status, out.Reason = benchmarks.StatusUnknown, benchmarks.ReasonUndecided
		notes = append([]string{"the links could not tell"}, notes...)
	case check == Bandwidth && v.JobBytesPerSec == 0:
		out.Status, out.Reason = benchmarks.StatusUnknown, benchmarks.ReasonUndecided
		notes = append([]string{"no throughput was measured"}, notes...)
	default:
		out.Status = benchmarks.StatusPass
		notes = append([]string{summary(v, check)}, notes...)
	}
	out.Message = strings.Join(notes, "; ")
	return out
}

// summary is a passing node's message: the job's medians.
func summary(v judge.Verdict, check string) string {
	if check == Bandwidth {
		return fmt.Sprintf("throughput in line with the job (job median %.2f Gb/s)", v.JobBytesPerSec*8/1e9)
	}
	return fmt.Sprintf("reached its peers (job median RTT %v)", v.JobRTT.Round(time.Microsecond))
}

// peerToken is the device field of a culprit's drain reason: the peers
// against it, "from:n3,n7" (they could not connect to it), "to:n2" (it
// could not connect to them) or "with:n1,n4" (both, or slow links), at
// most maxPeerNames then "+N". It holds no space, '+' at its start or '@',
// so benchmarks.ParseDrain reads it back.
func peerToken(c judge.Culprit) string {
	var peers []string
	for _, m := range c.Against {
		p := m.From
		if p == c.Node {
			p = m.To
		}
		if !slices.Contains(peers, p) {
			peers = append(peers, p)
		}
	}
	prefix := "with:"
	switch {
	case strings.HasPrefix(c.Message, "unreachable from"):
		prefix = "from:"
	case strings.HasPrefix(c.Message, "cannot reach"):
		prefix = "to:"
	}
	return peerList(prefix, peers)
}

// results turns this node's outcome into results, with its own
// measurements as values (one per peer).
func (p Phase) results(o nodeOutcome, mine nodeReport) []benchmarks.Result {
	var out []benchmarks.Result
	for _, c := range p.Checks {
		if _, ok := lookupCollective(c); ok {
			continue
		}
		r := benchmarks.Result{Check: c, Status: benchmarks.StatusUnknown, Reason: benchmarks.ReasonUndecided,
			Message: "no outcome for " + c + " from the coordinator"}
		for _, v := range o.Results {
			if v.Check == c {
				r.Status, r.Reason, r.Message, r.Device = v.Status, v.Reason, v.Message, v.Device
			}
		}
		if pc, ok := peerCheck(c); ok {
			r.Values = pc.Values(mine.Peers[c].Payload)
		} else {
			r.Values = values(c, mine.Measurements)
		}
		out = append(out, r)
	}
	return out
}

// values are this node's own measurements for check: round-trip times
// for net-connect, throughput for net-bandwidth, one per peer.
func values(check string, mine []judge.Measurement) []benchmarks.Value {
	var out []benchmarks.Value
	for _, m := range mine {
		st := benchmarks.StatusPass
		if m.Status != judge.OK {
			st = benchmarks.StatusFail
		}
		switch {
		case check == Connect && m.BytesPerSec == 0:
			out = append(out, benchmarks.Value{Device: m.To, Name: "rtt_us", Value: float64(m.RTT) / 1e3, Unit: "us", Status: st})
		case check == Bandwidth && (m.BytesPerSec > 0 || m.Status != judge.OK && m.RTT == 0):
			out = append(out, benchmarks.Value{Device: m.To, Name: "gbit_s", Value: m.BytesPerSec * 8 / 1e9, Unit: "Gb/s", Status: st})
		}
	}
	return out
}
