package decide

import (
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
)

func res(check string, st benchmarks.Status, reason, device string) benchmarks.Result {
	return benchmarks.Result{Check: check, Status: st, Reason: reason, Device: device}
}

// TestPlanDrain is the drain rule as a table: a check named in vigil's
// reason is lifted only by a run that ran it and saw it pass on the
// device the reason names.
func TestPlanDrain(t *testing.T) {
	pass, fail, unknown := benchmarks.StatusPass, benchmarks.StatusFail, benchmarks.StatusUnknown
	known := func(n string) bool { return n != "removed" }
	tests := []struct {
		name       string
		old        string
		results    []benchmarks.Result
		budget     bool
		devices    []int
		wantReason string
		wantFailed bool
		wantLifted []string
		wantKept   []string // substrings of Why, in order
	}{
		{name: "clean node, clean run", results: []benchmarks.Result{res("disk", pass, "", "")}},
		{name: "a failure drains", results: []benchmarks.Result{res("disk", fail, "DiskSlow", "/scratch"), res("gemm", pass, "", "")},
			wantReason: "vigil: disk DiskSlow /scratch", wantFailed: true},
		{name: "every failure is named", results: []benchmarks.Result{res("gemm", fail, "GEMMBelowThreshold", "gpu3"), res("disk", fail, "DiskSlow", "")},
			wantReason: "vigil: gemm GEMMBelowThreshold gpu3 +disk:DiskSlow", wantFailed: true},
		{name: "the named check passed: lifted", old: "vigil: disk DiskSlow", results: []benchmarks.Result{res("disk", pass, "", "")},
			wantLifted: []string{"disk"}},
		{name: "the named check not run: kept", old: "vigil: disk DiskSlow", results: []benchmarks.Result{res("ecc", pass, "", "")},
			wantReason: "vigil: disk DiskSlow", wantKept: []string{"disk not run by the epilog"}},
		{name: "nothing ran: kept", old: "vigil: disk DiskSlow",
			wantReason: "vigil: disk DiskSlow", wantKept: []string{"disk not run"}},
		{name: "unknown never lifts", old: "vigil: gemm GEMMBelowThreshold gpu3", results: []benchmarks.Result{res("gemm", unknown, "LibraryMissing", "")},
			wantReason: "vigil: gemm GEMMBelowThreshold gpu3", wantKept: []string{"unknown: LibraryMissing"}},
		{name: "a removed check stays", old: "vigil: removed Broken", results: []benchmarks.Result{res("disk", pass, "", "")},
			wantReason: "vigil: removed Broken", wantKept: []string{"not a check of this vigil build"}},
		{name: "ran on other devices: kept", old: "vigil: gemm GEMMBelowThreshold gpu3", devices: []int{0, 1},
			results: []benchmarks.Result{res("gemm", pass, "", "")}, wantReason: "vigil: gemm GEMMBelowThreshold gpu3",
			wantKept: []string{"ran on the job's devices [0 1] only, not on gpu3"}},
		{name: "ran on the named device: lifted", old: "vigil: gemm GEMMBelowThreshold gpu3", devices: []int{3},
			results: []benchmarks.Result{res("gemm", pass, "", "")}, wantLifted: []string{"gemm"}},
		{name: "a node-level device is covered by any run", old: "vigil: disk DiskSlow /scratch", devices: []int{0},
			results: []benchmarks.Result{res("disk", pass, "", "")}, wantLifted: []string{"disk"}},
		{name: "several named, one lifted: the reason names the rest", old: "vigil: gemm GEMMBelowThreshold gpu3 +disk:DiskSlow",
			results: []benchmarks.Result{res("disk", pass, "", "")}, wantReason: "vigil: gemm GEMMBelowThreshold gpu3",
			wantLifted: []string{"disk"}, wantKept: []string{"gemm not run"}},
		{name: "several named, all lifted", old: "vigil: gemm GEMMBelowThreshold gpu3 +disk:DiskSlow",
			results: []benchmarks.Result{res("disk", pass, "", ""), res("gemm", pass, "", "")}, wantLifted: []string{"gemm", "disk"}},
		{name: "a new failure first, the old kept after it", old: "vigil: gemm GEMMBelowThreshold gpu3",
			results:    []benchmarks.Result{res("disk", fail, "DiskSlow", "")},
			wantReason: "vigil: disk DiskSlow +gemm:GEMMBelowThreshold@gpu3", wantFailed: true, wantKept: []string{"gemm not run"}},
		{name: "failing again replaces the old entry", old: "vigil: gemm GEMMBelowThreshold gpu3",
			results: []benchmarks.Result{res("gemm", fail, "GEMMWrongResult", "gpu1")}, wantReason: "vigil: gemm GEMMWrongResult gpu1", wantFailed: true},
		{name: "budget expiry drains", results: []benchmarks.Result{res("disk", pass, "", "")}, budget: true,
			wantReason: "vigil: budget BudgetExpired", wantFailed: true},
		{name: "a run inside its budget lifts budget", old: "vigil: budget BudgetExpired",
			results: []benchmarks.Result{res("disk", pass, "", "")}, wantLifted: []string{"budget"}},
		{name: "budget out again keeps it", old: "vigil: budget BudgetExpired", budget: true,
			wantReason: "vigil: budget BudgetExpired", wantFailed: true},
		{name: "someone else's words are never checks", old: "vigil: disk DiskSlow see ticket 42",
			results: []benchmarks.Result{res("disk", pass, "", "")}, wantLifted: []string{"disk"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := runScope{Results: tt.results, BudgetExpired: tt.budget, Devices: tt.devices, Who: "the epilog", Registered: known}
			p := planDrain(tt.old, s)
			if p.Reason != tt.wantReason || p.Failed != tt.wantFailed {
				t.Errorf("reason %q failed %v, want %q %v", p.Reason, p.Failed, tt.wantReason, tt.wantFailed)
			}
			if !slices.Equal(p.Lifted, tt.wantLifted) {
				t.Errorf("lifted %v, want %v", p.Lifted, tt.wantLifted)
			}
			if len(p.Kept) != len(tt.wantKept) {
				t.Fatalf("kept %+v, want %q", p.Kept, tt.wantKept)
			}
			for i, k := range p.Kept {
				if !strings.Contains(k.Why, tt.wantKept[i]) {
					t.Errorf("kept[%d] %q, want it to say %q", i, k.Why, tt.wantKept[i])
				}
			}
		})
	}
}
