package judge

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestDecideConnect(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		partners int
		absent   []string
		fails    func(from, to string, round int) bool
		second   bool // measure the re-tests and decide again
		// wantRetests: round one asked for re-tests.
		wantRetests bool
		// wantCulprits maps each culprit to its text, or to "" to check
		// only that it is one.
		wantCulprits map[string]string
		wantStates   map[LinkState]int
		wantUnknown  []string
	}{
		{
			name: "one dead node among 4", n: 4, partners: 2, fails: dead("n3"),
			wantCulprits: map[string]string{"n3": "net-connect unreachable from n1,n2,n4"},
			wantStates:   map[LinkState]int{LinkBlamed: 3},
		},
		{
			name: "one dead node among 8", n: 8, partners: 2, fails: dead("n5"),
			wantCulprits: map[string]string{"n5": ""},
		},
		{
			name: "one dead node among 256", n: 256, partners: 2, fails: dead("n200"),
			wantCulprits: map[string]string{"n200": ""},
		},
		{
			name: "one dead node among 3 (ring only)", n: 3, partners: 0, fails: dead("n2"),
			wantCulprits: map[string]string{"n2": "net-connect unreachable from n1,n3"},
			wantStates:   map[LinkState]int{LinkBlamed: 2},
		},
		{
			name: "one bad link, before the re-test: both ends unknown", n: 8, partners: 2, fails: badLink("n1", "n2"),
			wantRetests: true,
			wantStates:  map[LinkState]int{LinkRetest: 1},
			wantUnknown: []string{"n1", "n2"},
		},
		{
			name: "one bad link, the re-test pins neither: nobody drained", n: 8, partners: 2, fails: badLink("n1", "n2"),
			second: true, wantRetests: true,
			wantStates: map[LinkState]int{LinkFault: 1},
		},
		{
			name: "one bad link, the re-test shows n2 failing", n: 8, partners: 2,
			fails: anyOf(badLink("n1", "n2"), func(from, to string, r int) bool {
				return r == RoundRetest && (from == "n2" || to == "n2")
			}),
			second: true, wantRetests: true,
			// n3 is the re-test peer: it works with n1 and fails with n2.
			wantCulprits: map[string]string{"n2": "net-connect unreachable from n1,n3 (re-test)"},
			wantStates:   map[LinkState]int{LinkBlamed: 2},
		},
		{
			name: "two bad links at one node, most of its links good: re-tested first", n: 16, partners: 2,
			fails:       anyOf(badLink("n5", "n6"), badLink("n5", "n4")),
			wantRetests: true,
			wantStates:  map[LinkState]int{LinkRetest: 2},
			wantUnknown: []string{"n4", "n5", "n6"},
		},
		{
			// Its own re-test works, but both its bad peers work with
			// known-good peers: the node in several bad links is the culprit.
			name: "two bad links at one node, the re-test clears its peers: the node is the culprit", n: 16, partners: 2,
			fails:  anyOf(badLink("n5", "n6"), badLink("n5", "n4")),
			second: true, wantRetests: true,
			wantCulprits: map[string]string{"n5": "net-connect unreachable from n4,n6 (re-test)"},
			wantStates:   map[LinkState]int{LinkBlamed: 2},
		},
		{
			name: "two dead nodes apart among 16", n: 16, partners: 2, fails: dead("n3", "n11"),
			wantCulprits: map[string]string{"n3": "", "n11": ""},
		},
		{
			name: "two dead ring neighbours among 16", n: 16, partners: 2, fails: dead("n7", "n8"),
			wantCulprits: map[string]string{"n7": "", "n8": ""},
		},
		{
			name: "asymmetric: nothing reaches n4, n4 reaches all", n: 8, partners: 2,
			fails:        func(from, to string, _ int) bool { return to == "n4" },
			wantCulprits: map[string]string{"n4": ""},
		},
		{
			name: "asymmetric: n4 reaches nobody, all reach n4", n: 8, partners: 2,
			fails:        func(from, to string, _ int) bool { return from == "n4" },
			wantCulprits: map[string]string{"n4": ""},
		},
		{
			name: "asymmetric loss on one link: re-tested, then a bad link with no culprit", n: 8, partners: 2,
			fails:  func(from, to string, _ int) bool { return from == "n1" && to == "n2" },
			second: true, wantRetests: true,
			wantStates: map[LinkState]int{LinkFault: 1},
		},
		{
			name: "asymmetric loss on one link: the re-test finds n2 unreachable", n: 8, partners: 2,
			fails: func(from, to string, r int) bool {
				return (from == "n1" && to == "n2") || (r == RoundRetest && to == "n2")
			},
			second: true, wantRetests: true,
			wantCulprits: map[string]string{"n2": "net-connect unreachable from n1,n3 (re-test)"},
		},
		{
			name: "2-node job, bad link: no third node to re-test with", n: 2, partners: 2, fails: badLink("n1", "n2"),
			wantStates:  map[LinkState]int{LinkUndecided: 1},
			wantUnknown: []string{"n1", "n2"},
		},
		{
			name: "2-node job, one dead node: cannot tell which", n: 2, partners: 2, fails: dead("n2"),
			wantStates:  map[LinkState]int{LinkUndecided: 1},
			wantUnknown: []string{"n1", "n2"},
		},
		{
			// Its prolog never met: the others' probes judge it.
			name: "absent node that nobody reaches: a culprit like a dead node", n: 8, partners: 2, absent: []string{"n5"}, fails: dead("n5"),
			wantCulprits: map[string]string{"n5": ""},
		},
		{
			// A late prolog: the probes connect (or are refused: the
			// host answered), so absence alone blames nobody.
			name: "absent node that the probes reach: nobody blamed", n: 8, partners: 2, absent: []string{"n5"},
		},
		{
			name: "absent node reached by all but one peer: one undecided link, the peer passes", n: 8, partners: 2, absent: []string{"n5"},
			fails:      badLink("n4", "n5"),
			wantStates: map[LinkState]int{LinkUndecided: 1},
		},
		{
			name: "absent node and a dead one", n: 16, partners: 2, absent: []string{"n9"}, fails: dead("n9", "n2"),
			wantCulprits: map[string]string{"n2": "", "n9": ""},
		},
		{
			name: "healthy job", n: 64, partners: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := hosts(tt.n)
			first, v := run(t, nodes, tt.partners, 7, tt.absent, world{fails: tt.fails}, tt.second)
			if got := len(first.Retests) > 0; got != tt.wantRetests {
				t.Errorf("round one asked for re-tests: %v, want %v (%v)", got, tt.wantRetests, first.Retests)
			}
			got := culpritTexts(v)
			if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tt.wantCulprits))) {
				t.Errorf("culprits %v, want %v", got, tt.wantCulprits)
			}
			for node, text := range tt.wantCulprits {
				if text != "" && got[node] != text {
					t.Errorf("%s: %q, want %q", node, got[node], text)
				}
			}
			if tt.wantStates != nil && !maps.Equal(states(v), tt.wantStates) {
				t.Errorf("bad links by state %v, want %v", states(v), tt.wantStates)
			}
			if !slices.Equal(v.Unknown, tt.wantUnknown) {
				t.Errorf("unknown %v, want %v", v.Unknown, tt.wantUnknown)
			}
			if !slices.Equal(v.Absent, tt.absent) {
				t.Errorf("absent %v, want %v", v.Absent, tt.absent)
			}
			for _, n := range nodes {
				want := OutcomePass
				_, culprit := tt.wantCulprits[n]
				switch {
				case culprit:
					want = OutcomeFail
				case slices.Contains(tt.wantUnknown, n), slices.Contains(tt.absent, n):
					want = OutcomeUnknown
				}
				if got := v.Outcome(n); got != want {
					t.Errorf("Outcome(%s) = %s, want %s", n, got, want)
				}
			}
			checkEvidence(t, v, tt.fails, nodes, tt.absent)
		})
	}
}

