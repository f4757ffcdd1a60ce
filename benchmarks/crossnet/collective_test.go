package crossnet

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
)

func TestAssignRanks(t *testing.T) {
	r := AssignRanks(map[string]int{"n3": 2, "n1": 4, "n2": 0, "n4": 1})
	if r.Total != 7 || !reflect.DeepEqual(r.First, map[string]int{"n1": 0, "n3": 4, "n4": 6}) {
		t.Errorf("%+v", r)
	}
}

func TestCollectiveVerdicts(t *testing.T) {
	roles := Roles{Total: 6, First: map[string]int{"n1": 0, "n2": 2, "n3": 4}}
	joined := func(reason string) bool { return reason == "MultinodeHung" }
	results := map[string]*benchmarks.Result{
		"n1": {Status: benchmarks.StatusUnknown, Reason: "MultinodeHung", Message: "init over 6 ranks did not finish"},
		"n2": {Status: benchmarks.StatusUnknown, Reason: "LibraryMissing", Message: "libnccl.so.2 not found"},
		"n4": {Status: benchmarks.StatusPass},
	}
	got := CollectiveVerdicts("x", roles, results, joined)
	if v := got["n1"]; v.Status != benchmarks.StatusUnknown ||
		v.Message != "init over 6 ranks did not finish; never joined: n2 (LibraryMissing), n3 (no result)" {
		t.Errorf("n1: %+v", v)
	}
	if v := got["n2"]; v.Reason != "LibraryMissing" {
		t.Errorf("n2: %+v", v)
	}
	if v := got["n4"]; v.Reason != ReasonNoRanks || v.Status != benchmarks.StatusUnknown {
		t.Errorf("n4 brings no rank: %+v", v)
	}
	if _, ok := got["n3"]; ok {
		t.Error("a verdict for a node without a result")
	}
	results["n2"] = &benchmarks.Result{Status: benchmarks.StatusFail, Reason: "AllReduceBelowThreshold"}
	results["n3"] = &benchmarks.Result{Status: benchmarks.StatusPass}
	got = CollectiveVerdicts("x", roles, results, joined)
	if v := got["n1"]; strings.Contains(v.Message, "never joined") {
		t.Errorf("everyone joined: %+v", v)
	}
	if v := got["n2"]; v.Status != benchmarks.StatusFail {
		t.Errorf("a node's own fail stays its own: %+v", v)
	}
}

// fakeCollective is a benchmarks.CollectiveCheck for the phase's rounds: every node has
// gpus[node] ranks; a node in broken never joins (LibraryMissing); the
// others pass when every taking node joined, else hang.
type fakeCollective struct {
	check
	gpus   map[string]int
	broken string
	setups chan string
}

func (f *fakeCollective) Ranks(env *benchmarks.Env) int { return f.gpus[env.Node] }
func (f *fakeCollective) Setup(env *benchmarks.Env) ([]byte, error) {
	f.setups <- env.Node
	return []byte("id-of-" + env.Node), nil
}
func (f *fakeCollective) RunRanks(ctx context.Context, env *benchmarks.Env, setup []byte, first, total int) benchmarks.Result {
	if env.Node == f.broken {
		return benchmarks.Result{Check: f.desc.Name, Status: benchmarks.StatusUnknown, Reason: "LibraryMissing", Message: "no NCCL"}
	}
	msg := fmt.Sprintf("%s ranks %d-%d of %d", setup, first, first+f.gpus[env.Node]-1, total)
	if f.broken != "" {
		<-ctx.Done()
		return benchmarks.Result{Check: f.desc.Name, Status: benchmarks.StatusUnknown, Reason: benchmarks.ReasonUndecided, Message: "hung: " + msg}
	}
	return benchmarks.Result{Check: f.desc.Name, Status: benchmarks.StatusPass, Message: msg,
		Values: []benchmarks.Value{{Name: "busbw_gbps", Value: 1}}}
}

// theFake is registered once, for every run of the tests.
var theFake = &fakeCollective{check: *newCheck(benchmarks.Descriptor{Name: "tx-collective", Description: "a test collective"}), setups: make(chan string, 8)}

func init() { benchmarks.Register(theFake) }

func TestPhaseCollective(t *testing.T) {
	names, _ := rdvtest.Cluster(4)
	f := theFake
	f.gpus = map[string]int{names[0]: 2, names[1]: 0, names[2]: 4, names[3]: 1}
	for _, broken := range []string{"", names[3]} {
		f.broken = broken
		got := jobWith(t, 4, []string{Connect, f.desc.Name}, func(p *Phase) { p.Timeouts = map[string]time.Duration{f.desc.Name: 2 * time.Second} })
		if s := <-f.setups; s != names[0] {
			t.Errorf("setup on %s, want the coordinator", s)
		}
		for n, rs := range got {
			if len(rs) != 2 || rs[0].Check != Connect || rs[1].Check != f.desc.Name {
				t.Fatalf("%s: %+v", n, rs)
			}
			r := rs[1]
			want := map[string]string{names[0]: "id-of-sim0001 ranks 0-1 of 7", names[2]: "id-of-sim0001 ranks 2-5 of 7",
				names[3]: "id-of-sim0001 ranks 6-6 of 7"}[n]
			switch {
			case n == names[1]:
				if r.Reason != ReasonNoRanks {
					t.Errorf("%s: %+v", n, r)
				}
			case broken == "":
				if r.Status != benchmarks.StatusPass || r.Message != want || len(r.Values) != 1 {
					t.Errorf("%s: %+v, want %q", n, r, want)
				}
			case n == broken:
				if r.Reason != "LibraryMissing" {
					t.Errorf("%s: %+v", n, r)
				}
			default:
				if r.Status != benchmarks.StatusUnknown || !strings.HasSuffix(r.Message, "never joined: "+broken+" (LibraryMissing)") {
					t.Errorf("%s: %+v", n, r)
				}
			}
		}
	}
}
