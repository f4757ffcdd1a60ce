package idle

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/lifecycle"
	"github.com/vigil-hpc/vigil/slurm"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func node(name, state string, flags ...string) slurm.Node {
	return slurm.Node{Name: name, State: state, Flags: flags, Gres: "gpu:a100:4(S:0-1)",
		Fields: map[string]string{"Partitions": "batch,vigil"}}
}

func testIdle() config.Idle {
	i := config.DefaultIdle()
	i.Partition = "vigil"
	return i
}

// plan is Plan as "node:submit|skip:why" strings.
func plan(in Inputs) []string {
	var out []string
	for _, d := range Plan(in) {
		act := "skip"
		if d.Submit {
			act = "submit"
		}
		out = append(out, d.Node+":"+act+":"+d.Why)
	}
	return out
}

func TestPlanSkipsNodesThatAreNotIdle(t *testing.T) {
	drainedIdle := node("n02", "IDLE", "DRAIN")
	drainedIdle.Reason = "vigil: gemm GEMMBelowThreshold"
	other := node("n99", "IDLE")
	other.Fields = map[string]string{"Partitions": "batch"}
	in := Inputs{Now: now, Idle: testIdle(), Nodes: []slurm.Node{
		node("n01", "IDLE"), drainedIdle, node("n03", "DOWN"), node("n04", "ALLOCATED"), node("n05", "MIXED"),
		node("n06", "IDLE", "PLANNED"), node("n07", "IDLE", "NOT_RESPONDING"), node("n08", "IDLE", "MAINTENANCE"),
		node("n09", "IDLE", "POWERED_DOWN"), node("n10", "IDLE", "RESERVED"), node("n11", "IDLE", "COMPLETING"), other,
	}}
	want := []string{
		"n01:submit:not validated yet", "n02:skip:drained", "n03:skip:down", "n04:skip:allocated", "n05:skip:mixed",
		"n06:skip:idle but planned", "n07:skip:not responding", "n08:skip:maintenance", "n09:skip:powered_down",
		"n10:skip:idle but reserved", "n11:skip:idle but completing",
	}
	if got := plan(in); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := Plan(in)[0]; d.Gres != "gpu:a100:4" {
		t.Errorf("gres %q", d.Gres)
	}
	// No partition: every node; a reservation: its nodes alone, RESERVED allowed.
	in.Idle.Partition = ""
	if got := len(Plan(in)); got != 12 {
		t.Errorf("no partition: %d nodes, want 12", got)
	}
	in.Idle.Reservation, in.Reserved = "maint", []string{"n10", "n04"}
	if got := plan(in); strings.Join(got, "|") != "n04:skip:allocated|n10:submit:not validated yet" {
		t.Errorf("reservation: %q", got)
	}
}

