package model

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// steps makes n steps of a run of world ranks whose loss falls from 3 to
// 2, each rank computing in ms[r] milliseconds.
func steps(n int, ms []float64) []step {
	var out []step
	for i := 1; i <= n; i++ {
		l := 3 - float64(i)/float64(n)
		s := step{Step: i, MS: 10, Loss: l}
		for range ms {
			s.Losses = append(s.Losses, l)
		}
		s.Computes = append(s.Computes, ms...)
		out = append(out, s)
	}
	return out
}

func ranks(first, n, stepped int) []*rank {
	var out []*rank
	for i := range n {
		out = append(out, &rank{Rank: first + i, Label: "gpu" + string(rune('0'+i)), Name: "NVIDIA H200", Started: true,
			Computed: stepped, Stepped: stepped, Done: true, Exit: 0})
	}
	return out
}

func TestJudge(t *testing.T) {
	s := gptCheck.defaults()
	s.StepTimeout = 30 * time.Second
	alone := judging{Model: "gpt", Unit: "tokens/s", Settings: s, Alone: true}
	multi := alone
	multi.Alone, multi.Where = false, "another node"
	for _, tc := range []struct {
		name   string
		j      judging
		o      func() outcome
		status benchmarks.Status
		reason string
		device string
		msg    string
	}{
		{"healthy", alone, func() outcome { return outcome{Ranks: ranks(0, 2, 40), Steps: steps(40, []float64{5, 5})} },
			benchmarks.StatusPass, "", "", "40 steps on 2 ranks"},
		{"a slow device here", alone, func() outcome { return outcome{Ranks: ranks(0, 2, 40), Steps: steps(40, []float64{5, 12})} },
			benchmarks.StatusFail, ReasonModelStepSlow, "gpu1", "12.0 ms"},
		{"a slow rank on another node", multi, func() outcome { return outcome{Ranks: ranks(0, 2, 40), Steps: steps(40, []float64{5, 5, 5, 30})} },
			benchmarks.StatusPass, "", "", ""},
		{"this node's rank slow among four", multi, func() outcome { return outcome{Ranks: ranks(2, 2, 40), Steps: steps(40, []float64{5, 5, 5, 30})} },
			benchmarks.StatusFail, ReasonModelStepSlow, "gpu1", "rank 3"},
		{"above the model's floor", func() judging {
			j := alone
			j.Settings.Thresholds = devcheck.Thresholds{"H200": {StepMetric: 8}}
			return j
		}(),
			func() outcome { return outcome{Ranks: ranks(0, 2, 40), Steps: steps(40, []float64{5, 5})} },
			benchmarks.StatusFail, ReasonModelStepSlow, "", "above H200's 8 ms"},
		{"the whole run above the floor, many nodes", func() judging {
			j := multi
			j.Settings.Thresholds = devcheck.Thresholds{"H200": {StepMetric: 8}}
			return j
		}(),
			func() outcome { return outcome{Ranks: ranks(0, 2, 40), Steps: steps(40, []float64{5, 5, 5, 5})} },
			benchmarks.StatusUnknown, ReasonModelStepSlow, "", "no rank stands out"},
		{"NaN on a rank here", alone, func() outcome {
			o := outcome{Ranks: ranks(0, 2, 7), Steps: steps(7, []float64{5, 5})}
			o.Steps[6].Losses[1] = math.NaN()
			return o
		}, benchmarks.StatusFail, ReasonModelLossAbnormal, "gpu1", "at step 7"},
		{"NaN on another node's rank", multi, func() outcome {
			o := outcome{Ranks: ranks(0, 2, 7), Steps: steps(7, []float64{5, 5, 5})}
			o.Steps[6].Losses[2] = math.Inf(1)
			return o
		}, benchmarks.StatusPass, "", "", "rank 2 on another node"},
		{"a rank silent while computing", alone, func() outcome {
			o := outcome{Ranks: ranks(0, 2, 5), Steps: steps(5, []float64{5, 5})}
			o.Ranks[0].Computed, o.Ranks[0].Done, o.Ranks[0].Silent = 6, false, true
			o.Ranks[1].Done, o.Ranks[1].Silent = false, true
			return o
		}, benchmarks.StatusFail, ReasonModelHang, "gpu1", "after step 5"},
		{"waiting for another node", multi, func() outcome {
			o := outcome{Ranks: ranks(0, 2, 5), Steps: steps(5, []float64{5, 5, 5})}
			for _, r := range o.Ranks {
				r.Computed, r.Done, r.Silent = 6, false, true
			}
			return o
		}, benchmarks.StatusUnknown, ReasonModelPeerWait, "", "step 6"},
		{"every rank stuck in the node's collective", alone, func() outcome {
			o := outcome{Ranks: ranks(0, 2, 5), Steps: steps(5, []float64{5, 5})}
			for _, r := range o.Ranks {
				r.Computed, r.Done, r.Silent = 6, false, true
			}
			return o
		}, benchmarks.StatusFail, ReasonModelHang, "", "every rank stopped"},
		{"the loss does not fall", alone, func() outcome {
			o := outcome{Ranks: ranks(0, 1, 40), Steps: steps(40, []float64{5})}
			for i := range o.Steps {
				o.Steps[i].Loss = 3
			}
			return o
		}, benchmarks.StatusFail, ReasonModelLossAbnormal, "", "did not fall"},
		{"off the reference", func() judging {
			j := alone
			j.Reference, j.RefName = []float64{2.9, 2.7, 2.5, 2.3}, "the ref"
			return j
		}(),
			func() outcome { return outcome{Ranks: ranks(0, 1, 40), Steps: steps(40, []float64{5})} },
			benchmarks.StatusPass, "", "", "(the ref 2.300)"},
		{"far off the reference", func() judging {
			j := alone
			j.Reference, j.RefName = []float64{2.9, 2.0, 1.5, 1.0}, "the ref"
			return j
		}(),
			func() outcome { return outcome{Ranks: ranks(0, 1, 40), Steps: steps(40, []float64{5})} },
			benchmarks.StatusFail, ReasonModelLossAbnormal, "", "at step 20, the ref 2.0000"},
		{"one rank's exception", alone, func() outcome {
			o := outcome{Ranks: ranks(0, 2, 3), Steps: steps(3, []float64{5, 5})}
			o.Ranks[1].Exit, o.Ranks[1].Stderr = 1, []string{"Traceback", "RuntimeError: CUDA error: uncorrectable ECC error encountered"}
			o.Ranks[0].Exit, o.Ranks[0].Stderr = PeerLostExit, []string{"peer lost"}
			return o
		}, benchmarks.StatusFail, ReasonModelError, "gpu1", "uncorrectable ECC"},
		{"only a lost peer", multi, func() outcome {
			o := outcome{Ranks: ranks(0, 1, 3), Steps: steps(3, []float64{5, 5})}
			o.Ranks[0].Exit, o.Ranks[0].Stderr = PeerLostExit, []string{"peer lost in all_gather: Connection closed by peer"}
			return o
		}, benchmarks.StatusUnknown, ReasonModelPeerLost, "", "Connection closed"},
		{"failed before meeting", multi, func() outcome {
			o := outcome{Ranks: ranks(0, 1, 0)}
			o.Ranks[0].Started, o.Ranks[0].Exit, o.Ranks[0].Stderr = false, 1, []string{"RuntimeError: connect() timed out"}
			return o
		}, benchmarks.StatusUnknown, ReasonModelNotStarted, "", "before the first step"},
		{"rank 0 could not listen, alone", alone, func() outcome {
			o := outcome{Ranks: ranks(0, 2, 0)}
			for _, r := range o.Ranks {
				r.Started, r.Done, r.Exit = false, false, -1
			}
			o.Ranks[0].Exit, o.Ranks[0].Stderr = 1, []string{"RuntimeError: The server socket has failed to bind to 0.0.0.0:36495 (errno: 98 - Address already in use)."}
			return o
		}, benchmarks.StatusUnknown, ReasonModelNotStarted, "", "Address already in use"},
		{"budget out while training", alone, func() outcome {
			o := outcome{Ranks: ranks(0, 1, 12), Steps: steps(12, []float64{5}), Expired: true}
			o.Ranks[0].Done = false
			return o
		}, benchmarks.StatusUnknown, ReasonModelUnfinished, "", "at step 12 of 40"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.j.judge(tc.o())
			if v.status != tc.status || v.reason != tc.reason || v.device != tc.device || !strings.Contains(v.msg, tc.msg) {
				t.Errorf("got %s %s %q: %s\nwant %s %s %q: …%s…", v.status, v.reason, v.device, v.msg, tc.status, tc.reason, tc.device, tc.msg)
			}
		})
	}
}

