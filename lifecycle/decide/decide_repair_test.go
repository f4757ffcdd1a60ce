package decide

import (
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

// remedied is the part of a Plan the repair cases look at.
type remedied struct {
	step     Step
	reason   string   // the drain's (or stay's) reason
	remedy   string   // the remedy's kind, "" for none
	attempt  int      // its attempt
	command  []string // the reset's argv, or scontrol's arguments for a reboot
	fallback string   // the fallback reboot's scontrol arguments, joined
	keepDown bool
	notify   []string
	note     string // a substring of the plan's note, "" for none
	mNote    string // a substring of the remedy's note, "" for none
}

func remediedOf(p Plan) remedied {
	got := remedied{step: p.Step, reason: p.Action.Reason, keepDown: p.KeepDown, notify: p.Notify}
	if m := p.Remedy; m != nil {
		got.remedy, got.attempt = m.Kind, m.Attempt
		switch m.Kind {
		case config.RemedyReset:
			got.command = m.Argv
		case config.RemedyReboot:
			got.command = m.Reboot.Argv("n1")
		}
		if m.Fallback != nil {
			got.fallback = strings.Join(m.Fallback.Reboot.Argv("n1"), " ")
		}
	}
	return got
}

func (w remedied) differs(p Plan) string {
	got := remediedOf(p)
	var diffs []string
	if w.note == "" && p.Note != "" && p.Remedy == nil || !strings.Contains(p.Note, w.note) {
		diffs = append(diffs, fmt.Sprintf("note %q, want it to say %q", p.Note, w.note))
	}
	mNote := ""
	if p.Remedy != nil {
		mNote = p.Remedy.Note
	}
	if w.mNote == "" && mNote != "" || !strings.Contains(mNote, w.mNote) {
		diffs = append(diffs, fmt.Sprintf("remedy note %q, want it to say %q", mNote, w.mNote))
	}
	got.note, got.mNote = w.note, w.mNote
	if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", w) {
		diffs = append(diffs, fmt.Sprintf("got  %+v\nwant %+v", got, w))
	}
	return strings.Join(diffs, "\n")
}

// repairing turns [repair] on with its shipped ladders, a test ladder for
// fault-inject, two remedies an hour, RebootProgram set and gpu3 idle.
func repairing(in *Inputs) {
	r := config.DefaultRepair()
	r.Enabled, r.MaxRemedies, r.Window = true, 2, config.Days(time.Hour)
	r.Ladders["FaultInjected"] = []string{config.RemedyReboot}
	in.Rules.Repair = r
	in.Repair = RepairView{RebootProgram: "/sbin/reboot", RebootKnown: true, Idle: map[string]bool{"gpu3": true}}
}

// history gives the node n remedies for device, each age before now apart.
func history(n int, device string, age time.Duration) func(*Inputs) {
	return func(in *Inputs) {
		for i := n; i > 0; i-- {
			in.Repair.History = append(in.Repair.History, RemedyRecord{At: decideNow.Add(-time.Duration(i) * age),
				Kind: config.RemedyReboot, Check: "xid", Reason: "XID79", Device: device})
		}
	}
}

