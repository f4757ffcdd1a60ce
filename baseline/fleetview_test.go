package baseline

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/report"
)

// slots is how many 6-hour slots the synthetic fleet runs: 10 days.
const slots = 40

// plantFleet writes the synthetic fleet: 40 nodes, healthy but for the
// planted drains, each on a node of its own:
//
//   - false drains: gemm drains n02, n03 and n04, and passes its re-test
//     with no remedy (n04 after a health run that does not run gemm), as
//     does disk on n34, a node of an older vigil without components;
//   - true drains: gemm fails again on n05 and on n34 (a GPU without
//     identity, followed by node and name), ecc after a GPU reset on n06,
//     nvlink run after run on n31 (one episode, no lemon), gpu-count on n35
//     for the node;
//   - a GPU that moves: GPU-n10-3 fails ecc in n10, is swapped with n20's
//     gpu5 and fails ecc in n20 (confirmed, a lemon: 2 nodes), while the
//     GPU that took its place in n10 passes;
//   - a lemon by episodes: n30's gpu7 fails xid three times, each time
//     reset and passing again (three unresolved drains);
//   - unresolved: gemm on n07 passes after a reboot; gemm on n08 drains in
//     the last slot;
//   - no drains: the guard holds n32's, n33's is a dry run, n36's scontrol
//     refused.
func plantFleet() *synth {
	s := &synth{rng: rand.New(rand.NewPCG(7, 11))}
	boxes := map[string]*box{}
	for i := 1; i <= 40; i++ {
		b := newBox(fmt.Sprintf("n%02d", i))
		boxes[b.name] = b
	}
	planted := map[string]func(*synth, *box, map[string]*box){
		"n02": falseDrain, "n03": falseDrain, "n04": falseDrainLater, "n05": repeatFailure, "n06": failsAfterReset,
		"n07": passesAfterReboot, "n08": drainedLast, "n10": mover, "n20": nil, "n30": lemonByEpisodes,
		"n31": persistentFailure, "n32": guarded, "n33": dryRun, "n34": olderVigil, "n35": nodeLevel, "n36": refused,
	}
	for i := 1; i <= 40; i++ {
		name := fmt.Sprintf("n%02d", i)
		plant, ok := planted[name]
		switch {
		case !ok:
			s.prologs(boxes[name], 0, slots)
		case plant != nil:
			plant(s, boxes[name], boxes)
		}
	}
	return s
}

var (
	gemm2 = fault{"gemm", "gpu2", "GEMMBelowThreshold"}
	gemm1 = fault{"gemm", "gpu1", "GEMMBelowThreshold"}
)

// falseDrain: gemm drains in slot 5, and the admin's manual re-test passes.
func falseDrain(s *synth, b *box, _ map[string]*box) {
	s.prologs(b, 0, slots, 5)
	s.add(b, "prolog", at(5, 0), prologChecks, drain(gemm2), gemm2)
	s.add(b, "health", at(5, 30), []string{"gemm"}, resume())
}

// falseDrainLater: as falseDrain, with a health run between that does not
// run gemm (no re-test) and a prolog after the admin's resume that passes.
func falseDrainLater(s *synth, b *box, _ map[string]*box) {
	s.prologs(b, 0, slots, 5, 6)
	s.add(b, "prolog", at(5, 0), prologChecks, drain(gemm2), gemm2)
	s.add(b, "health", at(5, 30), healthChecks, stay(gemm2))
}

// repeatFailure: gemm drains, fails its re-test, and the node stays out.
func repeatFailure(s *synth, b *box, _ map[string]*box) {
	s.prologs(b, 0, 5)
	s.add(b, "prolog", at(5, 0), prologChecks, drain(gemm1), gemm1)
	s.add(b, "health", at(5, 30), []string{"gemm"}, drain(gemm1), gemm1)
	for slot := 6; slot < slots; slot++ {
		s.add(b, "health", at(slot, 0), healthChecks, stay(gemm1))
	}
}