func TestJudgeJob(t *testing.T) {
	errRes := func(label, e string) *benchmarks.Result {
		return &benchmarks.Result{Check: GPTMultinode, Status: benchmarks.StatusFail, Reason: ReasonModelError, Device: label,
			Message: label + " (rank 0) failed at step 1: " + e}
	}
	pass := &benchmarks.Result{Check: GPTMultinode, Status: benchmarks.StatusPass}
	for _, tc := range []struct {
		name    string
		results map[string]*benchmarks.Result
		want    map[string]string // node → reason after
	}{
		{"the same error everywhere", map[string]*benchmarks.Result{"n1": errRes("cpu0", "ValueError: x"), "n2": errRes("cpu0", "ValueError: x")},
			map[string]string{"n1": ReasonModelScriptError, "n2": ReasonModelScriptError}},
		{"one node's own error", map[string]*benchmarks.Result{"n1": errRes("gpu1", "RuntimeError: CUDA error"), "n2": pass},
			map[string]string{"n1": ReasonModelError, "n2": ""}},
		{"different errors", map[string]*benchmarks.Result{"n1": errRes("gpu1", "RuntimeError: CUDA error"), "n2": errRes("gpu0", "ValueError: x")},
			map[string]string{"n1": ReasonModelError, "n2": ReasonModelError}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gptMultinode.JudgeJob(tc.results)
			for n, want := range tc.want {
				if got := tc.results[n].Reason; got != want {
					t.Errorf("%s: %s (%s), want %s", n, got, tc.results[n].Message, want)
				}
			}
		})
	}
}
