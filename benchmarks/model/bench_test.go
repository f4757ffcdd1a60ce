package model

import (
	"context"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// BenchmarkModelCPU runs each single-node model check at its shipped
// shape on this machine's CPUs (Debian's PyTorch, one rank, one thread)
// and reports its median step time, its rate and its wall time.
func BenchmarkModelCPU(b *testing.B) {
	p := &prepared{c: gptCheck, s: gptCheck.defaults(), python: python, kind: "cpu", devices: []int{0}}
	if v := p.probe(context.Background()); v.status != "" {
		b.Fatalf("%s: %s (apt-get install python3-torch)", v.reason, v.msg)
	}
	for _, c := range []*check{gptCheck, resnetCheck} {
		b.Run(c.spec.Name, func(b *testing.B) {
			env := &benchmarks.Env{Settings: func(v any) error {
				s := v.(*Settings)
				s.Python, s.Ranks, s.Threads = python, 1, 1
				return nil
			}}
			for range b.N {
				r := c.Run(context.Background(), env)
				if r.Status != benchmarks.StatusPass {
					b.Fatalf("%s %s: %s", r.Status, r.Reason, r.Message)
				}
				for _, v := range r.Values {
					switch v.Name {
					case StepMetric:
						b.ReportMetric(v.Value, "step_ms")
					case "tokens_per_s", "images_per_s":
						b.ReportMetric(v.Value, v.Name)
					}
				}
			}
		})
	}
}