// failsAfterReset: ecc drains, the GPU is reset in the same run, and ecc
// fails again; the node is taken out of the fleet.
func failsAfterReset(s *synth, b *box, _ map[string]*box) {
	f := fault{"ecc", "gpu4", "ECCUncorrectable"}
	s.prologs(b, 0, 5)
	s.add(b, "prolog", at(5, 0), prologChecks, withRemedy(drain(f), "reset", "gpu4", at(5, 2)), f)
	s.add(b, "health", at(5, 30), healthChecks, drain(f), f)
}

// passesAfterReboot: gemm drains, the node is rebooted, gemm passes.
func passesAfterReboot(s *synth, b *box, _ map[string]*box) {
	f := fault{"gemm", "gpu6", "GEMMBelowThreshold"}
	s.prologs(b, 0, slots, 5)
	s.add(b, "prolog", at(5, 0), prologChecks, drain(f), f)
	s.add(b, "health", at(5, 20), healthChecks, withRemedy(stay(f), "reboot", "", at(5, 21)))
	s.add(b, "health", at(5, 40), []string{"gemm"}, resume())
}

// drainedLast: gemm drains in the last slot; nothing follows.
func drainedLast(s *synth, b *box, _ map[string]*box) {
	f := fault{"gemm", "gpu0", "GEMMBelowThreshold"}
	s.prologs(b, 0, slots-1)
	s.add(b, "prolog", at(slots-1, 0), prologChecks, drain(f), f)
}

// mover: n10's gpu3 fails ecc in slot 10 and n10 is out in slot 11; in
// slot 12 the GPU is swapped with n20's gpu5 (n20 is out for it in slots
// 12 and 13); it fails ecc in n20 at once and stays failing there; the GPU
// it swapped with passes in n10.
func mover(s *synth, n10 *box, boxes map[string]*box) {
	n20 := boxes["n20"]
	f10, f20 := fault{"ecc", "gpu3", "ECCUncorrectable"}, fault{"ecc", "gpu5", "ECCUncorrectable"}
	s.prologs(n10, 0, 10)
	s.prologs(n20, 0, 12)
	s.add(n10, "prolog", at(10, 0), prologChecks, drain(f10), f10)
	n10.gpus[3], n20.gpus[5] = n20.gpus[5], n10.gpus[3]
	s.prologs(n10, 12, slots)
	s.add(n20, "prolog", at(14, 0), prologChecks, drain(f20), f20)
	for slot := 15; slot < slots; slot++ {
		s.add(n20, "health", at(slot, 0), healthChecks, drain(f20), f20)
	}
}

// lemonByEpisodes: n30's gpu7 fails xid in slots 5, 15 and 25; each time
// it is reset, passes and the node is resumed.
func lemonByEpisodes(s *synth, b *box, _ map[string]*box) {
	f := fault{"xid", "gpu7", "XID79"}
	s.prologs(b, 0, slots, 5, 15, 25)
	for _, slot := range []int{5, 15, 25} {
		s.add(b, "prolog", at(slot, 0), prologChecks, drain(f), f)
		s.add(b, "health", at(slot, 20), []string{"ecc"}, withRemedy(stay(f), "reset", "gpu7", at(slot, 21)))
		s.add(b, "health", at(slot, 40), healthChecks, resume())
	}
}

// persistentFailure: nvlink fails in every run from slot 5 to 9, then the
// node leaves the fleet: one episode.
func persistentFailure(s *synth, b *box, _ map[string]*box) {
	f := fault{"nvlink", "gpu0", "NVLinkDown"}
	s.prologs(b, 0, 5)
	s.add(b, "prolog", at(5, 0), prologChecks, drain(f), f)
	for slot := 6; slot < 10; slot++ {
		s.add(b, "health", at(slot, 0), healthChecks, drain(f), f)
	}
}

// guarded: gemm fails but the guard holds the drain.
func guarded(s *synth, b *box, _ map[string]*box) {
	s.prologs(b, 0, slots, 5)
	r := s.add(b, "prolog", at(5, 0), prologChecks, none(), gemm1)
	r.Guarded = []report.Guarded{{Check: "gemm", Drained: 9, Nodes: 40, MaxShare: 0.2}}
}

// dryRun: a dry run that would drain.
func dryRun(s *synth, b *box, _ map[string]*box) {
	s.prologs(b, 0, slots, 5)
	a := drain(gemm1)
	a.Done = false
	s.add(b, "prolog", at(5, 0), prologChecks, a, gemm1).DryRun = true
}

