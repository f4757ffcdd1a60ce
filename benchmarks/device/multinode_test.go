package device

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

func TestMultinodeRoleCheck(t *testing.T) {
	id := []byte{1, 2, 3, 4}
	tests := []struct {
		role MultinodeRole
		k    int
		want string
	}{
		{MultinodeRole{ID: id, NRanks: 8, FirstRank: 4}, 4, ""},
		{MultinodeRole{ID: id, NRanks: 1}, 1, "1 ranks in all: an all-reduce needs at least 2"},
		{MultinodeRole{ID: id, NRanks: 4, FirstRank: 3}, 2, "ranks 3-4 for this node's 2 GPUs do not fit in 4"},
		{MultinodeRole{ID: id, NRanks: 4, FirstRank: -1}, 1, "ranks -1--1 for this node's 1 GPU do not fit in 4"},
		{MultinodeRole{NRanks: 4}, 2, "no communicator id"},
		{MultinodeRole{ID: make([]byte, 4), NRanks: 4}, 2, "no communicator id"},
		{MultinodeRole{ID: id[:3], NRanks: 4}, 2, "communicator id of 3 bytes, want 4"},
	}
	for _, tt := range tests {
		if got := tt.role.Check(tt.k, 4, "GPU"); got != tt.want {
			t.Errorf("%+v on %d: %q, want %q", tt.role, tt.k, got, tt.want)
		}
	}
	// The role crosses the rendezvous as JSON; the id as base64.
	b, err := json.Marshal(MultinodeRole{ID: id, NRanks: 8, FirstRank: 4})
	if err != nil || string(b) != `{"id":"AQIDBA==","nranks":8,"first_rank":4}` {
		t.Errorf("json %s %v", b, err)
	}
}

func TestVerifyMultinode(t *testing.T) {
	role := MultinodeRole{NRanks: 3, FirstRank: 1}
	// Ranks 0..2 in all; this node holds ranks 1 and 2.
	all := MultinodeInputs(0, 3, 5)
	sum := make([]float32, 5)
	for _, in := range all {
		for e, v := range in {
			sum[e] += v
		}
	}
	outs := [][]float32{append([]float32(nil), sum...), append([]float32(nil), sum...)}
	if msg := VerifyMultinode(outs, role, []string{"npu0", "npu1"}); msg != "" {
		t.Errorf("right sums: %s", msg)
	}
	if mine := MultinodeInputs(1, 2, 5); mine[0][3] != all[1][3] || mine[1][4] != all[2][4] {
		t.Error("a node's inputs are not its global ranks'")
	}
	outs[1][2]++
	if msg := VerifyMultinode(outs, role, []string{"npu0", "npu1"}); msg != "all-reduce across nodes delivered wrong data: npu1 (rank 2) element 2 = 85, want 84" {
		t.Errorf("wrong sum: %q", msg)
	}
	if msg := VerifyMultinode(outs[:1], role, []string{"npu0", "npu1"}); msg != "1 verification outputs for 2 devices" {
		t.Errorf("missing output: %q", msg)
	}
}

func TestEvaluateMultinode(t *testing.T) {
	// 16 ranks, 1 GiB each in 0.1 s: algbw 10.737 GB/s, busbw × 30/16.
	ty := &devcheck.Tally{Check: "c"}
	th := Thresholds{"Ascend910B": {"busbw_gbps": 25}}
	bus := EvaluateMultinode(ty, th, 16, 1<<28, 0.1, "Ascend910B3", "NPUs")
	if want := float64(1<<30) / 0.1 / 1e9 * 30 / 16; math.Abs(bus-want) > 1e-9 {
		t.Errorf("busbw %g, want %g", bus, want)
	}
	r := ty.Result("ok")
	if r.Status != benchmarks.StatusFail || r.Reason != ReasonMultinodeBelowThreshold {
		t.Errorf("below the floor: %+v", r)
	}
	ty = &devcheck.Tally{Check: "c"}
	EvaluateMultinode(ty, Thresholds{}, 16, 1<<28, 0.1, "Ascend910B3", "NPUs")
	if r := ty.Result("ok"); r.Status != benchmarks.StatusPass || len(r.Values) != 2 {
		t.Errorf("no floor: %+v", r)
	}
}
