package judge

import (
	"errors"
	"slices"
	"testing"
)

func TestPlan(t *testing.T) {
	tests := []struct {
		name      string
		n         int
		partners  int
		wantLinks int // exact count; -1 to check only the bound N·(1+partners)
		minDegree int
	}{
		{"no node", 0, 2, 0, 0},
		{"one node", 1, 2, 0, 0},
		{"two nodes: their one pair", 2, 2, 1, 1},
		{"three nodes: the ring is all pairs", 3, 0, 3, 2},
		{"four nodes, two partners: all pairs", 4, 2, 6, 3},
		{"seven nodes, two partners: all pairs", 7, 2, 21, 6},
		{"eight nodes, two partners", 8, 2, -1, 2},
		{"ring only", 64, 0, 64, 2},
		{"64 nodes, two partners", 64, 2, -1, 4},
		{"1024 nodes, two partners", 1024, 2, -1, 4},
		{"4096 nodes, three partners", 4096, 3, -1, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := hosts(tt.n)
			links, err := Plan(nodes, tt.partners, 11)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantLinks >= 0 && len(links) != tt.wantLinks {
				t.Errorf("%d links, want %d", len(links), tt.wantLinks)
			}
			if limit := tt.n * (1 + tt.partners); len(links) > limit {
				t.Errorf("%d links, more than N·(1+partners) = %d", len(links), limit)
			}
			deg := map[string]int{}
			seen := map[Link]bool{}
			for _, l := range links {
				if l.A == l.B {
					t.Errorf("self link %v", l)
				}
				if !slices.Contains(nodes, l.A) || !slices.Contains(nodes, l.B) {
					t.Errorf("link %v names a node outside the job", l)
				}
				if seen[l] || seen[Link{l.B, l.A}] {
					t.Errorf("pair %v listed twice", l)
				}
				seen[l] = true
				deg[l.A]++
				deg[l.B]++
			}
			for _, n := range nodes {
				if deg[n] < tt.minDegree {
					t.Errorf("%s has %d links, want at least %d", n, deg[n], tt.minDegree)
				}
			}
			if tt.n >= 3 {
				for i, n := range nodes {
					next := nodes[(i+1)%tt.n]
					if !seen[Link{n, next}] && !seen[Link{next, n}] {
						t.Errorf("ring link %s-%s missing", n, next)
					}
				}
			}
		})
	}
}

func TestPlanIsFixedBySeed(t *testing.T) {
	nodes := hosts(64)
	a, _ := Plan(nodes, 2, 4242)
	b, _ := Plan(nodes, 2, 4242)
	c, _ := Plan(nodes, 2, 4243)
	if !slices.Equal(a, b) {
		t.Error("the same seed gave two plans")
	}
	if slices.Equal(a, c) {
		t.Error("seeds 4242 and 4243 gave the same plan")
	}
	// The plan must not change between vigil releases: nodes of one job may
	// run different builds. These are the partners of seed 1 over n1..n9.
	got, _ := Plan(hosts(9), 1, 1)
	want := []Link{
		{"n1", "n2"}, {"n2", "n3"}, {"n3", "n4"}, {"n4", "n5"}, {"n5", "n6"}, {"n6", "n7"}, {"n7", "n8"}, {"n8", "n9"}, {"n9", "n1"},
	}
	if !slices.Equal(got[:9], want) {
		t.Errorf("ring = %v, want %v", got[:9], want)
	}
	wantPartners := []Link{
		{"n1", "n6"}, {"n2", "n7"}, {"n3", "n9"}, {"n4", "n8"}, {"n5", "n9"}, {"n6", "n3"}, {"n7", "n4"}, {"n8", "n5"}, {"n9", "n4"},
	}
	if !slices.Equal(got[9:], wantPartners) {
		t.Errorf("partners = %#v, want %#v", got[9:], wantPartners)
	}
}

// SplitMix64's published first outputs for seed 0.
func TestSplitmix(t *testing.T) {
	s := splitmix{}
	for i, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := s.next(); got != want {
			t.Errorf("output %d = %#x, want %#x", i, got, want)
		}
	}
}

func TestPlanRefuses(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []string
		partners int
	}{
		{"duplicate node", []string{"n1", "n2", "n1"}, 1},
		{"empty name", []string{"n1", ""}, 1},
		{"negative partners", []string{"n1", "n2", "n3"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Plan(tt.nodes, tt.partners, 1); !errors.Is(err, ErrInvalidNodes) {
				t.Errorf("err = %v, want ErrInvalidNodes", err)
			}
		})
	}
}
