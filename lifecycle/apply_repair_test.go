package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// rebootFake is fleetFake that takes reboot requests as slurm.Client
// does (a pending one, or another party's node, is refused).
type rebootFake struct {
	fleetFake
	rebootErr error
}

func (f *rebootFake) Reboot(ctx context.Context, node string, r slurm.Reboot) error {
	f.calls = append(f.calls, "scontrol "+strings.Join(r.Argv(node), " "))
	if f.rebootErr != nil {
		return f.rebootErr
	}
	f.node.Flags = append(f.node.Flags, "REBOOT_REQUESTED")
	return nil
}

// changes are the calls that change something (the fleet's read aside).
func (f *rebootFake) changes() []string {
	return slices.DeleteFunc(f.mutations(), func(c string) bool { return c == "nodes" })
}

type noHolders struct{}

func (noHolders) Holders([]string) ([]int, error) { return nil, nil }

// repairRun is one health run of t-fail (gpu0) with [repair] on: a
// ladder of reset then reboot, two remedies an hour, the reset a script
// that logs its arguments and exits with resetExit, RebootProgram set.
type repairRun struct {
	dir, conf, slurmConf, resetLog, state string
}

func newRepairRun(t *testing.T, resetExit int) repairRun {
	t.Helper()
	var r repairRun
	r.dir = t.TempDir()
	r.resetLog = filepath.Join(r.dir, "reset.log")
	reset := filepath.Join(r.dir, "reset.sh")
	script := fmt.Sprintf("#!/bin/sh\necho \"$@\" >> %s\necho resetting; exit %d\n", r.resetLog, resetExit)
	if err := os.WriteFile(reset, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r.slurmConf = filepath.Join(r.dir, "slurm.conf")
	if err := os.WriteFile(r.slurmConf, []byte("ClusterName=x\nRebootProgram=/sbin/reboot\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.state = filepath.Join(r.dir, "state")
	_, r.conf = setup(t, fmt.Sprintf(`checks = ["t-fail"]
[repair]
enabled = true
max_remedies = 2
window = "1h"
[repair.ladders]
t-fail = ["reset", "reboot"]
[repair.reset]
nvidia = [%q, "-i", "{index}"]
`, reset))
	return r
}

func (r repairRun) run(t *testing.T, f *rebootFake, dry bool) Outcome {
	t.Helper()
	o := Options{Program: "vigil-test", Mode: decide.ModeHealth, ConfigPath: r.conf, ConfigExplicit: true, Node: "n1",
		Lookup: env{"SLURM_CONF": r.slurmConf}.lookup, Slurm: f, Log: quietLog(), Root: t.TempDir(),
		StateDir: r.state, Holders: noHolders{}, DryRun: dry}
	return Run(context.Background(), o)
}

func (r repairRun) history(t *testing.T) []decide.RemedyRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.state, remediesFile))
	if err != nil {
		t.Fatal(err)
	}
	var st remedyState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st.Nodes["n1"]
}

// TestApplyRepairLadder: three failing runs climb the ladder: the reset
// runs the configured command with the device's index, the reboot asks
// Slurm after the drain, and the third drains for service; each done
// remedy is in the history and the report.
func TestApplyRepairLadder(t *testing.T) {
	r := newRepairRun(t, 0)
	f := &rebootFake{fleetFake: fleetFake{fakeSlurm: fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}}}

	out := r.run(t, f, false)
	m := out.Report.Action.Remedy
	if out.ExitCode != decide.ExitFail || m == nil || m.Kind != report.RemedyReset || !m.Done || m.Attempt != 1 {
		t.Fatalf("first run: exit %d, remedy %+v", out.ExitCode, m)
	}
	if b, _ := os.ReadFile(r.resetLog); string(b) != "-i 0\n" {
		t.Errorf("reset ran with %q, want \"-i 0\"", b)
	}
	if h := r.history(t); len(h) != 1 || h[0].Kind != "reset" || h[0].Device != "gpu0" || h[0].Check != "t-fail" {
		t.Errorf("history %+v", h)
	}

	f.calls = nil
	out = r.run(t, f, false)
	if m := out.Report.Action.Remedy; m == nil || m.Kind != report.RemedyReboot || !m.Done || m.Attempt != 2 {
		t.Fatalf("second run: remedy %+v", m)
	}
	want := []string{"drain n1 vigil: t-fail Broken gpu0", "scontrol reboot reason=vigil: t-fail Broken gpu0 n1"}
	if got := f.changes(); !slices.Equal(got, want) {
		t.Errorf("second run: calls %q, want %q (drain first, then the reboot)", got, want)
	}
	if h := r.history(t); len(h) != 2 || h[1].Kind != "reboot" {
		t.Errorf("history %+v", h)
	}

	f.node = slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "vigil: t-fail Broken gpu0 : reboot issued"}
	f.calls = nil
	out = r.run(t, f, false)
	const service = "vigil: t-fail NeedsService gpu0 (Broken, 1 reset, 1 reboot in 1h)"
	if m := out.Report.Action.Remedy; m == nil || m.Kind != report.RemedyNeedsService || !m.Done || m.Attempt != 2 || out.Report.Action.Reason != service {
		t.Fatalf("third run: action %+v, remedy %+v", out.Report.Action, m)
	}
	if got := f.changes(); !slices.Equal(got, []string{"drain n1 " + service}) {
		t.Errorf("third run: calls %q", got)
	}
	if h := r.history(t); len(h) != 2 {
		t.Errorf("needs-service is no remedy: history %+v", h)
	}
	if !strings.Contains(report.DescribeAction(out.Report), "needs service: 2 remedies for gpu0 within 1h0m0s") {
		t.Errorf("table: %s", report.DescribeAction(out.Report))
	}

	// Whatever runs next, the drain for service stays as it is.
	f.calls = nil
	out = r.run(t, f, false)
	if out.ExitCode != decide.ExitFail || out.Report.Action.Kind != report.ActionStay || len(f.changes()) != 0 {
		t.Errorf("after NeedsService: exit %d, action %+v, calls %q", out.ExitCode, out.Report.Action, f.changes())
	}
}