// olderVigil: a node whose reports name no components: disk drains and
// passes its re-test; later gemm drains gpu2 and fails again.
func olderVigil(s *synth, b *box, _ map[string]*box) {
	b.noIDs = true
	disk := fault{"disk", "/scratch", "DiskSlow"}
	s.prologs(b, 0, slots, 5, 8)
	s.add(b, "prolog", at(5, 0), prologChecks, drain(disk), disk)
	s.add(b, "health", at(5, 30), healthChecks, resume())
	s.add(b, "prolog", at(8, 0), prologChecks, drain(gemm2), gemm2)
	s.add(b, "health", at(8, 30), []string{"gemm"}, drain(gemm2), gemm2)
}

// nodeLevel: gpu-count drains the node (no device) and fails again.
func nodeLevel(s *synth, b *box, _ map[string]*box) {
	f := fault{"gpu-count", "", "GPUCountMismatch"}
	s.prologs(b, 0, 5)
	s.add(b, "prolog", at(5, 0), prologChecks, drain(f), f)
	s.add(b, "health", at(5, 30), healthChecks, drain(f), f)
}

// refused: scontrol refused the drain.
func refused(s *synth, b *box, _ map[string]*box) {
	s.prologs(b, 0, slots, 5)
	a := drain(gemm1)
	a.Done, a.Error = false, "scontrol: connection refused"
	s.add(b, "prolog", at(5, 0), prologChecks, a, gemm1)
}

// TestFleetViewSyntheticFleet: on the synthetic fleet (read back from
// JSON) the fleet view finds exactly the planted drains, classifies each
// as planted, computes every check's precision, and names exactly the two
// lemons; the GPU that moved keeps its history across the swap.
func TestFleetViewSyntheticFleet(t *testing.T) {
	reps, err := readBack(plantFleet().reps)
	if err != nil {
		t.Fatal(err)
	}
	groups, _ := Groups([]Sourced{{Source: Source{Model: "H100"}, Reports: reps}})
	Analyze(groups)
	v := BuildView(reps, DefaultLemonRule, Proposals(groups))
	if v.Nodes != 40 || v.Reports != len(reps) || len(reps) < 1500 {
		t.Fatalf("%d reports of %d nodes", v.Reports, v.Nodes)
	}
	if v.Identified != 39*9 { // n34 names none; the swapped GPUs are no new parts
		t.Errorf("identified %d components", v.Identified)
	}
	want := []CheckPrecision{
		{Check: "disk", Drains: 1, LikelyFalse: 1},
		{Check: "ecc", Drains: 3, Confirmed: 3},
		{Check: "gemm", Drains: 7, Confirmed: 2, LikelyFalse: 3, Unresolved: 2},
		{Check: "gpu-count", Drains: 1, Confirmed: 1},
		{Check: "nvlink", Drains: 1, Confirmed: 1},
		{Check: "xid", Drains: 3, Unresolved: 3},
	}
	got := slices.Clone(v.Checks)
	var gemmThresholds []string
	for i := range got {
		if got[i].Check == "gemm" {
			gemmThresholds = got[i].Thresholds
		}
		got[i].Thresholds = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("checks:\n got %+v\nwant %+v", got, want)
	}
	if len(gemmThresholds) != 1 || !strings.HasPrefix(gemmThresholds[0], "H100 tflops_bf16 >= ") || !strings.HasSuffix(gemmThresholds[0], "(now >= 600)") {
		t.Errorf("gemm thresholds %q", gemmThresholds)
	}
	for check, wantP := range map[string]float64{"gemm": 0.4, "ecc": 1, "disk": 0} {
		i := slices.IndexFunc(v.Checks, func(c CheckPrecision) bool { return c.Check == check })
		if p, ok := v.Checks[i].Precision(); !ok || p != wantP {
			t.Errorf("%s precision %v %v, want %v", check, p, ok, wantP)
		}
	}
	if _, ok := v.Checks[5].Precision(); ok {
		t.Error("xid: no drain resolved, yet a precision")
	}
	checkDrains(t, v)
	checkLemons(t, v)
}

