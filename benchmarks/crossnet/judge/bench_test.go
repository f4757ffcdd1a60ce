package judge

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkPlan plans round one for jobs of 1024 and 4096 nodes with the
// default partners; links/node is the mean degree, min- and max- the
// extremes.
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{1024, 4096} {
		b.Run(fmt.Sprintf("%d nodes", n), func(b *testing.B) {
			nodes := hosts(n)
			var links []Link
			for b.Loop() {
				links, _ = Plan(nodes, DefaultPartners, 42)
			}
			deg := map[string]int{}
			for _, l := range links {
				deg[l.A]++
				deg[l.B]++
			}
			lo, hi := n, 0
			for _, d := range deg {
				lo, hi = min(lo, d), max(hi, d)
			}
			b.ReportMetric(float64(2*len(links))/float64(n), "links/node")
			b.ReportMetric(float64(lo), "min-links/node")
			b.ReportMetric(float64(hi), "max-links/node")
		})
	}
}

// BenchmarkDecide judges round one of jobs of 1024 and 4096 nodes, every
// planned link measured both ways with an RTT and a throughput, with one
// dead node and one bad link (so the verdict has a culprit and re-tests).
func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{1024, 4096} {
		b.Run(fmt.Sprintf("%d nodes", n), func(b *testing.B) {
			nodes := hosts(n)
			links, _ := Plan(nodes, DefaultPartners, 42)
			w := world{
				fails: anyOf(dead(nodes[n/2]), badLink(links[10].A, links[10].B)),
				bps:   noisy(1, 100*gbit, 0.1, nil),
				rtt:   func(string, string) time.Duration { return 50 * time.Microsecond },
			}
			in := Input{Nodes: nodes, Measurements: w.measure(links, RoundPlan)}
			var v Verdict
			for b.Loop() {
				v, _ = Decide(in)
			}
			if len(v.Culprits) != 1 || len(v.Retests) != 2 {
				b.Fatalf("culprits %v, re-tests %v", culpritTexts(v), v.Retests)
			}
			b.ReportMetric(float64(2*len(links))/float64(n), "links/node")
			b.ReportMetric(float64(len(in.Measurements)), "measurements")
		})
	}
}