// checkEvidence checks what every verdict must carry: each failed link of
// the fabric among present nodes is listed as a bad link, each culprit has
// the links against it, and a culprit's message names its peers.
func checkEvidence(t *testing.T, v Verdict, fails func(string, string, int) bool, nodes, absent []string) {
	t.Helper()
	for _, l := range v.BadLinks {
		if (slices.Contains(absent, l.A) || slices.Contains(absent, l.B)) && l.State != LinkBlamed && l.State != LinkUndecided {
			t.Errorf("bad link %s-%s with an absent node is %s, want blamed or undecided", l.A, l.B, l.State)
		}
		if len(l.Measurements) == 0 {
			t.Errorf("bad link %s-%s carries no measurement", l.A, l.B)
		}
		if fails != nil && !fails(l.A, l.B, l.Round) && !fails(l.B, l.A, l.Round) {
			t.Errorf("bad link %s-%s does not fail in the fabric", l.A, l.B)
		}
	}
	for _, c := range v.Culprits {
		if len(c.Against) == 0 {
			t.Errorf("culprit %s carries no link against it", c.Node)
		}
		for _, m := range c.Against {
			if m.From != c.Node && m.To != c.Node {
				t.Errorf("culprit %s: link %s-%s is not its own", c.Node, m.From, m.To)
			}
		}
		if c.Check == CheckConnect && c.Reason == ReasonUnreachable && c.BadPeers < 2 {
			t.Errorf("culprit %s with %d bad peers, want 2 or more", c.Node, c.BadPeers)
		}
	}
}

