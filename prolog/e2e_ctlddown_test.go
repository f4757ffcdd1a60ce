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
// controller is unreachable (not "check slurm_bin_dir"), tries scontrol
// once rather than once per call, and remembers the failed drain. When
// slurmctld is back, Slurm drains the node itself with "Prolog error";
// the node's next passing run lifts that drain. Another node that an admin
// drained with the same words stays drained.
func TestE2EControllerDownDuringProlog(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	marks := t.TempDir()
	started, fail := filepath.Join(marks, "started"), filepath.Join(marks, "fail")
	s := newSetup(t, `checks = ["command"]
budget = "60s"
check_timeout = "20s"
slurm_timeout = "20s"
retries = 0`, fmt.Sprintf(`[checks.command]
command = ["sh", "-c", "touch %s; sleep 3; test ! -e %s"]
`, started, fail))
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
	t0 := time.Now()
	mine := func(r report.Report) bool { return r.Job == job && r.Node == node }
	rep := s.waitReports(t, mine)
	if !slices.ContainsFunc(rep, mine) {
		rep = s.waitReports(t, mine)
	}
	t.Logf("the prolog's report came %s after slurmctld stopped", time.Since(t0).Round(time.Second))
	c.StartController(t)
	var r report.Report
	for _, x := range rep {
		if x.Job == job && x.Node == node {
			r = x
		}
	}
	if r.Action.Done || !strings.Contains(r.Action.Error, "Unable to contact slurm controller") {
		t.Errorf("action %+v, want a failed drain saying slurmctld was unreachable", r.Action)
	}
	if r.Duration > 35*time.Second {
		t.Errorf("the run took %s with slurmctld down: scontrol should be tried once, within slurm_timeout", r.Duration)
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
