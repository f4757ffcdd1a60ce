package judge

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

const gbit = 1e9 / 8 // one Gb/s in bytes per second

func TestDecideBandwidth(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		partners int
		bps      func(from, to string) float64
		want     []string // slow nodes
		wantText map[string]string
	}{
		{
			name: "a slow node among 16, its partners not blamed", n: 16, partners: 2,
			bps:  noisy(1, 100*gbit, 0.1, map[string]float64{"n7": 0.1}),
			want: []string{"n7"},
		},
		{
			name: "a slow node among 16, exact figures", n: 16, partners: 2,
			bps:      noisy(1, 9.4*gbit, 0, map[string]float64{"n7": 2.1 / 9.4}),
			want:     []string{"n7"},
			wantText: map[string]string{"n7": "net-bandwidth 2.1 Gb/s, job median 9.4 Gb/s, slow with 5 of 5 peers (re-test: 5 of 5 again)"},
		},
		{
			name: "two slow ring neighbours among 64", n: 64, partners: 2,
			bps:  noisy(2, 100*gbit, 0.1, map[string]float64{"n20": 0.2, "n21": 0.3}),
			want: []string{"n20", "n21"},
		},
		{
			name: "noisy but healthy", n: 64, partners: 2,
			bps: noisy(3, 100*gbit, 0.45, nil),
		},
		{
			name: "a node at 0.6 of the others is not slow", n: 32, partners: 2,
			bps: noisy(4, 100*gbit, 0.05, map[string]float64{"n5": 0.6}),
		},
		{
			name: "a few slow links, no slow node", n: 64, partners: 2,
			bps: func() func(string, string) float64 {
				base := noisy(5, 100*gbit, 0.1, nil)
				return func(from, to string) float64 {
					if (from == "n1" && to == "n2") || (from == "n30" && to == "n31") {
						return 5 * gbit
					}
					return base(from, to)
				}
			}(),
		},
		{
			name: "2-node job, one slow direction: cannot tell", n: 2, partners: 2,
			bps: func(from, to string) float64 {
				if from == "n1" {
					return gbit
				}
				return 100 * gbit
			},
		},
		{
			name: "half the job slow: the median moves, nobody is below half of it", n: 16, partners: 2,
			bps: noisy(6, 100*gbit, 0.05, map[string]float64{"n1": 0.4, "n2": 0.4, "n3": 0.4, "n4": 0.4, "n5": 0.4, "n6": 0.4, "n7": 0.4, "n8": 0.4}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, v := run(t, hosts(tt.n), tt.partners, 9, nil, world{bps: tt.bps}, true)
			if len(first.RetestThroughput) == 0 != (len(tt.want) == 0) {
				t.Errorf("round one re-tests the throughput of %v, want it for %v", first.RetestThroughput, tt.want)
			}
			var got []string
			for _, c := range v.Culprits {
				if c.Reason != ReasonBandwidthLow || c.Check != CheckBandwidth {
					t.Errorf("culprit %s: %s %s, want %s %s", c.Node, c.Check, c.Reason, CheckBandwidth, ReasonBandwidthLow)
				}
				if c.BadPeers*2 <= c.Peers || len(c.Against) == 0 || !(c.Value < c.JobMedian/2) {
					t.Errorf("culprit %s without the evidence: %+v", c.Node, c)
				}
				got = append(got, c.Node)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("slow %v, want %v", got, tt.want)
			}
			for node, text := range tt.wantText {
				if got := culpritTexts(v)[node]; got != text {
					t.Errorf("%s: %q, want %q", node, got, text)
				}
			}
			if v.JobBytesPerSec <= 0 {
				t.Errorf("job median %v, want a throughput", v.JobBytesPerSec)
			}
			if len(v.BadLinks) != 0 || len(first.Retests) != 0 {
				t.Errorf("bad links %v, re-tests %v, want none", v.BadLinks, first.Retests)
			}
		})
	}
}

func TestDecideLatency(t *testing.T) {
	jitter := func(seed uint64, base time.Duration, slow map[string]time.Duration) func(string, string) time.Duration {
		f := noisy(seed, float64(base), 0.3, nil)
		return func(from, to string) time.Duration {
			return time.Duration(f(from, to)) + slow[from] + slow[to]
		}
	}
	tests := []struct {
		name string
		rtt  func(from, to string) time.Duration
		want map[string]string
	}{
		{
			name: "a slow node among 16",
			rtt:  jitter(1, 50*time.Microsecond, map[string]time.Duration{"n9": 30 * time.Millisecond}),
			want: map[string]string{"n9": ""},
		},
		{
			// What a busy machine's scheduler does to pings: below the
			// floor, however many times the median.
			name: "40 times the median, under the 10ms floor",
			rtt:  jitter(4, 50*time.Microsecond, map[string]time.Duration{"n9": 2 * time.Millisecond}),
		},
		{
			name: "noisy but healthy",
			rtt:  jitter(2, 50*time.Microsecond, nil),
		},
		{
			name: "four times the median but within the slack",
			rtt:  jitter(3, 10*time.Microsecond, map[string]time.Duration{"n4": 30 * time.Microsecond}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, v := run(t, hosts(16), 2, 9, nil, world{rtt: tt.rtt}, true)
			got := culpritTexts(v)
			if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tt.want))) {
				t.Errorf("culprits %v, want %v", got, tt.want)
			}
			for _, c := range v.Culprits {
				if c.Reason != ReasonLatencyHigh || !strings.HasPrefix(c.Text(), "net-connect RTT ") || !strings.Contains(c.Message, "job median") {
					t.Errorf("culprit %s: %s %q", c.Node, c.Reason, c.Text())
				}
			}
			if v.JobRTT <= 0 {
				t.Errorf("job RTT %v, want one", v.JobRTT)
			}
		})
	}
}

