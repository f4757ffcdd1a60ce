package decide

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/slurm"
)

func TestGuardFor(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	g := config.Guard{MaxShare: 0.1, MinNodes: 3, Window: time.Hour}
	for _, tc := range []struct {
		name           string
		g              config.Guard
		drained, nodes int
		last           time.Time
		want           guardVerdict
	}{
		{"off", config.Guard{MaxShare: 0, MinNodes: 0, Window: time.Hour}, 100, 100, time.Time{}, guardVerdict{}},
		{"within the share", g, 10, 100, time.Time{}, guardVerdict{}},
		{"above the share, first alert", g, 11, 100, time.Time{}, guardVerdict{Active: true, Alert: true}},
		{"above the share, alert sent in the window", g, 12, 100, now.Add(-59 * time.Minute), guardVerdict{Active: true}},
		{"above the share, alert older than the window", g, 12, 100, now.Add(-time.Hour), guardVerdict{Active: true, Alert: true}},
		{"small cluster: min_nodes holds", g, 3, 4, time.Time{}, guardVerdict{}},
		{"small cluster: above min_nodes", g, 4, 4, time.Time{}, guardVerdict{Active: true, Alert: true}},
		{"share 1 never trips", config.Guard{MaxShare: 1, Window: time.Hour}, 5, 5, time.Time{}, guardVerdict{}},
		{"no nodes read", g, 5, 0, time.Time{}, guardVerdict{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := guardFor(tc.g, tc.drained, tc.nodes, tc.last, now); got != tc.want {
				t.Errorf("guardFor(%d of %d) = %+v, want %+v", tc.drained, tc.nodes, got, tc.want)
			}
		})
	}
}

func TestDrainedFor(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.Local)
	node := func(name, reason string, ago time.Duration) slurm.Node {
		n := slurm.Node{Name: name, State: "IDLE", Flags: []string{"DRAIN"}, Reason: reason}
		if ago >= 0 {
			n.ReasonTime = now.Add(-ago)
		}
		return n
	}
	fleet := []slurm.Node{
		node("n1", "vigil: gemm GEMMBelowThreshold gpu3", time.Minute),
		node("n2", "vigil: disk DiskSlow +gemm:GEMMBelowThreshold@gpu0", 30*time.Minute),
		node("n3", "vigil: gemm GEMMBelowThreshold gpu1", 2*time.Hour),           // before the window
		node("n4", "admin: gemm looks slow", time.Minute),                        // not vigil's
		node("n5", "vigil: gemm GEMMBelowThreshold", -1),                         // no time printed
		node("self", "vigil: gemm GEMMBelowThreshold gpu3", time.Minute),         // this node
		node("n6", "vigil: gemmx GEMMXBelowThreshold gpu3", time.Minute),         // another check
		node("n0", "vigil: nvml-ecc ECCUncorrectable +gemm:Failed", time.Second), // sorted first
	}
	resumed := node("n7", "vigil: gemm GEMMBelowThreshold gpu2", time.Minute) // resumed; 24.11 keeps the reason
	resumed.Flags = nil
	fleet = append(fleet, resumed)
	got := DrainedFor(fleet, "gemm", "self", now, time.Hour)
	if want := []string{"n0", "n1", "n2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("drainedFor = %v, want %v", got, want)
	}
}

func TestGuardMarks(t *testing.T) {
	t1 := time.Date(2026, 12, 1, 1, 59, 13, 0, time.UTC)
	t2 := t1.Add(time.Minute)
	c := FormatGuardMarks(map[string]time.Time{"gemm": t1, "disk": t2})
	if c != "vigil-guard: disk@2026-12-01T02:00:13Z gemm@2026-12-01T01:59:13Z" {
		t.Errorf("formatGuardMarks = %q", c)
	}
	m := GuardMarks(c)
	if !m["gemm"].Equal(t1) || !m["disk"].Equal(t2) || len(m) != 2 {
		t.Errorf("guardMarks(%q) = %v", c, m)
	}
	if GuardMarks("rack 12 firmware") != nil {
		t.Error("a foreign comment read as marks")
	}
	fleet := []slurm.Node{{Name: "a", Fields: map[string]string{"Comment": c}},
		{Name: "b", Fields: map[string]string{"Comment": FormatGuardMarks(map[string]time.Time{"gemm": t2})}}}
	if got := lastGuardAlert(fleet, "gemm"); !got.Equal(t2) {
		t.Errorf("lastGuardAlert = %v, want %v", got, t2)
	}
	if got := lastGuardAlert(fleet, "copy"); !got.IsZero() {
		t.Errorf("lastGuardAlert(copy) = %v, want zero", got)
	}
}

func TestGuardMessage(t *testing.T) {
	g := config.Guard{MaxShare: 0.1, MinNodes: 3, Window: time.Hour}
	got := guardMessage(g, "gemm", "n7", 12, 100, 0)
	want := "guarded: gemm: 12 of 100 nodes (12%) drained by vigil for gemm within 1h0m0s, above [guard] max_share 10%: not draining n7 for gemm; check its thresholds ([checks.gemm]), then resume the drained nodes (sinfo -R)"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestGuardCountsTheJob: the prologs of one job start together and none
// sees the others drained yet; the job's failing nodes (as the cross-node
// phase counted them) join the fleet's drains, each node once.
func TestGuardCountsTheJob(t *testing.T) {
	g := config.Guard{MaxShare: 0.1, MinNodes: 3, Window: time.Hour}
	job := []string{"n1", "n2", "n3", "n4", "n5"}
	names := withJob([]string{"n2", "n9"}, job, "n3")
	if want := []string{"n1", "n2", "n4", "n5", "n9"}; !slices.Equal(names, want) {
		t.Fatalf("withJob = %v, want %v", names, want)
	}
	if v := guardFor(g, len(withJob(nil, job, "n3"))+1, 5, time.Time{}, time.Now()); !v.Active || !v.Alert {
		t.Errorf("a whole 5-node job failing one check: %+v, want guarded", v)
	}
	if v := guardFor(g, len(withJob(nil, []string{"n3"}, "n3"))+1, 5, time.Time{}, time.Now()); v.Active {
		t.Errorf("one failing node of five: %+v, want a drain", v)
	}
	if got := guardMessage(g, "disk", "n3", 5, 5, 5); !strings.Contains(got, "(5 of them failing it in this job now)") {
		t.Errorf("message %q", got)
	}
}