// TestDecideRepair is the repair ladder's decision as a table: which
// remedy a drain plans, from the ladder, the component's history within
// the window, where the run is and what the node allows.
func TestDecideRepair(t *testing.T) {
	fail := benchmarks.StatusFail
	xid79 := res("xid", fail, "XID79", "gpu3")
	xid48 := res("xid", fail, "XID48", "gpu3")
	remap := res("row-remap", fail, "RowRemapPending", "gpu3")
	const r79, r48 = "vigil: xid XID79 gpu3", "vigil: xid XID48 gpu3"
	reboot := func(reason string) []string { return []string{"reboot", "reason=" + reason, "n1"} }
	reset := []string{"/usr/bin/nvidia-smi", "-r", "-i", "3"}
	noRebootProgram := func(in *Inputs) { in.Repair.RebootProgram = "" }
	busy := func(in *Inputs) { in.Repair.Idle = map[string]bool{"gpu3": false} }
	nextState := func(s string) func(*Inputs) { return func(in *Inputs) { in.Rules.Repair.RebootNextState = s } }
	off := func(in *Inputs) { in.Rules.Repair.Enabled = false }
	backDown := &slurm.Node{Name: "n1", State: "DOWN", Reason: r79 + " : reboot issued : reboot complete"}
	service := "vigil: xid NeedsService gpu3 (XID79, 2 reboots in 1h)"
	tests := []struct {
		name string
		in   Inputs
		want remedied
	}{
		{"off: a failure only drains", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid48}, repairing, off),
			remedied{step: StepDrain, reason: r48}},
		{"first failure, outside jobs, device idle: reset, reboot if it fails", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid48}, repairing),
			remedied{step: StepDrain, reason: r48, remedy: config.RemedyReset, attempt: 1, command: reset, fallback: strings.Join(reboot(r48), " ")}},
		{"first failure, the ladder's reboot only", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid79}, repairing),
			remedied{step: StepDrain, reason: r79, remedy: config.RemedyReboot, attempt: 1, command: reboot(r79)}},
		{"inside a job: never a reset, the reboot", inputs(ModeProlog, idleNode(), []benchmarks.Result{xid48}, repairing),
			remedied{step: StepDrain, reason: r48, remedy: config.RemedyReboot, attempt: 1, command: reboot(r48), mNote: "never inside a job"}},
		{"a device in use is not reset: the reboot", inputs(ModeHealth, idleNode(), []benchmarks.Result{remap}, repairing, busy),
			remedied{step: StepDrain, reason: "vigil: row-remap RowRemapPending gpu3", remedy: config.RemedyReboot, attempt: 1,
				command: reboot("vigil: row-remap RowRemapPending gpu3"), mNote: "gpu3 is in use"}},
		{"no reset command for the vendor: the reboot", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid48}, repairing,
			func(in *Inputs) { delete(in.Rules.Repair.Reset, "nvidia") }),
			remedied{step: StepDrain, reason: r48, remedy: config.RemedyReboot, attempt: 1, command: reboot(r48), mNote: "no [repair.reset] nvidia command"}},
		{"no RebootProgram: drain only, with a note", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid79}, repairing, noRebootProgram),
			remedied{step: StepDrain, reason: r79, note: "slurm.conf sets no RebootProgram"}},
		{"no RebootProgram: a reset without a fallback", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid48}, repairing, noRebootProgram),
			remedied{step: StepDrain, reason: r48, remedy: config.RemedyReset, attempt: 1, command: reset}},
		{"slurm.conf unreadable: drain only", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid79}, repairing, func(in *Inputs) { in.Repair.RebootKnown = false }),
			remedied{step: StepDrain, reason: r79, note: "slurm.conf could not be read"}},
		{"second failure: the ladder's next rung", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid48}, repairing, history(1, "gpu3", time.Minute)),
			remedied{step: StepDrain, reason: r48, remedy: config.RemedyReboot, attempt: 2, command: reboot(r48)}},
		{"max_remedies reached: NeedsService, the admins hear of it again", inputs(ModeHealth, drainedNode(r79), []benchmarks.Result{xid79}, repairing, notifying, history(2, "gpu3", time.Minute)),
			remedied{step: StepDrain, reason: service, remedy: report.RemedyNeedsService, attempt: 2, notify: []string{"xid"}, mNote: "vigil does not resume n1"}},
		{"NeedsService names the component first, the other failures after", inputs(ModeHealth, idleNode(), []benchmarks.Result{res("disk", fail, "DiskSlow", "/scratch"), xid79}, repairing, history(2, "gpu3", time.Minute)),
			remedied{step: StepDrain, reason: "vigil: xid NeedsService gpu3 +disk:DiskSlow@/scratch (XID79, 2 reboots in 1h)", remedy: report.RemedyNeedsService, attempt: 2, mNote: "2 reboots"}},
		{"remedies past the window do not count", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid79}, repairing, history(2, "gpu3", 40*time.Minute)),
			remedied{step: StepDrain, reason: r79, remedy: config.RemedyReboot, attempt: 2, command: reboot(r79)}},
		{"every remedy past the window: the first rung again", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid48}, repairing, history(2, "gpu3", 2*time.Hour)),
			remedied{step: StepDrain, reason: r48, remedy: config.RemedyReset, attempt: 1, command: reset, fallback: strings.Join(reboot(r48), " ")}},
		{"another device's remedies do not count", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid79}, repairing, history(2, "gpu1", time.Minute)),
			remedied{step: StepDrain, reason: r79, remedy: config.RemedyReboot, attempt: 1, command: reboot(r79)}},
		{"unknown never triggers a remedy", inputs(ModeHealth, idleNode(), []benchmarks.Result{res("xid", benchmarks.StatusUnknown, "KernelLogUnreadable", "")}, repairing),
			remedied{}},
		{"a failure without a ladder only drains", inputs(ModeHealth, idleNode(), []benchmarks.Result{res("disk", fail, "DiskSlow", "/scratch")}, repairing),
			remedied{step: StepDrain, reason: "vigil: disk DiskSlow /scratch"}},
		{"an empty ladder turns a shipped one off", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid79}, repairing, func(in *Inputs) { in.Rules.Repair.Ladders["XID79"] = nil }),
			remedied{step: StepDrain, reason: r79}},
		{"a reason's ladder wins over its check's", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid79}, repairing, func(in *Inputs) { in.Rules.Repair.Ladders["xid"] = []string{config.RemedyReset} }),
			remedied{step: StepDrain, reason: r79, remedy: config.RemedyReboot, attempt: 1, command: reboot(r79)}},
		{"the first failure with a ladder gets the remedy", inputs(ModeHealth, idleNode(), []benchmarks.Result{res("fault-inject", fail, "FaultInjected", "gpu0"), xid79}, repairing),
			remedied{step: StepDrain, reason: "vigil: fault-inject FaultInjected gpu0 +xid:XID79@gpu3", remedy: config.RemedyReboot, attempt: 1,
				command: reboot("vigil: fault-inject FaultInjected gpu0 +xid:XID79@gpu3")}},
		{"a guarded failure gets no remedy", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid79}, repairing, func(in *Inputs) {
			in.Rules.Guard = config.Guard{MaxShare: 0.2, MinNodes: 1, Window: time.Hour}
			in.Slurm.Fleet = fleetOf(10, 2, "xid")
		}), remedied{}},
		{"a reboot pending already: no second one", inputs(ModeHealth, &slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN", "REBOOT_REQUESTED"}, Reason: r79}, []benchmarks.Result{xid79}, repairing),
			remedied{step: StepDrain, reason: r79, note: "a reboot of n1 is pending already"}},
		{"a node an admin holds: no remedy", inputs(ModeHealth, drainedNode("admin: bad fan"), []benchmarks.Result{xid79}, repairing),
			remedied{step: StepDrain, reason: r79, note: "n1 is held by someone else"}},
		{"dry run: planned, RebootProgram not checked", inputs(ModeHealth, nil, []benchmarks.Result{xid79}, repairing, dry, func(in *Inputs) { in.Repair.RebootKnown = false }),
			remedied{step: StepDrain, reason: r79, remedy: config.RemedyReboot, attempt: 1, command: reboot(r79), mNote: "RebootProgram not checked"}},
		{"nextstate down asks ASAP nextstate=DOWN", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid79}, repairing, nextState(config.NextStateDown)),
			remedied{step: StepDrain, reason: r79, remedy: config.RemedyReboot, attempt: 1, command: []string{"reboot", "ASAP", "nextstate=DOWN", "reason=" + r79, "n1"}}},
		{"nextstate resume asks ASAP nextstate=RESUME", inputs(ModeHealth, idleNode(), []benchmarks.Result{xid79}, repairing, nextState(config.NextStateResume)),
			remedied{step: StepDrain, reason: r79, remedy: config.RemedyReboot, attempt: 1, command: []string{"reboot", "ASAP", "nextstate=RESUME", "reason=" + r79, "n1"}}},
		{"back DOWN from vigil's reboot, failing again: rebooted again, left DOWN", inputs(ModeHealth, backDown, []benchmarks.Result{xid79}, repairing, nextState(config.NextStateDown), history(1, "gpu3", time.Minute)),
			remedied{step: StepDrain, reason: r79, remedy: config.RemedyReboot, attempt: 2, command: []string{"reboot", "ASAP", "nextstate=DOWN", "reason=" + r79, "n1"}, keepDown: true}},
		{"back DOWN from vigil's reboot, passing: resumed", inputs(ModeHealth, backDown, []benchmarks.Result{res("xid", benchmarks.StatusPass, "", "")}, repairing),
			remedied{step: StepResume, reason: backDown.Reason}},
		{"back DOWN from vigil's reboot, not re-tested: stays DOWN, no rewrite", inputs(ModeHealth, backDown, []benchmarks.Result{res("disk", benchmarks.StatusPass, "", "")}, repairing),
			remedied{step: StepStay, reason: r79, note: "xid not run"}},
		{"back drained from vigil's reboot, passing: resumed", inputs(ModeHealth, drainedNode(r79+" : reboot issued"), []benchmarks.Result{res("xid", benchmarks.StatusPass, "", "")}, repairing),
			remedied{step: StepResume, reason: r79 + " : reboot issued"}},
		{"NeedsService is never resumed", inputs(ModeHealth, drainedNode(service), []benchmarks.Result{res("xid", benchmarks.StatusPass, "", "")}, repairing),
			remedied{step: StepStay, reason: service, note: "needs service"}},
		{"NeedsService stays as it is on a new failure, no remedy", inputs(ModeHealth, drainedNode(service), []benchmarks.Result{xid79}, repairing, notifying),
			remedied{step: StepStay, reason: service, note: "needs service"}},
		{"NeedsService stays with [repair] off too", inputs(ModeHealth, drainedNode(service), []benchmarks.Result{res("xid", benchmarks.StatusPass, "", "")}),
			remedied{step: StepStay, reason: service, note: "needs service"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := tt.want.differs(Decide(tt.in)); d != "" {
				t.Error(d)
			}
		})
	}
}