// TestApplyRepairResetFails: a reset that fails falls back to the reboot
// the ladder holds, recorded as the one remedy.
func TestApplyRepairResetFails(t *testing.T) {
	r := newRepairRun(t, 3)
	f := &rebootFake{fleetFake: fleetFake{fakeSlurm: fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}}}
	out := r.run(t, f, false)
	m := out.Report.Action.Remedy
	if m == nil || m.Kind != report.RemedyReboot || !m.Done || !strings.Contains(m.Note, "the reset failed") || !strings.Contains(m.Note, "resetting") {
		t.Fatalf("remedy %+v", m)
	}
	if h := r.history(t); len(h) != 1 || h[0].Kind != "reboot" {
		t.Errorf("history %+v", h)
	}
}

// TestApplyRepairDryRunAndRefusals: a dry run plans and does nothing; a
// refused reboot is recorded as failed and not counted; a drain that is
// refused tries no remedy.
func TestApplyRepairDryRunAndRefusals(t *testing.T) {
	r := newRepairRun(t, 0)
	f := &rebootFake{fleetFake: fleetFake{fakeSlurm: fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}}}
	out := r.run(t, f, true)
	if m := out.Report.Action.Remedy; m == nil || m.Kind != report.RemedyReset || m.Done || len(f.calls) != 0 {
		t.Fatalf("dry run: remedy %+v, calls %q", m, f.calls)
	}
	if !strings.Contains(report.DescribeAction(out.Report), "remedy: would reset gpu0 (remedy 1 of 2") {
		t.Errorf("dry run table: %s", report.DescribeAction(out.Report))
	}
	if _, err := os.Stat(r.resetLog); err == nil {
		t.Error("a dry run ran the reset")
	}

	// The reset's rung passed (a job's prolog never resets): the reboot, refused.
	f.rebootErr = fmt.Errorf("slurm: not rebooting n1: %w", slurm.ErrRebootPending)
	o := Options{Program: "vigil-test", Mode: decide.ModeProlog, ConfigPath: r.conf, ConfigExplicit: true, Node: "n1",
		Lookup: env{"SLURM_CONF": r.slurmConf, "SLURM_JOB_ID": "42"}.lookup, Slurm: f, Log: quietLog(), Root: t.TempDir(), StateDir: r.state}
	out = Run(context.Background(), o)
	if m := out.Report.Action.Remedy; m == nil || m.Kind != report.RemedyReboot || m.Done || !strings.Contains(m.Error, "already pending") {
		t.Fatalf("refused reboot: remedy %+v", m)
	}
	if _, err := os.Stat(filepath.Join(r.state, remediesFile)); err == nil {
		t.Error("a refused reboot was counted")
	}

	f.node = slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "admin: fan"}
	f.calls = nil
	out = r.run(t, f, false)
	if out.Report.Action.Remedy != nil || slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "scontrol") }) {
		t.Errorf("admin's node: remedy %+v, calls %q", out.Report.Action.Remedy, f.calls)
	}
}

// TestRemedyHistoryCorrupt: a history that is not JSON counts nothing,
// is kept aside at the next write, and a new one holds the new remedy.
func TestRemedyHistoryCorrupt(t *testing.T) {
	r := newRepairRun(t, 0)
	if err := os.MkdirAll(r.state, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.state, remediesFile), []byte(`{"nodes": {"n1": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &rebootFake{fleetFake: fleetFake{fakeSlurm: fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}}}
	out := r.run(t, f, false)
	if m := out.Report.Action.Remedy; m == nil || m.Attempt != 1 || !m.Done {
		t.Fatalf("remedy %+v", m)
	}
	notes := strings.Join(out.Report.Notes, "\n")
	if !strings.Contains(notes, "CORRUPT STATE FILE") {
		t.Errorf("notes lack the corrupt file:\n%s", notes)
	}
	if m, _ := filepath.Glob(filepath.Join(r.state, remediesFile+".corrupt-*")); len(m) != 1 {
		t.Errorf("kept aside: %v", m)
	}
	if h := r.history(t); len(h) != 1 {
		t.Errorf("history %+v", h)
	}
}
