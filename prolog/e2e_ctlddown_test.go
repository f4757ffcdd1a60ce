package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestE2EControllerDownDuringProlog: slurmctld goes down while a job's
// prolog fails a check. vigil cannot drain the node: it says that the
// controller is unreachable (not "check slurm_bin_dir"), runs scontrol
// once rather than once per call (counted by a scontrol that logs each
// run), and remembers the failed drain. When slurmctld is back, Slurm
// drains the node itself with "Prolog error"; the node's next passing run
// lifts that drain. Another node that an admin drained with the same
// words stays drained.
//
// The check ends only once slurmctld is down (a file the test writes),
// so every scontrol after it meets the stopped controller however long
// the stop takes on a loaded machine.
func TestE2EControllerDownDuringProlog(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	marks := t.TempDir()
	started, down, fail := filepath.Join(marks, "started"), filepath.Join(marks, "down"), filepath.Join(marks, "fail")
	s := newSetup(t, `checks = ["command"]
budget = "90s"
check_timeout = "45s"
slurm_timeout = "20s"
retries = 0`, fmt.Sprintf(`[checks.command]
command = ["sh", "-c", "touch %s; while [ ! -e %s ]; do sleep 0.1; done; test ! -e %s"]
`, started, down, fail))
	calls := s.countScontrol(t)
	wrapper := s.wrapper(t, bin)
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, Prolog: wrapper, PrologFlags: "Alloc"})
	if err := os.WriteFile(fail, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	node := c.Nodes[0]
	job := c.Sbatch(t, "sleep 1\n", "-N", "1", "-w", node)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the prolog never started its check\n%s", c.Dump(job))
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.StopController(t)
	before := scontrolRuns(t, calls)
	if err := os.WriteFile(down, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	mine := func(r report.Report) bool { return r.Job == job && r.Node == node }
	rep := s.waitReports(t, mine)
	if !slices.ContainsFunc(rep, mine) {
		rep = s.waitReports(t, mine)
	}
	t.Logf("the prolog's report came %s after its check ended", time.Since(t0).Round(time.Second))
	after := scontrolRuns(t, calls)[len(before):]
	c.StartController(t)
	var r report.Report
	for _, x := range rep {
		if x.Job == job && x.Node == node {
			r = x
		}
	}
	// scontrol says so itself, or vigil does when scontrol is still
	// trying at slurm_timeout (a loaded machine).
	if r.Action.Done || !strings.Contains(r.Action.Error, "Unable to contact slurm controller") && !strings.Contains(r.Action.Error, "no answer from slurmctld within 20s") {
		t.Errorf("action %+v, want a failed drain saying slurmctld was unreachable", r.Action)
	}
	if len(after) != 1 {
		t.Errorf("scontrol ran %d times with slurmctld down, want once: %q", len(after), after)
	}
	t.Logf("run with slurmctld down: %s, action %+v, notes %q", r.Duration.Round(time.Millisecond), r.Action, r.Notes)
	if b, err := os.ReadFile(filepath.Join(s.stateDir(), "failed-drains.json")); err != nil || !strings.Contains(string(b), node) {
		t.Fatalf("no failed drain remembered for %s: %s %v", node, b, err)
	}
	n := c.WaitNode(t, node, 60*time.Second, func(n slurm.Node) bool { return n.Drained() })
	if n.Reason != "Prolog error" {
		t.Fatalf("%s drained with %q, want Slurm's own \"Prolog error\"", node, n.Reason)
	}
	// An admin drains the other node with the same words.
	other := c.Nodes[1]
	if out, err := c.Command(t, "scontrol", "update", "NodeName="+other, "State=DRAIN", "Reason=Prolog error"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	os.Remove(fail)
	t.Setenv("VIGIL_STATE_DIR", s.stateDir())
	for _, nd := range []string{node, other} {
		if out, code, _ := runAs(t, c, bin, "--health", "--node", nd, "--config", s.config); code != 0 {
			t.Fatalf("health run on %s: exit %d\n%s", nd, code, out)
		}
	}
	if st := nodeState(t, c, node); st.Drained() {
		t.Errorf("%s still drained (%s) after a passing run: vigil should lift the Prolog error of its own failed drain", node, st.Reason)
	}
	if st := nodeState(t, c, other); !st.Drained() || st.Reason != "Prolog error" {
		t.Errorf("%s: %+v, want the admin's drain kept", other, st)
	}
}

// countScontrol points the setup's slurm_bin_dir at a scontrol that logs
// each run (one line: its arguments) and then runs the real one. It
// returns the log.
func (s e2eSetup) countScontrol(t *testing.T) string {
	t.Helper()
	dir, log := filepath.Join(s.dir, "bin"), filepath.Join(s.dir, "scontrol.log")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	orig := scontrolDir(t)
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %s\nexec %s \"$@\"\n", log, filepath.Join(orig, "scontrol"))
	if err := os.WriteFile(filepath.Join(dir, "scontrol"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.config)
	if err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf("slurm_bin_dir = %q\n", orig)
	if !strings.Contains(string(b), old) {
		t.Fatalf("no %q in the config:\n%s", old, b)
	}
	if err := os.WriteFile(s.config, []byte(strings.Replace(string(b), old, fmt.Sprintf("slurm_bin_dir = %q\n", dir), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return log
}

// scontrolRuns returns the runs countScontrol's scontrol logged so far.
func scontrolRuns(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}
