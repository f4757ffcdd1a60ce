package judge

import (
	"errors"
	"fmt"
	"math/bits"
)

// DefaultPartners is the number of random partners per node that the
// cross-node checks use unless configured otherwise. With it every node
// has at least 4 links (2 ring neighbours and 2 partners of its own
// choosing) and about 6 on average (it is also drawn by about 2 others),
// so a dead node shows about 6 bad links with 6 distinct peers, while a
// node at one end of one bad link still has about 5 good ones.
const DefaultPartners = 2

// maxDraws bounds the draws for one random partner: a draw that hits the
// node itself (never: it is excluded) or an existing pair is drawn again,
// at most this many times, and the partner is then skipped.
const maxDraws = 16

// ErrInvalidNodes is wrapped by the errors of Plan and Decide about their
// node list or settings.
var ErrInvalidNodes = errors.New("invalid cross-node input")

// Link is an unordered pair of nodes to measure, or measured. Plan gives A
// before B in the order of the node list for ring links, and the drawing
// node first for random ones; the pair A-B is the same link as B-A.
type Link struct {
	A, B string // host names
}

// String returns "A-B".
func (l Link) String() string { return l.A + "-" + l.B }

// Plan returns the links to measure in round one among nodes, each link
// once: a ring (nodes[i] with nodes[i+1], and the last with the first),
// plus, for each node in turn, partners extra peers drawn at random from
// the other nodes with seed (the job id, so every node of the job that
// computes the plan gets the same one). There are no self links and no
// duplicate pairs: a draw that hits an existing pair is drawn again (at
// most 16 times, then that partner is skipped).
//
// Size and degree: at most N·(1+partners) links for N nodes. Every node has
// its 2 ring neighbours and the partners it drew, so at least
// min(2+partners, N-1) peers up to the rare skipped draw, and at least 2
// whenever N ≥ 3; on average 2+2·partners, since each node is also drawn
// by about partners others. When N·(1+partners) reaches the number of all
// pairs, N·(N-1)/2, Plan returns all pairs. With 2 nodes the plan is their
// one pair; with 0 or 1 node it is empty.
//
// Why: the ring keeps every node in two links, so one bad link never looks
// like a bad node, and with the job's nodes in hostname order its links are
// mostly short (one switch); the random partners cross the fabric and make
// the link graph an expander, so a node's peers are mostly distinct,
// independent witnesses, and one other faulty node rarely accounts for more
// than one of a node's bad links.
//
// Plan returns an error wrapping ErrInvalidNodes for an empty or duplicate
// host name or a negative partners.
func Plan(nodes []string, partners int, seed uint64) ([]Link, error) {
	if partners < 0 {
		return nil, fmt.Errorf("%w: %d partners per node, want 0 or more", ErrInvalidNodes, partners)
	}
	if _, err := indexNodes(nodes); err != nil {
		return nil, err
	}
	n := len(nodes)
	switch {
	case n < 2:
		return nil, nil
	case n == 2:
		return []Link{{nodes[0], nodes[1]}}, nil
	case uint64(n)*uint64(1+partners) >= uint64(n)*uint64(n-1)/2:
		return allPairs(nodes), nil
	}
	links := make([]Link, 0, n*(1+partners))
	seen := make(map[uint64]struct{}, n*(1+partners))
	add := func(i, j int) bool {
		k := pairKey(i, j)
		if _, dup := seen[k]; dup {
			return false
		}
		seen[k] = struct{}{}
		links = append(links, Link{nodes[i], nodes[j]})
		return true
	}
	for i := range n {
		add(i, (i+1)%n)
	}
	rng := splitmix{state: seed}
	for i := range n {
		for range partners {
			for range maxDraws {
				j := int(rng.below(uint64(n - 1)))
				if j >= i {
					j++ // skip i itself: j is uniform over the others
				}
				if add(i, j) {
					break
				}
			}
		}
	}
	return links, nil
}

// allPairs returns every pair of nodes once, in node order.
func allPairs(nodes []string) []Link {
	links := make([]Link, 0, len(nodes)*(len(nodes)-1)/2)
	for i := range nodes {
		for j := i + 1; j < len(nodes); j++ {
			links = append(links, Link{nodes[i], nodes[j]})
		}
	}
	return links
}

// indexNodes maps each host name to its place in nodes, refusing empty and
// duplicate names.
func indexNodes(nodes []string) (map[string]int, error) {
	idx := make(map[string]int, len(nodes))
	for i, name := range nodes {
		if name == "" {
			return nil, fmt.Errorf("%w: node %d has an empty name", ErrInvalidNodes, i)
		}
		if j, dup := idx[name]; dup {
			return nil, fmt.Errorf("%w: node %q listed twice (at %d and %d)", ErrInvalidNodes, name, j, i)
		}
		idx[name] = i
	}
	return idx, nil
}

// pairKey identifies the unordered pair of node indices i and j.
func pairKey(i, j int) uint64 {
	if i > j {
		i, j = j, i
	}
	return uint64(i)<<32 | uint64(j)
}

// splitmix is SplitMix64 (Steele, Lea and Flood 2014), written out here so
// that a plan depends on its seed alone, never on the Go release: every
// node of a job must draw the same partners.
type splitmix struct{ state uint64 }

func (s *splitmix) next() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// below returns a number in [0, n) for n > 0, by the high half of a 128-bit
// product (bias at most n/2^64, nothing for a job's node count).
func (s *splitmix) below(n uint64) uint64 {
	hi, _ := bits.Mul64(s.next(), n)
	return hi
}