// TestDecideRepairAction: the planned remedy is in the report's action,
// with the ladder's limits, and a NeedsService stay exits as a drain.
func TestDecideRepairAction(t *testing.T) {
	in := inputs(ModeHealth, idleNode(), []benchmarks.Result{res("xid", benchmarks.StatusFail, "XID79", "gpu3")}, repairing, history(1, "gpu3", time.Minute))
	in.Components = []benchmarks.Component{{Kind: "gpu", Name: "gpu2", UUID: "GPU-2"}, {Kind: "gpu", Name: "gpu3", UUID: "GPU-3"}}
	p := Decide(in)
	want := report.Remedy{Kind: "reboot", Check: "xid", Reason: "XID79", Device: "gpu3", ID: "gpu:GPU-3", Attempt: 2, Max: 2, Window: "1h0m0s",
		At: decideNow, Command: []string{"scontrol", "reboot", "reason=vigil: xid XID79 gpu3", "n1"}}
	if got := p.Action.Remedy; got == nil || fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", want) {
		t.Errorf("action's remedy %+v, want %+v", got, want)
	}
	st := Decide(inputs(ModeHealth, drainedNode("vigil: xid NeedsService gpu3 (XID79, 2 reboots in 1h)"), nil))
	if st.Exit != ExitFail || st.Rewrite || st.Action.Kind != report.ActionStay || !slices.ContainsFunc(st.Action.Kept, func(k string) bool { return strings.Contains(k, "needs service") }) {
		t.Errorf("NeedsService stay: %+v", st)
	}
}

func TestWindowWords(t *testing.T) {
	for d, want := range map[time.Duration]string{7 * 24 * time.Hour: "7d", 36 * time.Hour: "36h", time.Hour: "1h", 90 * time.Minute: "90m", 90 * time.Second: "1m30s"} {
		if got := windowWords(d); got != want {
			t.Errorf("windowWords(%v) = %q, want %q", d, got, want)
		}
	}
	got := remedyCount([]RemedyRecord{{Kind: "reset"}, {Kind: "reboot"}, {Kind: "reboot"}})
	if got != "1 reset, 2 reboots" {
		t.Errorf("remedyCount = %q", got)
	}
}