func TestDecideMessages(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		fails func(from, to string, round int) bool
		node  string
		want  string
	}{
		{"towards the culprit", 5, func(from, to string, _ int) bool { return to == "n3" }, "n3", "net-connect unreachable from n1,n2,n4,n5"},
		{"from the culprit", 5, func(from, to string, _ int) bool { return from == "n3" }, "n3", "net-connect cannot reach n1,n2,n4,n5"},
		{"both ways, some one way", 5, func(from, to string, _ int) bool {
			return to == "n3" && from != "n1" || from == "n3"
		}, "n3", "net-connect no link with n1,n2,n4,n5"},
		{"at most five names", 9, dead("n9"), "n9", "net-connect unreachable from n1,n2,n3,n4,n5 +3 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every pair measured: the message lists every peer.
			nodes := hosts(tt.n)
			v, err := Decide(Input{Nodes: nodes, Measurements: world{fails: tt.fails}.measure(allPairs(nodes), RoundPlan)})
			if err != nil {
				t.Fatal(err)
			}
			if got := culpritTexts(v); len(got) != 1 || got[tt.node] != tt.want {
				t.Errorf("culprits %v, want only %s: %q", got, tt.node, tt.want)
			}
		})
	}
}

func TestDecideRetestPlan(t *testing.T) {
	// One bad link among 64: one known-good peer, both ends re-tested with
	// it, and it is no peer of either end yet (n1, the first known-good
	// node, is n2's ring neighbour: it is passed over).
	nodes := hosts(64)
	links, _ := Plan(nodes, 2, 3)
	v, err := Decide(Input{Nodes: nodes, Measurements: world{fails: badLink("n2", "n3")}.measure(links, RoundPlan)})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Retests) != 2 {
		t.Fatalf("re-tests %v, want 2", v.Retests)
	}
	a, b := v.Retests[0], v.Retests[1]
	if a.A != "n2" || b.A != "n3" || a.B != b.B {
		t.Errorf("re-tests %v, want n2 and n3 each with the same peer", v.Retests)
	}
	for _, l := range links {
		if (l.A == a.B || l.B == a.B) && (slices.Contains([]string{l.A, l.B}, "n2") || slices.Contains([]string{l.A, l.B}, "n3")) {
			t.Errorf("re-test peer %s was already a peer of an end (%v)", a.B, l)
		}
	}
}

func TestDecideRetestBound(t *testing.T) {
	// Many unrelated bad links: at most two re-tests each.
	nodes := hosts(256)
	links, _ := Plan(nodes, 2, 5)
	var fs []func(string, string, int) bool
	bad := 0
	for i := 0; i+1 < 256; i += 16 {
		fs = append(fs, badLink(nodes[i], nodes[i+1]))
		bad++
	}
	v, err := Decide(Input{Nodes: nodes, Measurements: world{fails: anyOf(fs...)}.measure(links, RoundPlan)})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Culprits) != 0 {
		t.Errorf("culprits %v, want none", culpritTexts(v))
	}
	if len(v.Retests) == 0 || len(v.Retests) > 2*bad {
		t.Errorf("%d re-tests for %d bad links, want 1 to %d", len(v.Retests), bad, 2*bad)
	}
}

func TestDecideRetestPeerFailsEveryone(t *testing.T) {
	// The re-test peer itself breaks between the rounds: it fails with both
	// ends, so it proves nothing and nobody is drained; all three are
	// unknown (the peer now sits in two undecided links).
	nodes := hosts(8)
	links, _ := Plan(nodes, 2, 7)
	w := world{fails: badLink("n1", "n2")}
	ms := w.measure(links, RoundPlan)
	first, err := Decide(Input{Nodes: nodes, Measurements: ms})
	if err != nil || len(first.Retests) != 2 {
		t.Fatalf("round one: %v, re-tests %v", err, first.Retests)
	}
	peer := first.Retests[0].B
	w.fails = func(from, to string, r int) bool {
		return badLink("n1", "n2")(from, to, r) || (r == RoundRetest && (from == peer || to == peer))
	}
	v, err := Decide(Input{Nodes: nodes, Measurements: append(ms, w.measure(first.Retests, RoundRetest)...)})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Culprits) != 0 {
		t.Errorf("culprits %v, want none", culpritTexts(v))
	}
	if want := []string{"n1", "n2", peer}; !slices.Equal(v.Unknown, want) {
		t.Errorf("unknown %v, want %v", v.Unknown, want)
	}
}

