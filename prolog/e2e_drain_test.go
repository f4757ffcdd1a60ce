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

// TestE2EDrainSticks: a node the prolog drains for disk stays drained
// through the epilog of the requeued job and a health run, which do not run
// the disk check; only a run of the disk check that passes resumes it. Then
// an admin takes the node DOWN and resumes it (24.11 keeps the admin's
// reason on the resumed node, 22.05 clears it): a failing check drains the
// node again, with vigil's reason.
func TestE2EDrainSticks(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurmInTurn(t, testE2EDrainSticks)
}

func testE2EDrainSticks(t *testing.T, f slurmtest.Flavour) {
	prolog := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	epilog := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/epilog")
	scratch := t.TempDir()
	disk := func(minWrite string) string {
		return fmt.Sprintf("[checks.disk]\npath = %q\nsize_mib = 4\n%s\n", scratch, minWrite)
	}
	s := newSetup(t, `checks = ["disk"]
budget = "60s"
check_timeout = "20s"`, disk("min_write_mib_s = 1000000"))
	ep := filepath.Join(s.dir, "vigil-epilog.sh")
	if err := os.WriteFile(ep, []byte(fmt.Sprintf("#!/bin/sh\nexec %s --config %s\n", epilog, s.config)), 0o755); err != nil {
		t.Fatal(err)
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1, Prolog: s.wrapper(t, prolog), Epilog: ep, PrologFlags: "Alloc", Root: f.Root})
	node := c.Nodes[0]

	job := c.Sbatch(t, "hostname\n", "-N1")
	n := c.WaitNode(t, node, 60*time.Second, func(n slurm.Node) bool { return n.Drained() })
	if !strings.HasPrefix(n.Reason, "vigil: disk ") {
		t.Fatalf("drain reason %q, want vigil: disk ...", n.Reason)
	}
	drainReason := n.Reason

	// The epilog of the requeued job runs after the failed prolog; it runs
	// the health facts, not disk, and must leave the drain in place.
	var ep0 report.Report
	deadline := time.Now().Add(30 * time.Second)
	for ep0.Mode == "" && time.Now().Before(deadline) {
		for _, r := range s.readReports(t) {
			if r.Mode == "epilog" && r.Job == job {
				ep0 = r
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ep0.Mode == "" {
		t.Fatalf("no epilog report for job %s in %s", job, s.reports)
	}
	if ep0.Action.Kind != report.ActionStay || !slices.ContainsFunc(ep0.Action.Kept, func(k string) bool { return strings.Contains(k, "disk not run by the epilog") }) {
		t.Errorf("epilog action %+v, want stay: disk not run by the epilog", ep0.Action)
	}
	// Give a wrong resume time to show: the old defect resumed ~130 ms later.
	time.Sleep(time.Second)
	if n := nodeState(t, c, node); !n.Drained() || n.Reason != drainReason {
		t.Fatalf("after the epilog: %+v, want drained with %q", n, drainReason)
	}

	// Health mode runs the health facts only: the drain stays, exit 1.
	out, code, _ := runAs(t, c, prolog, "--health", "--node", node, "--config", s.config)
	if code != 1 || !strings.Contains(out, node+" stays drained: disk not run by this health check") {
		t.Fatalf("health run, exit %d:\n%s", code, out)
	}
	if n := nodeState(t, c, node); !n.Drained() || n.Reason != drainReason {
		t.Fatalf("after the health run: %+v", n)
	}

	// A re-test of disk that still fails keeps it drained; one that passes
	// after the config is fixed resumes it.
	if _, code, _ := runAs(t, c, prolog, "--node", node, "--checks", "disk", "--config", s.config); code != 1 {
		t.Fatalf("failing re-test exit %d, want 1", code)
	}
	if n := nodeState(t, c, node); !n.Drained() {
		t.Fatalf("after a failing re-test: %+v", n)
	}
	s.write(t, `checks = ["disk"]`, disk(""))
	out, code, _ = runAs(t, c, prolog, "--node", node, "--checks", "disk", "--config", s.config)
	if code != 0 || !strings.Contains(out, "resume "+node) {
		t.Fatalf("passing re-test, exit %d:\n%s", code, out)
	}
	c.WaitNode(t, node, 10*time.Second, func(n slurm.Node) bool { return !n.Drained() })

	// The admin's DOWN and RESUME: whatever reason is left on the idle node
	// holds nothing, and a failing disk check drains it for vigil.
	if out, err := c.Command(t, "scontrol", "update", "NodeName="+node, "State=DOWN", "Reason=psu swapped"); err != nil {
		t.Fatalf("admin DOWN: %v\n%s", err, out)
	}
	// Back in service: by the admin's RESUME, or by slurmctld itself when
	// slurmd registers again (ReturnToService); slurmctld refuses a RESUME
	// for a moment while it takes the node down.
	back := func(n slurm.Node) bool { return n.ForeignState() == "" && !n.Drained() }
	deadline = time.Now().Add(20 * time.Second)
	for n = nodeState(t, c, node); !back(n); n = nodeState(t, c, node) {
		out, err := c.Command(t, "scontrol", "update", "NodeName="+node, "State=RESUME")
		if time.Now().After(deadline) {
			t.Fatalf("node %+v not back in service; the last RESUME: %v\n%s", n, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("after the admin's resume: state %s, reason %q (stale: %v)", n.State, n.Reason, n.StaleReason())
	s.write(t, `checks = ["disk"]`, disk("min_write_mib_s = 1000000"))
	if out, code, _ := runAs(t, c, prolog, "--node", node, "--checks", "disk", "--config", s.config); code != 1 {
		t.Fatalf("failing run after the admin's resume: exit %d, want 1 (drained):\n%s", code, out)
	}
	if n := nodeState(t, c, node); !n.Drained() || !strings.HasPrefix(n.Reason, "vigil: disk ") {
		t.Fatalf("after the admin's resume and a failing run: %+v, want drained for vigil: disk", n)
	}
}
