package decide

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// decided is the part of a Plan a case looks at; every field is compared.
type decided struct {
	step       Step
	exit       int
	notDrained int
	kind       string // the report's action
	reason     string // the action's reason
	verdict    benchmarks.Status
	comment    string
	requeue    Requeue
	notify     []string
	notifyUser bool
	rewrite    bool
	remember   bool
	lift       bool
	guarded    []string // "check" or "check!" when this node sends the alert
	note       string   // a substring of the note; "" means no note
	kept       []string // substrings of the kept checks' phrases, in order
}

func decidedOf(p Plan) decided {
	d := decided{step: p.Step, exit: p.Exit, notDrained: p.ExitNotDrained, kind: p.Action.Kind, reason: p.Action.Reason,
		verdict: p.Verdict, comment: p.Comment, requeue: p.Requeue, notify: p.Notify, notifyUser: p.NotifyUser,
		rewrite: p.Rewrite, remember: p.RememberFailedDrain, lift: p.LiftPrologError != nil}
	for _, g := range p.Guarded {
		if g.Alert {
			d.guarded = append(d.guarded, g.Check+"!")
		} else {
			d.guarded = append(d.guarded, g.Check)
		}
	}
	return d
}

func (d decided) differs(p Plan) string {
	got := decidedOf(p)
	var diffs []string
	if p.Note == "" && d.note != "" || d.note == "" && p.Note != "" || !strings.Contains(p.Note, d.note) {
		diffs = append(diffs, fmt.Sprintf("note %q, want it to say %q", p.Note, d.note))
	}
	if len(p.Drain.Kept) != len(d.kept) {
		diffs = append(diffs, fmt.Sprintf("kept %+v, want %q", p.Drain.Kept, d.kept))
	} else {
		for i, k := range p.Drain.Kept {
			if !strings.Contains(k.Why, d.kept[i]) {
				diffs = append(diffs, fmt.Sprintf("kept[%d] %q, want it to say %q", i, k.Why, d.kept[i]))
			}
		}
	}
	got.note, got.kept = d.note, d.kept
	if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", d) {
		diffs = append(diffs, fmt.Sprintf("got  %+v\nwant %+v", got, d))
	}
	return strings.Join(diffs, "\n")
}

var decideNow = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)

func idleNode() *slurm.Node { return &slurm.Node{Name: "n1", State: "IDLE"} }

func drainedNode(reason string) *slurm.Node {
	return &slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: reason, ReasonTime: decideNow.Add(-time.Hour)}
}

// fleetOf is this node and others, drained of them by vigil for check a
// minute ago, idle ones up to nodes in all.
func fleetOf(nodes, drained int, check string) []slurm.Node {
	fleet := []slurm.Node{*idleNode()}
	for i := 1; i < nodes; i++ {
		n := slurm.Node{Name: fmt.Sprintf("x%02d", i), State: "IDLE"}
		if i <= drained {
			n.Flags, n.Reason, n.ReasonTime = []string{"DRAIN"}, "vigil: "+check+" Broken", decideNow.Add(-time.Minute)
		}
		fleet = append(fleet, n)
	}
	return fleet
}

// inputs builds a case's Inputs: mode, a node state, results; muts change the rest.
func inputs(mode Mode, node *slurm.Node, results []benchmarks.Result, muts ...func(*Inputs)) Inputs {
	in := Inputs{Mode: mode, Node: "n1", Now: decideNow, Results: results, Slurm: SlurmView{Node: node},
		Registered: func(c string) bool { return c != "gone" },
		Rules:      Rules{OnBudgetExpiry: config.ActionFail, MaxRequeues: 3, JobComment: true}}
	if mode != ModeHealth {
		in.Job = &JobFacts{ID: "77"}
	}
	for _, m := range muts {
		m(&in)
	}
	return in
}