func TestDecideRetestMissing(t *testing.T) {
	// Round two came back without the re-tests of this link: undecided.
	nodes := hosts(8)
	links, _ := Plan(nodes, 2, 7)
	ms := world{fails: badLink("n1", "n2")}.measure(links, RoundPlan)
	other := world{}.measure([]Link{{"n5", "n6"}}, RoundRetest)
	v, err := Decide(Input{Nodes: nodes, Measurements: append(ms, other...)})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Culprits) != 0 || len(v.Retests) != 0 || states(v)[LinkUndecided] != 1 {
		t.Errorf("culprits %v, re-tests %v, states %v; want none, none, one undecided", culpritTexts(v), v.Retests, states(v))
	}
}

func TestDecideRetries(t *testing.T) {
	// A direction works when any try of it worked.
	nodes := hosts(3)
	ms := world{}.measure(allPairs(nodes), RoundPlan)
	ms = append(ms, Measurement{From: "n1", To: "n2", Status: Refused}, Measurement{From: "n3", To: "n1", Status: TimedOut})
	v, err := Decide(Input{Nodes: nodes, Measurements: ms})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.BadLinks) != 0 {
		t.Errorf("bad links %v, want none", v.BadLinks)
	}
}

func TestDecideIgnores(t *testing.T) {
	nodes := hosts(3)
	ms := world{}.measure(allPairs(nodes), RoundPlan)
	ms = append(ms,
		Measurement{From: "n1", To: "x9", Status: Failed},
		Measurement{From: "n2", To: "n2", Status: Failed},
	)
	v, err := Decide(Input{Nodes: nodes, Measurements: ms})
	if err != nil {
		t.Fatal(err)
	}
	if v.Ignored != 2 || len(v.BadLinks) != 0 {
		t.Errorf("ignored %d, bad links %v; want 2 and none", v.Ignored, v.BadLinks)
	}
}

func TestDecideUnmeasured(t *testing.T) {
	nodes := hosts(4)
	ms := world{}.measure([]Link{{"n1", "n2"}, {"n2", "n3"}, {"n3", "n1"}}, RoundPlan)
	v, err := Decide(Input{Nodes: nodes, Measurements: ms})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.Unmeasured, []string{"n4"}) || v.Outcome("n4") != OutcomeUnknown || v.Outcome("n1") != OutcomePass {
		t.Errorf("unmeasured %v, n4 %s, n1 %s; want [n4], unknown, pass", v.Unmeasured, v.Outcome("n4"), v.Outcome("n1"))
	}
}

func TestDecideRefuses(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"duplicate node", Input{Nodes: []string{"a", "a"}}, "listed twice"},
		{"absent stranger", Input{Nodes: []string{"a", "b"}, Absent: []string{"c"}}, "not one of the job's nodes"},
		{"bad share of 1", Input{Nodes: []string{"a"}, Options: Options{BadShare: 1}}, "BadShare"},
		{"negative witnesses", Input{Nodes: []string{"a"}, Options: Options{Witnesses: -1}}, "Witnesses"},
		{"slow fraction above 1", Input{Nodes: []string{"a"}, Options: Options{SlowFraction: 1.5}}, "SlowFraction"},
		{"latency factor below 1", Input{Nodes: []string{"a"}, Options: Options{LatencyFactor: 0.5}}, "LatencyFactor"},
		{"negative slack", Input{Nodes: []string{"a"}, Options: Options{LatencySlack: -1}}, "LatencySlack"},
		{"negative names", Input{Nodes: []string{"a"}, Options: Options{MaxNames: -2}}, "MaxNames"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decide(tt.in)
			if !errors.Is(err, ErrInvalidNodes) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrInvalidNodes naming %q", err, tt.want)
			}
		})
	}
}

