package judge

import (
	"time"

	"github.com/vigil-hpc/vigil/internal/stats"
)

// Status is how one directed measurement of a link ended.
type Status uint8

// The ways a measurement ends. Only OK counts as a working link; the
// others differ only in the report.
const (
	// OK: the connection was made (and the transfer, if any, finished).
	OK Status = iota
	// TimedOut: no answer within the deadline.
	TimedOut
	// Refused: the peer refused or reset the connection.
	Refused
	// Failed: any other failure of the link (no route, a transfer that
	// broke off).
	Failed
	// Busy: the peer's endpoint answered that it was full of other
	// connections (anyone's process can connect to it). Not a measurement
	// of the link: the direction counts as unmeasured, and the peer ends
	// unknown (Verdict.Busy), never blamed for it.
	Busy
)

// String returns "ok", "timeout", "refused" or "failed".
func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case TimedOut:
		return "timeout"
	case Refused:
		return "refused"
	case Busy:
		return "busy"
	}
	return "failed"
}

// Round one measures the plan; round two the re-tests Decide asks for.
const (
	RoundPlan   = 1
	RoundRetest = 2
)

// Measurement is one directed measurement of a link: From connected (and
// sent, for a bandwidth test) to To. Several measurements of the same
// direction in one round are retries: the direction works when any of them
// is OK, and its throughput and RTT are the best of the OK ones.
type Measurement struct {
	From, To string // host names
	// Round is RoundPlan (1) for the plan's links and RoundRetest (2) for
	// the re-tests Decide asked for; 0 counts as 1.
	Round  int
	Status Status
	// RTT is the round-trip time From measured to To; 0 when not
	// measured.
	RTT time.Duration
	// BytesPerSec is the throughput from From to To in bytes per second;
	// 0 when not measured.
	BytesPerSec float64
	// Detail is the error as the measuring node saw it, for the report
	// only ("connect: connection refused"); empty when OK.
	Detail string
}

func (m Measurement) round() int {
	if m.Round == RoundRetest {
		return RoundRetest
	}
	return RoundPlan
}

// direction folds the measurements of one direction of a link in one round.
type direction struct {
	measured bool
	ok       bool
	rtt      time.Duration // best (lowest) of the OK measurements with an RTT
	bps      float64       // best (highest) of the OK measurements with a throughput
}

func (d *direction) add(m Measurement) {
	d.measured = true
	if m.Status != OK {
		return
	}
	d.ok = true
	if m.RTT > 0 && (d.rtt == 0 || m.RTT < d.rtt) {
		d.rtt = m.RTT
	}
	d.bps = max(d.bps, m.BytesPerSec)
}

// pair is one measured link of one round: node indices a < b, the two
// directions, and the measurements as given, for the report.
type pair struct {
	id   int // place in its round's order
	a, b int
	ab   direction // a to b
	ba   direction // b to a
	ms   []Measurement
}

// bad reports whether a measured direction of the link failed (every try
// of it).
func (p *pair) bad() bool {
	return (p.ab.measured && !p.ab.ok) || (p.ba.measured && !p.ba.ok)
}

// other returns the end of p that is not n.
func (p *pair) other(n int) int {
	if p.a == n {
		return p.b
	}
	return p.a
}

// into returns the direction of p that ends at n.
func (p *pair) into(n int) direction {
	if p.b == n {
		return p.ab
	}
	return p.ba
}

// round is the links of one round, by pair and by node.
type round struct {
	pairs map[uint64]*pair
	order []*pair   // in the order first measured, for stable output; pair.id is the place here
	adj   [][]*pair // per node, its links in this round
}

// newRounds folds the measurements among the indexed nodes into round one
// and round two. Busy measurements are not folded in: busyNodes says which
// ends of them were busy. Measurements naming a node outside idx, made by a node in
// skip (absent: it sent none), towards an absent node in round two (it
// takes no part in the re-tests), or with the same node at both ends are
// left out and counted in ignored. A present node's probe of an absent
// one in round one counts: it is how an absent node is judged.
func newRounds(idx map[string]int, skip []bool, ms []Measurement) (r1, r2 round, ignored int) {
	r1 = round{pairs: make(map[uint64]*pair, len(ms)/2), adj: make([][]*pair, len(skip))}
	r2 = round{pairs: map[uint64]*pair{}, adj: make([][]*pair, len(skip))}
	for _, m := range ms {
		f, okf := idx[m.From]
		t, okt := idx[m.To]
		if !okf || !okt || f == t || skip[f] || (skip[t] && m.round() == RoundRetest) {
			ignored++
			continue
		}
		if m.Status == Busy {
			continue
		}
		rd := &r1
		if m.round() == RoundRetest {
			rd = &r2
		}
		rd.add(f, t, m)
	}
	return r1, r2, ignored
}

// add folds m, measured from node f to node t, into the round.
func (rd *round) add(f, t int, m Measurement) {
	k := pairKey(f, t)
	p := rd.pairs[k]
	if p == nil {
		p = &pair{id: len(rd.order), a: min(f, t), b: max(f, t)}
		rd.pairs[k] = p
		rd.order = append(rd.order, p)
		rd.adj[f] = append(rd.adj[f], p)
		rd.adj[t] = append(rd.adj[t], p)
	}
	if f == p.a {
		p.ab.add(m)
	} else {
		p.ba.add(m)
	}
	p.ms = append(p.ms, m)
}

// link returns the link between i and j in this round, or nil.
func (rd *round) link(i, j int) *pair { return rd.pairs[pairKey(i, j)] }

// median returns the median of xs (the mean of the two middle values for an
// even count), reordering xs; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.MedianInPlace(xs)
}

// busyNodes returns, per node, whether a peer found its endpoint busy on
// every try of a direction in a round: that direction was never measured.
func busyNodes(idx map[string]int, ms []Measurement) []bool {
	type dir struct {
		from, to string
		round    int
	}
	measured := map[dir]bool{}
	for _, m := range ms {
		if m.Status != Busy {
			measured[dir{m.From, m.To, m.round()}] = true
		}
	}
	busy := make([]bool, len(idx))
	for _, m := range ms {
		if t, ok := idx[m.To]; ok && m.Status == Busy && !measured[dir{m.From, m.To, m.round()}] {
			busy[t] = true
		}
	}
	return busy
}