func TestDecideBandwidthSkipsBadLinks(t *testing.T) {
	// A dead node has no throughput: it is a net-connect culprit, and its
	// failed links do not make its peers slow.
	w := world{fails: dead("n4"), bps: noisy(7, 100*gbit, 0.1, nil)}
	_, v := run(t, hosts(16), 2, 9, nil, w, false)
	got := culpritTexts(v)
	if len(got) != 1 || !strings.HasPrefix(got["n4"], "net-connect unreachable from ") {
		t.Errorf("culprits %v, want only n4 unreachable", got)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"Gb/s", bitRate(9.4 * gbit), "9.4 Gb/s"},
		{"Mb/s", bitRate(850e6 / 8), "850 Mb/s"},
		{"microseconds", seconds(850e-6), "850µs"},
		{"milliseconds", seconds(1.234567e-3), "1.23ms"},
		{"tens of milliseconds", seconds(23.45678e-3), "23.5ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestDecideBandwidthMajority(t *testing.T) {
	// n1 has four links: two with the slow nodes n2 and n3, one a little
	// slow, one fine. Its median, the mean of 0.1 and 0.85 of the others,
	// is below half the job's, but only half its links are slow: n1 is not
	// slow. n2 and n3 are slow with all their peers.
	nodes := hosts(12)
	links := []Link{{"n1", "n2"}, {"n1", "n3"}, {"n1", "n4"}, {"n1", "n5"},
		{"n2", "n6"}, {"n2", "n7"}, {"n2", "n8"}, {"n3", "n9"}, {"n3", "n10"}, {"n3", "n11"}}
	fast := nodes[3:] // n4 ... n12: a ring and chords
	for i := range fast {
		links = append(links, Link{fast[i], fast[(i+1)%len(fast)]}, Link{fast[i], fast[(i+3)%len(fast)]})
	}
	bps := func(from, to string) float64 {
		switch {
		case from == "n2" || to == "n2" || from == "n3" || to == "n3":
			return 10 * gbit
		case (from == "n1" && to == "n4") || (from == "n4" && to == "n1"):
			return 85 * gbit
		}
		return 100 * gbit
	}
	ms := world{bps: bps}.measure(links, RoundPlan)
	first, err := Decide(Input{Nodes: nodes, Measurements: ms})
	if err != nil {
		t.Fatal(err)
	}
	ms = append(ms, world{bps: bps}.measure(first.RetestThroughput, RoundRetest)...)
	v, err := Decide(Input{Nodes: nodes, Measurements: ms})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range v.Culprits {
		got = append(got, c.Node)
	}
	if !slices.Equal(got, []string{"n2", "n3"}) {
		t.Errorf("slow %v, want n2 n3", culpritTexts(v))
	}
}

// TestDecideSlowInOneRoundOnly: a node slow in round one whose repeat is
// fast (load, jitter) is a warning, never a culprit; so is one whose
// repeat never came. The same repeat slow again makes it a culprit.
func TestDecideSlowInOneRoundOnly(t *testing.T) {
	nodes := hosts(8)
	links, _ := Plan(nodes, 2, 3)
	for _, tt := range []struct {
		name    string
		metric  string
		w1, w2  world
		culprit bool
	}{
		{"throughput, fast again", "bw", world{bps: noisy(1, 10*gbit, 0.05, map[string]float64{"n3": 0.1})}, world{bps: noisy(2, 10*gbit, 0.05, nil)}, false},
		{"throughput, slow again", "bw", world{bps: noisy(1, 10*gbit, 0.05, map[string]float64{"n3": 0.1})}, world{bps: noisy(2, 10*gbit, 0.05, map[string]float64{"n3": 0.1})}, true},
		{"throughput, no repeat", "bw", world{bps: noisy(1, 10*gbit, 0.05, map[string]float64{"n3": 0.1})}, world{}, false},
		{"RTT, fast again", "rtt", world{rtt: func(f, to string) time.Duration {
			if f == "n3" || to == "n3" {
				return 40 * time.Millisecond
			}
			return 50 * time.Microsecond
		}}, world{rtt: func(string, string) time.Duration { return 60 * time.Microsecond }}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ms := tt.w1.measure(links, RoundPlan)
			first, err := Decide(Input{Nodes: nodes, Measurements: ms})
			if err != nil {
				t.Fatal(err)
			}
			re := first.RetestThroughput
			if tt.metric == "rtt" {
				re = first.Retests
			}
			if len(first.Culprits) != 0 || len(first.Warnings) != 1 || first.Warnings[0].Node != "n3" || len(re) == 0 {
				t.Fatalf("round one: culprits %v, warnings %+v, re-tests %v", culpritTexts(first), first.Warnings, re)
			}
			if tt.w2.bps != nil || tt.w2.rtt != nil {
				ms = append(ms, tt.w2.measure(re, RoundRetest)...)
			} else {
				ms = append(ms, world{fails: func(string, string, int) bool { return false }}.measure([]Link{{"n7", "n8"}}, RoundRetest)...)
			}
			v, err := Decide(Input{Nodes: nodes, Measurements: ms})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(v.Culprits) == 1; got != tt.culprit {
				t.Errorf("culprits %v, warnings %+v, want a culprit: %v", culpritTexts(v), v.Warnings, tt.culprit)
			}
			if !tt.culprit && (len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0].Message, "in one round only")) {
				t.Errorf("warnings %+v, want n3's, saying so", v.Warnings)
			}
		})
	}
}
