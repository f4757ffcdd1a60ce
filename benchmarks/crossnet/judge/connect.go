package judge

import (
	"slices"
	"strconv"
	"strings"
)

// maxScan bounds how many known-good peers Decide looks at for one
// ambiguous link while preferring one that is not already a peer of either
// end; past it, the next known-good peer in turn will do.
const maxScan = 32

// connectivity judges the links: the culprits of round one, the ambiguous
// links and their re-tests or (on the second call) what the re-tests
// showed, and every bad link for the report.
func (j *judge) connectivity(v *Verdict) {
	n := len(j.names)
	deg, bad := make([]int, n), make([]int, n)
	for _, p := range j.r1.order {
		deg[p.a]++
		deg[p.b]++
		if p.bad() {
			bad[p.a]++
			bad[p.b]++
		}
	}
	pinned := make([]int, n) // the round that pinned each culprit, 0 for none
	good := make([]bool, n)  // known-good: measured in round one, no bad link
	for i := range n {
		good[i] = deg[i] > 0 && bad[i] == 0 && !j.absent[i]
		if float64(bad[i]) > j.opt.BadShare*float64(deg[i]) && j.vouchers(i, deg, bad) >= j.opt.Witnesses {
			pinned[i] = RoundPlan
		}
	}
	var ambiguous []*pair
	state := map[*pair]LinkState{}
	for _, p := range j.r1.order {
		switch {
		case !p.bad() || pinned[p.a] != 0 || pinned[p.b] != 0:
		case j.absent[p.a] || j.absent[p.b]:
			// An absent node measures nothing more: its one bad
			// link among good ones says nothing about either end.
			state[p] = LinkUndecided
		default:
			ambiguous = append(ambiguous, p)
		}
	}
	if j.second {
		j.resolve(ambiguous, good, pinned, state)
	} else {
		v.Retests = j.retests(ambiguous, good, state)
	}
	v.BadLinks = j.badLinks(pinned, state)
	for i := range n {
		if pinned[i] != 0 {
			v.Culprits = append(v.Culprits, j.unreachable(i, pinned[i], deg[i]))
		}
	}
}

// vouchers counts the peers that vouch against node n in round one: its
// link with them is bad while, apart from n, they have at least one good
// link and no more than BadShare of their links bad.
func (j *judge) vouchers(n int, deg, bad []int) int {
	count := 0
	for _, p := range j.r1.adj[n] {
		if !p.bad() {
			continue
		}
		q := p.other(n)
		other, badOther := deg[q]-1, bad[q]-1
		if other > badOther && float64(badOther) <= j.opt.BadShare*float64(other) {
			count++
		}
	}
	return count
}

// retests picks, for each ambiguous link, one known-good peer and returns
// the links from both ends to it, each pair once: at most two per
// ambiguous link. Known-good peers are taken in turn, so the re-tests are
// spread over them, preferring one that is no peer of either end yet
// (fresh evidence). A link with no known-good peer to re-test against is
// undecided.
func (j *judge) retests(ambiguous []*pair, good []bool, state map[*pair]LinkState) []Link {
	var goods []int
	for i, g := range good {
		if g {
			goods = append(goods, i)
		}
	}
	var out []Link
	seen := map[uint64]bool{}
	next := 0
	for _, p := range ambiguous {
		if len(goods) == 0 {
			state[p] = LinkUndecided
			continue
		}
		pick := -1
		for k := range min(len(goods), maxScan) {
			at := (next + k) % len(goods)
			if j.r1.link(p.a, goods[at]) == nil && j.r1.link(p.b, goods[at]) == nil {
				pick = at
				break
			}
		}
		if pick < 0 {
			pick = next % len(goods)
		}
		next = pick + 1
		g := goods[pick]
		state[p] = LinkRetest
		for _, e := range [2]int{p.a, p.b} {
			if k := pairKey(e, g); !seen[k] {
				seen[k] = true
				out = append(out, Link{j.names[e], j.names[g]})
			}
		}
	}
	return out
}

// retestEnd is what round two showed about one end of an ambiguous link.
type retestEnd struct {
	tested bool  // it has a round-two link with a known-good peer
	anyBad bool  // one of those links is bad
	failed []int // the proven peers it failed with
}