// checkDrains holds each drain's outcome against the plan.
func checkDrains(t *testing.T, v *View) {
	t.Helper()
	want := map[string]Outcome{
		"n02 gemm gpu2": LikelyFalse, "n03 gemm gpu2": LikelyFalse, "n04 gemm gpu2": LikelyFalse, "n34 disk /scratch": LikelyFalse,
		"n05 gemm gpu1": Confirmed, "n34 gemm gpu2": Confirmed, "n06 ecc gpu4": Confirmed, "n31 nvlink gpu0": Confirmed,
		"n35 gpu-count ": Confirmed, "n10 ecc gpu3": Confirmed, "n20 ecc gpu5": Confirmed,
		"n30 xid gpu7": Unresolved, "n07 gemm gpu6": Unresolved, "n08 gemm gpu0": Unresolved,
	}
	seen := map[string]int{}
	for _, d := range v.Drains {
		k := d.Node + " " + d.Check + " " + d.Device
		seen[k]++
		if w, ok := want[k]; !ok || d.Outcome != w {
			t.Errorf("drain %s at %s: %s (%s), want %q", k, stamp(d.At), d.Outcome, d.Why, w)
		}
	}
	for k := range want {
		if n := seen[k]; n != 1 && !(k == "n30 xid gpu7" && n == 3) {
			t.Errorf("drain %s seen %d times", k, n)
		}
	}
	for _, d := range v.Drains {
		switch k := d.Node + " " + d.Check; k {
		case "n10 ecc":
			if d.Component != "gpu:GPU-n10-3" || !strings.Contains(d.Why, "(n20 ") || !strings.Contains(d.Why, "after moved from n10") {
				t.Errorf("the mover's drain in n10: %s %s", d.Component, d.Why)
			}
		case "n06 ecc":
			if !strings.Contains(d.Why, "after reset") {
				t.Errorf("n06: %s", d.Why)
			}
		case "n34 gemm", "n34 disk", "n35 gpu-count":
			if d.Component != "" {
				t.Errorf("%s has an identity: %s", k, d.Component)
			}
		}
	}
}

// checkLemons holds the lemon list and the mover's history against the plan.
func checkLemons(t *testing.T, v *View) {
	t.Helper()
	var lemons []string
	for _, h := range v.Lemons {
		lemons = append(lemons, h.ID+": "+h.Lemon)
	}
	want := []string{
		"gpu:GPU-n10-3: failed in 2 nodes (n10, n20)",
		"gpu:GPU-n30-7: 3 failure episodes within 30d from 2026-11-02 06:00:00",
	}
	if !slices.Equal(lemons, want) {
		t.Errorf("lemons:\n got %q\nwant %q", lemons, want)
	}
	var ids []string
	for _, h := range v.Histories {
		ids = append(ids, h.ID)
		if h.ID == "gpu:GPU-n10-3" {
			if !slices.Equal(h.Nodes, []string{"n10", "n20"}) || h.Drains != 2 || len(h.Episodes) != 2 || h.FailedRuns != 1+26 {
				t.Errorf("the mover: nodes %v, drains %d, episodes %v, failed runs %d", h.Nodes, h.Drains, h.Episodes, h.FailedRuns)
			}
			moved := slices.IndexFunc(h.Events, func(e Event) bool { return e.Kind == EventMoved })
			if moved < 0 || h.Events[moved].Detail != "n10 gpu3" || h.Events[moved].Name != "gpu5" || h.Events[moved].Node != "n20" {
				t.Errorf("the mover's move: %+v", h.Events)
			}
		}
	}
	wantIDs := []string{"gpu:GPU-n02-2", "gpu:GPU-n03-2", "gpu:GPU-n04-2", "gpu:GPU-n05-1", "gpu:GPU-n06-4", "gpu:GPU-n07-6",
		"gpu:GPU-n08-0", "gpu:GPU-n10-3", "gpu:GPU-n30-7", "gpu:GPU-n31-0", "gpu:GPU-n32-1", "gpu:GPU-n33-1", "gpu:GPU-n36-1"}
	if !slices.Equal(ids, wantIDs) {
		t.Errorf("histories:\n got %q\nwant %q", ids, wantIDs)
	}
}
