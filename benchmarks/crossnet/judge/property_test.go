package judge

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPropertySingleDeadNode: wherever one dead node sits among 64 or 1024,
// under any seed, it is the only culprit, pinned in round one, every bad
// link is blamed on it, and every other node passes.
func TestPropertySingleDeadNode(t *testing.T) {
	for _, n := range []int{64, 1024} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			nodes := hosts(n)
			rng := rand.New(rand.NewPCG(uint64(n), 2))
			for trial := range 40 {
				seed := rng.Uint64()
				d := nodes[rng.IntN(n)]
				_, v := run(t, nodes, DefaultPartners, seed, nil, world{fails: dead(d)}, true)
				if len(v.Culprits) != 1 || v.Culprits[0].Node != d || v.Culprits[0].Round != RoundPlan {
					t.Fatalf("trial %d (seed %d, dead %s): culprits %v", trial, seed, d, culpritTexts(v))
				}
				for _, l := range v.BadLinks {
					if !slices.Equal(l.Blame, []string{d}) {
						t.Fatalf("trial %d: bad link %s-%s blames %v, want %s", trial, l.A, l.B, l.Blame, d)
					}
				}
				for _, x := range nodes {
					if want := map[bool]Outcome{true: OutcomeFail, false: OutcomePass}[x == d]; v.Outcome(x) != want {
						t.Fatalf("trial %d: %s %s, want %s", trial, x, v.Outcome(x), want)
					}
				}
			}
		})
	}
}

// TestPropertyHealthyNeverCulprit: with up to 8 dead nodes and up to 8 bad
// links between healthy nodes, placed at random, no healthy node is ever a
// culprit after both rounds, unless two of the bad links happen to share it
// (then it is "the host in several bad links", by the rule); no dead node
// passes; and a healthy node is left unknown only when it is an end of a
// bad link.
func TestPropertyHealthyNeverCulprit(t *testing.T) {
	for _, n := range []int{64, 1024} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			nodes := hosts(n)
			rng := rand.New(rand.NewPCG(uint64(n), 3))
			for trial := range 40 {
				seed := rng.Uint64()
				var deadNodes []string
				for range 1 + rng.IntN(8) {
					deadNodes = append(deadNodes, nodes[rng.IntN(n)])
				}
				fs := []func(string, string, int) bool{dead(deadNodes...)}
				linkEnds := map[string]int{} // bad links per healthy node
				for range rng.IntN(9) {
					a, b := nodes[rng.IntN(n)], nodes[rng.IntN(n)]
					if a == b || slices.Contains(deadNodes, a) || slices.Contains(deadNodes, b) {
						continue
					}
					fs = append(fs, badLink(a, b))
					linkEnds[a]++
					linkEnds[b]++
				}
				_, v := run(t, nodes, DefaultPartners, seed, nil, world{fails: anyOf(fs...)}, true)
				for _, x := range nodes {
					isDead := slices.Contains(deadNodes, x)
					switch o := v.Outcome(x); {
					case isDead && o == OutcomePass:
						t.Fatalf("trial %d (seed %d): dead %s passes", trial, seed, x)
					case !isDead && o == OutcomeFail && linkEnds[x] < 2:
						t.Fatalf("trial %d (seed %d, dead %v): healthy %s is a culprit: %v", trial, seed, deadNodes, x, v.CulpritsOf(x))
					case !isDead && o == OutcomeUnknown && linkEnds[x] == 0 && !nextToDead(v, x, deadNodes):
						t.Fatalf("trial %d (seed %d): healthy %s unknown", trial, seed, x)
					}
				}
			}
		})
	}
}

// nextToDead reports whether x is an end of a bad link whose other end is
// one of dead.
func nextToDead(v Verdict, x string, dead []string) bool {
	return slices.ContainsFunc(v.BadLinks, func(l BadLink) bool {
		return (l.A == x && slices.Contains(dead, l.B)) || (l.B == x && slices.Contains(dead, l.A))
	})
}

// TestPropertySingleBadLink: one bad link between healthy nodes is never
// blamed on anyone, before or after the re-test.
func TestPropertySingleBadLink(t *testing.T) {
	for _, n := range []int{64, 1024} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			nodes := hosts(n)
			rng := rand.New(rand.NewPCG(uint64(n), 4))
			for trial := range 40 {
				seed := rng.Uint64()
				links, _ := Plan(nodes, DefaultPartners, seed)
				l := links[rng.IntN(len(links))]
				first, v := run(t, nodes, DefaultPartners, seed, nil, world{fails: badLink(l.A, l.B)}, true)
				if len(first.Culprits) != 0 || len(first.Retests) != 2 || len(v.Culprits) != 0 {
					t.Fatalf("trial %d (seed %d, link %v): round one %v re-tests %v, final %v",
						trial, seed, l, culpritTexts(first), first.Retests, culpritTexts(v))
				}
				if len(v.BadLinks) != 1 || v.BadLinks[0].State != LinkFault || len(v.Unknown) != 0 {
					t.Fatalf("trial %d: bad links %v, unknown %v; want one link-fault, none unknown", trial, v.BadLinks, v.Unknown)
				}
			}
		})
	}
}