// resolve settles the ambiguous links with round two: it pins the ends
// with enough witnesses (pinned[e] = RoundRetest) and marks the links of
// cleared ends LinkFault, the rest LinkUndecided.
func (j *judge) resolve(ambiguous []*pair, good []bool, pinned []int, state map[*pair]LinkState) {
	n := len(j.names)
	proven := make([]bool, n) // known-good, and works in round two
	for _, p := range j.r2.order {
		if !p.bad() {
			proven[p.a] = good[p.a]
			proven[p.b] = good[p.b]
		}
	}
	ends := make([]*retestEnd, n)
	witnesses := make([][]int, n)
	for _, p := range ambiguous {
		for _, e := range [2]int{p.a, p.b} {
			if ends[e] == nil {
				ends[e] = j.retestEnd(e, good, proven)
				witnesses[e] = slices.Clone(ends[e].failed)
			}
		}
	}
	cleared := func(e int) bool { return ends[e].tested && !ends[e].anyBad }
	for _, p := range ambiguous {
		if cleared(p.b) {
			witnesses[p.a] = append(witnesses[p.a], p.b)
		}
		if cleared(p.a) {
			witnesses[p.b] = append(witnesses[p.b], p.a)
		}
	}
	for e, w := range witnesses {
		slices.Sort(w)
		if len(slices.Compact(w)) >= j.opt.Witnesses {
			pinned[e] = RoundRetest
		}
	}
	for _, p := range ambiguous {
		switch {
		case pinned[p.a] != 0 || pinned[p.b] != 0:
			// blamed
		case cleared(p.a) && cleared(p.b):
			state[p] = LinkFault
		default:
			state[p] = LinkUndecided
		}
	}
}

// retestEnd reads round two's links of e with known-good peers.
func (j *judge) retestEnd(e int, good, proven []bool) *retestEnd {
	r := &retestEnd{}
	for _, p := range j.r2.adj[e] {
		q := p.other(e)
		if !good[q] {
			continue
		}
		r.tested = true
		if p.bad() {
			r.anyBad = true
			if proven[q] {
				r.failed = append(r.failed, q)
			}
		}
	}
	return r
}

// badLinks lists every bad link, round one first, each round in node
// order, with its state and the culprits among its ends.
func (j *judge) badLinks(pinned []int, state map[*pair]LinkState) []BadLink {
	var out []BadLink
	for r, rd := range [2]*round{&j.r1, &j.r2} {
		var bad []*pair
		for _, p := range rd.order {
			if p.bad() {
				bad = append(bad, p)
			}
		}
		slices.SortFunc(bad, func(x, y *pair) int {
			if x.a != y.a {
				return x.a - y.a
			}
			return x.b - y.b
		})
		for _, p := range bad {
			l := BadLink{A: j.names[p.a], B: j.names[p.b], Round: r + 1, State: LinkUndecided, Measurements: p.ms}
			for _, e := range [2]int{p.a, p.b} {
				if pinned[e] != 0 {
					l.Blame = append(l.Blame, j.names[e])
				}
			}
			if len(l.Blame) > 0 {
				l.State = LinkBlamed
			} else if s, ok := state[p]; ok {
				l.State = s
			}
			out = append(out, l)
		}
	}
	return out
}

// unreachable builds the culprit entry of node n, pinned in round r, with
// every bad link against it (both rounds).
func (j *judge) unreachable(n, r, deg int) Culprit {
	c := Culprit{Node: j.names[n], Check: CheckConnect, Reason: ReasonUnreachable, Round: r, Peers: deg}
	towards, from := map[int]bool{}, map[int]bool{}
	for _, rd := range [2]*round{&j.r1, &j.r2} {
		for _, p := range rd.adj[n] {
			if !p.bad() {
				continue
			}
			c.Against = append(c.Against, p.ms...)
			q := p.other(n)
			if in := p.into(n); in.measured && !in.ok {
				towards[q] = true
			} else {
				from[q] = true
			}
		}
	}
	var peers []int
	for q := range towards {
		peers = append(peers, q)
	}
	for q := range from {
		if !towards[q] {
			peers = append(peers, q)
		}
	}
	slices.Sort(peers)
	c.BadPeers = len(peers)
	verb := "no link with"
	switch {
	case len(from) == 0:
		verb = "unreachable from"
	case len(towards) == 0:
		verb = "cannot reach"
	}
	c.Message = verb + " " + j.peerNames(peers)
	if r == RoundRetest {
		c.Message += " (re-test)"
	}
	return c
}

// peerNames joins the names of peers with commas, at most MaxNames of
// them, then " +N more".
func (j *judge) peerNames(peers []int) string {
	var b strings.Builder
	for k, q := range peers {
		if k == j.opt.MaxNames {
			b.WriteString(" +" + strconv.Itoa(len(peers)-k) + " more")
			break
		}
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(j.names[q])
	}
	return b.String()
}
