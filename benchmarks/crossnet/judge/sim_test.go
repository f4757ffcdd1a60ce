package judge

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// world simulates a job's fabric for tests: which directed connects fail
// in which round, and what a working link measures.
type world struct {
	fails func(from, to string, round int) bool // nil: nothing fails
	bps   func(from, to string) float64         // nil: no throughput measured
	rtt   func(from, to string) time.Duration   // nil: no RTT measured
}

// measure measures links both ways in round r.
func (w world) measure(links []Link, r int) []Measurement {
	ms := make([]Measurement, 0, 2*len(links))
	for _, l := range links {
		for _, d := range [2][2]string{{l.A, l.B}, {l.B, l.A}} {
			m := Measurement{From: d[0], To: d[1], Round: r}
			switch {
			case w.fails != nil && w.fails(d[0], d[1], r):
				m.Status, m.Detail = TimedOut, "connect: i/o timeout"
			default:
				if w.bps != nil {
					m.BytesPerSec = w.bps(d[0], d[1])
				}
				if w.rtt != nil {
					m.RTT = w.rtt(d[0], d[1])
				}
			}
			ms = append(ms, m)
		}
	}
	return ms
}

// hosts returns n1 ... nN.
func hosts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i+1)
	}
	return out
}

// dead fails every connect to or from the given nodes, in both rounds.
func dead(nodes ...string) func(from, to string, round int) bool {
	return func(from, to string, _ int) bool {
		return slices.Contains(nodes, from) || slices.Contains(nodes, to)
	}
}

// badLink fails both ways between a and b, in both rounds.
func badLink(a, b string) func(from, to string, round int) bool {
	return func(from, to string, _ int) bool {
		return (from == a && to == b) || (from == b && to == a)
	}
}

// anyOf fails a connect when any of fs does.
func anyOf(fs ...func(from, to string, round int) bool) func(from, to string, round int) bool {
	return func(from, to string, r int) bool {
		for _, f := range fs {
			if f(from, to, r) {
				return true
			}
		}
		return false
	}
}

// run plans the job, measures round one, decides, and, when round two is
// asked for and wanted, measures the re-tests and decides again.
func run(t testing.TB, nodes []string, partners int, seed uint64, absent []string, w world, second bool) (first, final Verdict) {
	t.Helper()
	links, err := Plan(nodes, partners, seed)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	ms := w.measure(links, RoundPlan)
	first, err = Decide(Input{Nodes: nodes, Absent: absent, Measurements: ms})
	if err != nil {
		t.Fatalf("Decide round one: %v", err)
	}
	if !second || len(first.Retests)+len(first.RetestThroughput) == 0 {
		return first, first
	}
	ms = append(ms, w.measure(first.Retests, RoundRetest)...)
	ms = append(ms, w.measure(first.RetestThroughput, RoundRetest)...)
	final, err = Decide(Input{Nodes: nodes, Absent: absent, Measurements: ms})
	if err != nil {
		t.Fatalf("Decide round two: %v", err)
	}
	if len(final.Retests)+len(final.RetestThroughput) != 0 {
		t.Errorf("round two asked for %d more re-tests", len(final.Retests)+len(final.RetestThroughput))
	}
	return first, final
}

// culpritTexts maps each culprit to its Text.
func culpritTexts(v Verdict) map[string]string {
	m := map[string]string{}
	for _, c := range v.Culprits {
		m[c.Node] = c.Text()
	}
	return m
}

// states counts bad links per state.
func states(v Verdict) map[LinkState]int {
	m := map[LinkState]int{}
	for _, l := range v.BadLinks {
		m[l.State]++
	}
	return m
}

// noisy returns a throughput function: base bytes per second scaled by the
// slower end's factor (1 when not listed) and by noise of ±spread, drawn
// from seed.
func noisy(seed uint64, base, spread float64, factor map[string]float64) func(from, to string) float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	f := func(n string) float64 {
		if x, ok := factor[n]; ok {
			return x
		}
		return 1
	}
	return func(from, to string) float64 {
		return base * min(f(from), f(to)) * (1 + spread*(2*rng.Float64()-1))
	}
}