func dry(in *Inputs)           { in.DryRun, in.Slurm.Node = true, nil }
func expired(in *Inputs)       { in.BudgetExpired = true }
func notifying(in *Inputs)     { in.Rules.Notify = true }
func userNotifying(in *Inputs) { in.Rules.UserNotify = true }
func noJob(in *Inputs)         { in.Job = nil }
func holding(in *Inputs)       { in.Rules.OnBudgetExpiry = config.ActionHold }
func guarding(in *Inputs) {
	in.Rules.Guard = config.Guard{MaxShare: 0.2, MinNodes: 1, Window: time.Hour}
	in.Slurm.Fleet = fleetOf(10, 2, "gemm")
}

// TestDecide is the run's decision as a table, from what the run knows
// once its checks ran to what it does: the drain rule on the node's
// state, the guard, budget expiry, the exit codes of each mode, the job's
// comment, requeue and the notices.
func TestDecide(t *testing.T) {
	pass, fail, unknown := benchmarks.StatusPass, benchmarks.StatusFail, benchmarks.StatusUnknown
	gemmFail := res("gemm", fail, "GEMMBelowThreshold", "gpu3")
	diskFail := res("disk", fail, "DiskSlow", "/scratch")
	gemmPass, diskPass := res("gemm", pass, "", ""), res("disk", pass, "", "")
	gemmUnknown := res("gemm", unknown, "LibraryMissing", "")
	const gemmReason = "vigil: gemm GEMMBelowThreshold gpu3"
	drain := func(exit, notDrained int, reason string) decided {
		return decided{step: StepDrain, exit: exit, notDrained: notDrained, kind: report.ActionDrain, reason: reason, verdict: fail}
	}
	with := func(d decided, f func(*decided)) decided { f(&d); return d }
	tests := []struct {
		name string
		in   Inputs
		want decided
	}{
		// A failure drains, with the reason the drain rule names.
		{"prolog: a failure drains, comments, requeues", inputs(ModeProlog, idleNode(), []benchmarks.Result{gemmFail, diskPass}),
			with(drain(ExitFail, ExitFail, gemmReason), func(d *decided) {
				d.comment, d.requeue, d.remember = "n1 failed gemm (GEMMBelowThreshold gpu3)", RequeueJob, true
			})},
		{"prolog: every failure is named, the comment has them all", inputs(ModeProlog, idleNode(), []benchmarks.Result{gemmFail, diskFail}),
			with(drain(ExitFail, ExitFail, "vigil: gemm GEMMBelowThreshold gpu3 +disk:DiskSlow@/scratch"), func(d *decided) {
				d.comment, d.requeue, d.remember = "n1 failed gemm (GEMMBelowThreshold gpu3), disk (DiskSlow /scratch)", RequeueJob, true
			})},
		{"prolog: at max_requeues Slurm's hold stays", inputs(ModeProlog, idleNode(), []benchmarks.Result{gemmFail}, func(in *Inputs) { in.Job.RestartCount = 3 }),
			with(drain(ExitFail, ExitFail, gemmReason), func(d *decided) {
				d.comment, d.requeue, d.remember = "n1 failed gemm (GEMMBelowThreshold gpu3)", RequeueHeld, true
			})},
		{"prolog: max_requeues = 0 keeps Slurm's hold", inputs(ModeProlog, idleNode(), []benchmarks.Result{gemmFail}, func(in *Inputs) { in.Rules.MaxRequeues = 0 }),
			with(drain(ExitFail, ExitFail, gemmReason), func(d *decided) {
				d.comment, d.requeue, d.remember = "n1 failed gemm (GEMMBelowThreshold gpu3)", RequeueHeld, true
			})},
		{"prolog: job_comment off writes no comment", inputs(ModeProlog, idleNode(), []benchmarks.Result{gemmFail}, func(in *Inputs) { in.Rules.JobComment = false }),
			with(drain(ExitFail, ExitFail, gemmReason), func(d *decided) { d.requeue, d.remember = RequeueJob, true })},
		{"prolog: the admins and the job's user hear of a new drain", inputs(ModeProlog, idleNode(), []benchmarks.Result{gemmFail}, notifying, userNotifying),
			with(drain(ExitFail, ExitFail, gemmReason), func(d *decided) {
				d.comment, d.requeue, d.remember, d.notify, d.notifyUser = "n1 failed gemm (GEMMBelowThreshold gpu3)", RequeueJob, true, []string{"gemm"}, true
			})},
		{"prolog: a failure on an admin's drain still plans the drain (scontrol refuses it)", inputs(ModeProlog, drainedNode("admin: bad fan"), []benchmarks.Result{gemmFail}),
			with(drain(ExitFail, ExitFail, gemmReason), func(d *decided) {
				d.comment, d.requeue, d.remember = "n1 failed gemm (GEMMBelowThreshold gpu3)", RequeueJob, true
			})},
		{"health: a failure drains; not drained exits 4", inputs(ModeHealth, idleNode(), []benchmarks.Result{gemmFail}),
			with(drain(ExitFail, ExitNotDrained, gemmReason), func(d *decided) { d.remember = true })},
		{"epilog: a failure drains but exits 0, never requeues or remembers", inputs(ModeEpilog, idleNode(), []benchmarks.Result{diskFail}),
			drain(ExitOK, ExitOK, "vigil: disk DiskSlow /scratch")},
		{"epilog culprit re-check: the full suite's failure drains, exit 0", inputs(ModeEpilog, idleNode(), []benchmarks.Result{diskPass, gemmFail}),
			drain(ExitOK, ExitOK, gemmReason)},
		{"epilog culprit re-check: the suite passing lifts vigil's drain for it", inputs(ModeEpilog, drainedNode(gemmReason), []benchmarks.Result{diskPass, gemmPass}),
			decided{step: StepResume, kind: report.ActionResume, reason: gemmReason, verdict: pass}},
		{"a new failure first, the checks still named after it", inputs(ModeHealth, drainedNode(gemmReason), []benchmarks.Result{diskFail}, notifying),
			with(drain(ExitFail, ExitNotDrained, "vigil: disk DiskSlow /scratch +gemm:GEMMBelowThreshold@gpu3"), func(d *decided) {
				d.remember, d.notify, d.kept = true, []string{"disk"}, []string{"gemm not run by this health check"}
			})},
		{"failing again for a named check notifies nobody", inputs(ModeHealth, drainedNode(gemmReason), []benchmarks.Result{gemmFail}, notifying),
			with(drain(ExitFail, ExitNotDrained, gemmReason), func(d *decided) { d.remember = true })},

		// Unknown never drains and never resumes.
		{"unknown never drains", inputs(ModeProlog, idleNode(), []benchmarks.Result{gemmUnknown}),
			decided{verdict: unknown}},
		{"unknown keeps vigil's drain", inputs(ModeHealth, drainedNode(gemmReason), []benchmarks.Result{gemmUnknown}),
			decided{step: StepStay, exit: ExitFail, kind: report.ActionStay, reason: gemmReason, verdict: unknown,
				note: "n1 stays drained: gemm could not tell", kept: []string{"unknown: LibraryMissing"}}},

		// A pass resumes vigil's drain, and only vigil's.
		{"pass on a node vigil drained resumes it", inputs(ModeHealth, drainedNode(gemmReason), []benchmarks.Result{gemmPass}),
			decided{step: StepResume, kind: report.ActionResume, reason: gemmReason, verdict: pass}},
		{"pass on an idle node does nothing", inputs(ModeHealth, idleNode(), []benchmarks.Result{gemmPass}),
			decided{verdict: pass}},
		{"pass on a node an admin drained keeps it", inputs(ModeHealth, drainedNode("admin: bad fan"), []benchmarks.Result{gemmPass}),
			decided{step: StepKeep, kind: report.ActionKeep, reason: "admin: bad fan", verdict: pass}},
		{"pass on a DOWN node keeps it", inputs(ModeHealth, &slurm.Node{Name: "n1", State: "DOWN", Reason: "rack power"}, []benchmarks.Result{gemmPass}),
			decided{step: StepKeep, kind: report.ActionKeep, reason: "rack power", verdict: pass}},
		{"pass on vigil's drain in maintenance keeps it", inputs(ModeHealth, &slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN", "MAINTENANCE"}, Reason: gemmReason}, []benchmarks.Result{gemmPass}),
			decided{step: StepKeep, kind: report.ActionKeep, reason: gemmReason, verdict: pass}},
		{"a drain for a check the run did not run stays", inputs(ModeHealth, drainedNode(gemmReason), []benchmarks.Result{diskPass}),
			decided{step: StepStay, exit: ExitFail, kind: report.ActionStay, reason: gemmReason, verdict: pass,
				note: "n1 stays drained: gemm not run by this health check", kept: []string{"gemm not run by this health check"}}},
		{"the epilog keeps a drain for a check it did not run, exit 0", inputs(ModeEpilog, drainedNode(gemmReason), []benchmarks.Result{diskPass}),
			decided{step: StepStay, kind: report.ActionStay, reason: gemmReason, verdict: pass,
				note: "stays drained", kept: []string{"gemm not run by the epilog"}}},
		{"the prolog keeps a drain the job's checks did not clear, and says so in the comment",
			inputs(ModeProlog, drainedNode(gemmReason), []benchmarks.Result{diskPass}, func(in *Inputs) { in.JobChecks = true }),
			decided{step: StepStay, exit: ExitFail, kind: report.ActionStay, reason: gemmReason, verdict: pass, comment: "n1 stays drained for gemm",
				note: "stays drained", kept: []string{"gemm not run by this prolog (the job chose its checks)"}}},
		{"the prolog ran on the job's devices only: the drain for another device stays",
			inputs(ModeProlog, drainedNode(gemmReason), []benchmarks.Result{gemmPass}, func(in *Inputs) { in.Job.Devices = []int{0, 1} }),
			decided{step: StepStay, exit: ExitFail, kind: report.ActionStay, reason: gemmReason, verdict: pass, comment: "n1 stays drained for gemm",
				note: "stays drained", kept: []string{"ran on the job's devices [0 1] only, not on gpu3"}}},
		{"a drain for a check this build lacks stays", inputs(ModeHealth, drainedNode("vigil: gone Broken"), []benchmarks.Result{diskPass}),
			decided{step: StepStay, exit: ExitFail, kind: report.ActionStay, reason: "vigil: gone Broken", verdict: pass,
				note: "stays drained", kept: []string{"gone is not a check of this vigil build"}}},
		{"one of two checks lifted: the reason is rewritten", inputs(ModeHealth, drainedNode(gemmReason+" +disk:DiskSlow"), []benchmarks.Result{diskPass}),
			decided{step: StepStay, exit: ExitFail, kind: report.ActionStay, reason: gemmReason, verdict: pass, rewrite: true,
				note: "stays drained", kept: []string{"gemm not run"}}},
		{"both checks of the reason passed: resumed", inputs(ModeHealth, drainedNode(gemmReason+" +disk:DiskSlow"), []benchmarks.Result{diskPass, gemmPass}),
			decided{step: StepResume, kind: report.ActionResume, reason: gemmReason + " +disk:DiskSlow", verdict: pass}},

		// Slurm's "Prolog error" after a drain vigil could not make.
		{"pass on Slurm's Prolog error after vigil's failed drain lifts it",
			inputs(ModeHealth, &slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: SlurmPrologError, ReasonTime: decideNow},
				[]benchmarks.Result{gemmPass}, func(in *Inputs) { in.Slurm.FailedDrain = &FailedDrain{Time: decideNow.Add(-time.Second)} }),
			decided{step: StepKeep, kind: report.ActionKeep, reason: SlurmPrologError, verdict: pass, lift: true}},
		{"a Prolog error set long before vigil's failed drain stays",
			inputs(ModeHealth, &slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: SlurmPrologError, ReasonTime: decideNow.Add(-time.Hour)},
				[]benchmarks.Result{gemmPass}, func(in *Inputs) { in.Slurm.FailedDrain = &FailedDrain{Time: decideNow} }),
			decided{step: StepKeep, kind: report.ActionKeep, reason: SlurmPrologError, verdict: pass}},
		{"a Prolog error without vigil's record stays",
			inputs(ModeHealth, &slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: SlurmPrologError, ReasonTime: decideNow}, []benchmarks.Result{gemmPass}),
			decided{step: StepKeep, kind: report.ActionKeep, reason: SlurmPrologError, verdict: pass}},

		// Dry runs: the same decision, nothing done to the job.
		{"dry run: a failure would drain, no comment, requeue or record", inputs(ModeProlog, nil, []benchmarks.Result{gemmFail}, dry, notifying, userNotifying),
			with(drain(ExitFail, ExitFail, gemmReason), func(d *decided) { d.notify = []string{"gemm"} })},
		{"dry run: a pass says what a real run would resume", inputs(ModeHealth, nil, []benchmarks.Result{gemmPass}, dry),
			decided{verdict: pass, note: "a run that is not dry would resume n1"}},

		// The budget.
		{"budget expiry drains, the verdict fails", inputs(ModeProlog, idleNode(), []benchmarks.Result{diskPass}, expired, notifying),
			with(drain(ExitFail, ExitFail, "vigil: budget BudgetExpired"), func(d *decided) {
				d.requeue, d.remember, d.notify = RequeueJob, true, []string{"budget"}
				d.comment = "n1 failed"
			})},
		{"a run inside its budget lifts budget", inputs(ModeHealth, drainedNode("vigil: budget BudgetExpired"), []benchmarks.Result{diskPass}),
			decided{step: StepResume, kind: report.ActionResume, reason: "vigil: budget BudgetExpired", verdict: pass}},
		{"budget out again keeps budget, notifies nobody again", inputs(ModeHealth, drainedNode("vigil: budget BudgetExpired"), nil, expired, notifying),
			with(drain(ExitFail, ExitNotDrained, "vigil: budget BudgetExpired"), func(d *decided) { d.remember = true })},
		{"budget expiry with hold holds the job", inputs(ModeProlog, nil, []benchmarks.Result{gemmFail}, expired, holding),
			decided{step: StepHold, kind: report.ActionHold, verdict: fail}},
		{"budget expiry with hold and no job: nothing", inputs(ModeHealth, nil, []benchmarks.Result{diskPass}, expired, holding),
			decided{kind: report.ActionNone, verdict: pass, note: "no job to hold"}},
		{"budget expiry with hold in the epilog: nothing", inputs(ModeEpilog, nil, nil, expired, holding),
			decided{kind: report.ActionNone, verdict: pass, note: "no job to hold"}},
		{"budget expiry with hold in a prolog without a job: nothing", inputs(ModeProlog, nil, nil, expired, holding, noJob),
			decided{kind: report.ActionNone, verdict: pass, note: "no job to hold"}},

		// No doubt drains: Slurm not answering changes nothing but a failure.
		{"the node unread: a pass changes nothing", inputs(ModeHealth, nil, []benchmarks.Result{gemmPass}, func(in *Inputs) { in.Slurm.NodeErr = errors.New("timeout") }),
			decided{step: StepBlind, verdict: pass, note: "reading n1's state: timeout"}},
		{"the node unread: a failure still drains", inputs(ModeHealth, nil, []benchmarks.Result{gemmFail}, func(in *Inputs) { in.Slurm.NodeErr = errors.New("timeout") }),
			with(drain(ExitFail, ExitNotDrained, gemmReason), func(d *decided) { d.remember = true })},

		// The guard.
		{"guarded: no drain, the alert from this node", inputs(ModeHealth, idleNode(), []benchmarks.Result{gemmFail}, guarding),
			decided{verdict: fail, guarded: []string{"gemm!"}}},
		{"guarded and another failure: drained for that one alone, notified for it",
			inputs(ModeHealth, idleNode(), []benchmarks.Result{gemmFail, diskFail}, guarding, notifying),
			with(drain(ExitFail, ExitNotDrained, "vigil: disk DiskSlow /scratch"), func(d *decided) {
				d.remember, d.notify, d.guarded = true, []string{"disk"}, []string{"gemm!"}
			})},
		{"a guarded check never lifts vigil's drain for it", inputs(ModeHealth, drainedNode(gemmReason), []benchmarks.Result{gemmFail}, guarding),
			decided{step: StepStay, exit: ExitFail, kind: report.ActionStay, reason: gemmReason, verdict: fail, guarded: []string{"gemm!"},
				note: "stays drained", kept: []string{"unknown: Guarded"}}},
		{"within max_share the guard lets the drain be", inputs(ModeHealth, idleNode(), []benchmarks.Result{gemmFail}, guarding,
			func(in *Inputs) { in.Slurm.Fleet = fleetOf(20, 2, "gemm") }),
			with(drain(ExitFail, ExitNotDrained, gemmReason), func(d *decided) { d.remember = true })},
		{"the job's failing nodes count; the first of them alerts, not this one", inputs(ModeProlog, idleNode(), []benchmarks.Result{gemmFail}, guarding,
			func(in *Inputs) {
				in.Slurm.Fleet = fleetOf(10, 0, "gemm")
				in.JobFailing = map[string][]string{"gemm": {"n0", "n1", "n2"}}
			}),
			decided{verdict: fail, guarded: []string{"gemm"}}},
		{"an alert sent within the window is not sent again", inputs(ModeHealth, idleNode(), []benchmarks.Result{gemmFail}, guarding,
			func(in *Inputs) {
				in.Slurm.Fleet[3].Fields = map[string]string{"Comment": FormatGuardMarks(map[string]time.Time{"gemm": decideNow.Add(-time.Minute)})}
			}),
			decided{verdict: fail, guarded: []string{"gemm"}}},
		{"no fleet read: the guard does not act", inputs(ModeHealth, idleNode(), []benchmarks.Result{gemmFail}, guarding, func(in *Inputs) { in.Slurm.Fleet = nil }),
			with(drain(ExitFail, ExitNotDrained, gemmReason), func(d *decided) { d.remember = true })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := tt.want.differs(Decide(tt.in)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// TestDecideIsPure: the same Inputs give the same Plan, and Decide leaves
// its Inputs as they were (the guard works on a copy of the results).
func TestDecideIsPure(t *testing.T) {
	in := inputs(ModeHealth, idleNode(), []benchmarks.Result{res("gemm", benchmarks.StatusFail, "GEMMBelowThreshold", "gpu3")}, guarding)
	before := slices.Clone(in.Results)
	a, b := Decide(in), Decide(in)
	if fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", b) {
		t.Errorf("two plans:\n%+v\n%+v", a, b)
	}
	if !slices.EqualFunc(in.Results, before, func(x, y benchmarks.Result) bool { return x.Status == y.Status && x.Reason == y.Reason }) {
		t.Errorf("Decide changed its results: %+v", in.Results)
	}
}

// TestMayLiftPrologError: the failed-drain record is read only for a
// passing run inside its budget on a node someone other than vigil holds.
func TestMayLiftPrologError(t *testing.T) {
	pass := []benchmarks.Result{res("gemm", benchmarks.StatusPass, "", "")}
	for _, tt := range []struct {
		name string
		in   Inputs
		want bool
	}{
		{"Slurm's drain, a pass", inputs(ModeHealth, drainedNode(SlurmPrologError), pass), true},
		{"a DOWN node, a pass", inputs(ModeHealth, &slurm.Node{Name: "n1", State: "DOWN"}, pass), true},
		{"vigil's drain", inputs(ModeHealth, drainedNode("vigil: gemm Broken"), pass), false},
		{"an idle node", inputs(ModeHealth, idleNode(), pass), false},
		{"a failure", inputs(ModeHealth, drainedNode(SlurmPrologError), []benchmarks.Result{res("gemm", benchmarks.StatusFail, "X", "")}), false},
		{"the budget ran out", inputs(ModeHealth, drainedNode(SlurmPrologError), pass, expired), false},
		{"not read", inputs(ModeHealth, nil, pass), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.MayLiftPrologError(); got != tt.want {
				t.Errorf("MayLiftPrologError = %v, want %v", got, tt.want)
			}
		})
	}
}