func TestPlanOncePerInterval(t *testing.T) {
	idle := func(names ...string) []slurm.Node {
		var out []slurm.Node
		for _, n := range names {
			out = append(out, node(n, "IDLE"))
		}
		return out
	}
	rec := func(n, job, outcome string, ago time.Duration) lifecycle.Validation {
		return lifecycle.Validation{V: 1, Node: n, Job: job, Outcome: outcome, Start: now.Add(-ago - time.Hour), End: now.Add(-ago)}
	}
	sub := func(job string, ago time.Duration) Submission { return Submission{Job: job, At: now.Add(-ago)} }
	week := 7 * 24 * time.Hour
	tests := []struct {
		name  string
		in    Inputs
		want  []string
		limit int
	}{
		{"validated within the interval: not again", Inputs{Nodes: idle("n1"),
			Validations: map[string]lifecycle.Validation{"n1": rec("n1", "5", "pass", 2*24*time.Hour)}},
			[]string{"n1:skip:validated 2026-11-29T12:00:00Z (pass), due 2026-12-06T12:00:00Z"}, 0},
		{"a failed validation stands as well", Inputs{Nodes: idle("n1"),
			Validations: map[string]lifecycle.Validation{"n1": rec("n1", "5", "fail", time.Hour)}},
			[]string{"n1:skip:validated 2026-12-01T11:00:00Z (fail), due 2026-12-08T11:00:00Z"}, 0},
		{"older than the interval: due", Inputs{Nodes: idle("n1"),
			Validations: map[string]lifecycle.Validation{"n1": rec("n1", "5", "pass", week+time.Minute)}},
			[]string{"n1:submit:validated 2026-11-24T11:59:00Z (pass), due"}, 0},
		{"interrupted: due again", Inputs{Nodes: idle("n1"),
			Validations: map[string]lifecycle.Validation{"n1": rec("n1", "9", lifecycle.OutcomeInterrupted, time.Minute)},
			Submissions: map[string]Submission{"n1": sub("9", time.Hour)}},
			[]string{"n1:submit:not validated yet"}, 0},
		{"submitted, no record (state_dir not shared): counts", Inputs{Nodes: idle("n1"),
			Submissions: map[string]Submission{"n1": sub("9", time.Hour)}},
			[]string{"n1:skip:job 9 submitted 2026-12-01T11:00:00Z, due 2026-12-08T11:00:00Z"}, 0},
		{"submitted, preempted by squeue: due again", Inputs{Nodes: idle("n1"),
			Submissions: map[string]Submission{"n1": sub("9", time.Hour)},
			Jobs:        []slurm.QueuedJob{{ID: "9", State: "PREEMPTED", Name: "vigil-idle-n1"}}},
			[]string{"n1:submit:not validated yet"}, 0},
		{"submitted, completed by squeue, record not seen: counts", Inputs{Nodes: idle("n1"),
			Submissions: map[string]Submission{"n1": sub("9", time.Hour)},
			Jobs:        []slurm.QueuedJob{{ID: "9", State: "COMPLETED", Name: "vigil-idle-n1"}}},
			[]string{"n1:skip:job 9 submitted 2026-12-01T11:00:00Z, due 2026-12-08T11:00:00Z"}, 0},
		{"an older interrupted record does not undo a newer submission", Inputs{Nodes: idle("n1"),
			Validations: map[string]lifecycle.Validation{"n1": rec("n1", "8", lifecycle.OutcomeInterrupted, 2*time.Hour)},
			Submissions: map[string]Submission{"n1": sub("9", time.Hour)}},
			[]string{"n1:skip:job 9 submitted 2026-12-01T11:00:00Z, due 2026-12-08T11:00:00Z"}, 0},
		{"a job pending or running: no second one", Inputs{Nodes: idle("n1", "n2", "n3"),
			Jobs: []slurm.QueuedJob{{ID: "3", State: "PENDING", Name: "vigil-idle-n1"}, {ID: "4", State: "RUNNING", Name: "vigil-idle-n2"},
				{ID: "5", State: "RUNNING", Name: "vigil-idle-n3x"}, {ID: "6", State: "COMPLETED", Name: "vigil-idle-n3"}}},
			[]string{"n1:skip:validation job 3 is pending", "n2:skip:validation job 4 is running", "n3:submit:not validated yet"}, 0},
		{"longest without a validation first, at most max_nodes_per_run", Inputs{Nodes: idle("n1", "n2", "n3", "n4"),
			Validations: map[string]lifecycle.Validation{"n1": rec("n1", "1", "pass", 9*24*time.Hour), "n2": rec("n2", "2", "pass", 30*24*time.Hour),
				"n4": rec("n4", "4", "pass", 8*24*time.Hour)}},
			[]string{"n1:skip:validated 2026-11-22T12:00:00Z (pass), due; beyond max_nodes_per_run",
				"n2:submit:validated 2026-11-01T12:00:00Z (pass), due", "n3:submit:not validated yet",
				"n4:skip:validated 2026-11-23T12:00:00Z (pass), due; beyond max_nodes_per_run"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now, tt.in.Idle = now, testIdle()
			if tt.limit > 0 {
				tt.in.Idle.MaxNodesPerRun = tt.limit
			}
			if got := plan(tt.in); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