// retestWorld runs round one of fails among nodes, then round two where
// the re-test peer of the link a-b also fails every re-test (it broke
// between the rounds), plus extra round-two measurements.
func retestWorld(t *testing.T, nodes []string, fails func(string, string, int) bool, a, b string, extra []Measurement) Verdict {
	t.Helper()
	links, _ := Plan(nodes, 2, 7)
	ms := world{fails: fails}.measure(links, RoundPlan)
	first, err := Decide(Input{Nodes: nodes, Measurements: ms})
	if err != nil {
		t.Fatal(err)
	}
	var peer string
	for _, l := range first.Retests {
		if l.A == a || l.A == b {
			peer = l.B
		}
	}
	if peer == "" {
		t.Fatalf("no re-test for %s-%s in %v", a, b, first.Retests)
	}
	broken := func(from, to string, r int) bool {
		return fails(from, to, r) || (r == RoundRetest && (from == peer || to == peer))
	}
	ms = append(ms, world{fails: broken}.measure(first.Retests, RoundRetest)...)
	v, err := Decide(Input{Nodes: nodes, Measurements: append(ms, extra...)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDecideRetestWitnesses(t *testing.T) {
	nodes := hosts(16)
	t.Run("a re-test peer that fails everyone is no witness", func(t *testing.T) {
		// n5 is in two bad links; the re-test peer of n5-n6 breaks, the one
		// of n5-n4 works with both. n4 is cleared (one witness against n5),
		// the broken peer proves nothing: n5 is not drained.
		v := retestWorld(t, nodes, anyOf(badLink("n5", "n6"), badLink("n5", "n4")), "n5", "n6", nil)
		if len(v.Culprits) != 0 {
			t.Errorf("culprits %v, want none", culpritTexts(v))
		}
		if v.Outcome("n5") != OutcomeUnknown {
			t.Errorf("n5 %s, want unknown", v.Outcome("n5"))
		}
	})
	t.Run("both ends fail with a proven peer: one witness each, undecided", func(t *testing.T) {
		// The peer works with a third node in round two, so it is proven,
		// but each end has only that one witness.
		links, _ := Plan(nodes, 2, 7)
		ms := world{fails: badLink("n1", "n2")}.measure(links, RoundPlan)
		first, _ := Decide(Input{Nodes: nodes, Measurements: ms})
		if len(first.Retests) != 2 {
			t.Fatalf("re-tests %v, want 2", first.Retests)
		}
		peer := first.Retests[0].B
		third := "n16"
		if peer == third {
			third = "n15"
		}
		ms = append(ms, world{fails: func(string, string, int) bool { return true }}.measure(first.Retests, RoundRetest)...)
		ms = append(ms, world{}.measure([]Link{{peer, third}}, RoundRetest)...)
		v, err := Decide(Input{Nodes: nodes, Measurements: ms})
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Culprits) != 0 || states(v)[LinkUndecided] != 3 {
			t.Errorf("culprits %v, states %v; want none, 3 undecided", culpritTexts(v), states(v))
		}
	})
}

func TestDecideLinkSets(t *testing.T) {
	// Link sets Plan never makes, as a lossy rendezvous might deliver them.
	tests := []struct {
		name        string
		nodes       int
		links       []Link
		fails       func(string, string, int) bool
		want        []string // culprits
		wantUnknown []string
	}{
		{
			// Each leaf's only link is with the hub: no leaf shows that it
			// works, so none vouches against the hub.
			name: "star with a dead hub: the leaves prove nothing", nodes: 5,
			links: []Link{{"n1", "n2"}, {"n1", "n3"}, {"n1", "n4"}, {"n1", "n5"}},
			fails: dead("n1"), wantUnknown: []string{"n1", "n2", "n3", "n4", "n5"},
		},
		{
			name: "star with a dead hub and working leaves", nodes: 5,
			links: []Link{{"n1", "n2"}, {"n1", "n3"}, {"n1", "n4"}, {"n1", "n5"}, {"n2", "n3"}, {"n4", "n5"}},
			fails: dead("n1"), want: []string{"n1"},
		},
		{
			// The link goes to a re-test: both ends unknown until then.
			name: "a node with one link only, dead: one witness is not enough", nodes: 4,
			links: []Link{{"n1", "n2"}, {"n2", "n3"}, {"n3", "n1"}, {"n4", "n1"}},
			fails: dead("n4"), wantUnknown: []string{"n1", "n4"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := hosts(tt.nodes)
			v, err := Decide(Input{Nodes: nodes, Measurements: world{fails: tt.fails}.measure(tt.links, RoundPlan)})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range v.Culprits {
				got = append(got, c.Node)
			}
			if !slices.Equal(got, tt.want) || !slices.Equal(v.Unknown, tt.wantUnknown) {
				t.Errorf("culprits %v, unknown %v; want %v, %v", got, v.Unknown, tt.want, tt.wantUnknown)
			}
		})
	}
}

// Outcome returns fail for a culprit, unknown for a node in Unknown or
// Absent, and pass for any other node.
func (v Verdict) Outcome(node string) Outcome {
	switch {
	case slices.ContainsFunc(v.Culprits, func(c Culprit) bool { return c.Node == node }):
		return OutcomeFail
	case slices.Contains(v.Unknown, node), slices.Contains(v.Absent, node):
		return OutcomeUnknown
	}
	return OutcomePass
}
