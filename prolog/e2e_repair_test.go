package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestE2ERepairLadder: the [repair] ladder on a real cluster whose
// RebootProgram restarts the named node's slurmd (slurmtest's Reboot),
// three nodes, each with its own config and state:
//
//   - n1, through a job's prolog: the fault-inject check fails, the node
//     is drained and a reboot requested (REBOOT_REQUESTED while the
//     requeued job leaves); RebootProgram runs for n1 alone; the node
//     comes back drained, a health re-test passes and resumes it, and the
//     job runs there;
//   - n2, health runs: the first failure resets gpu0 with the configured
//     command, the second reboots the node, the third drains it for
//     service (NeedsService, the admins mailed), and a passing run leaves
//     it drained;
//   - n3, reboot_nextstate = "down": the node comes back DOWN with
//     "reboot complete", and a passing health run resumes it.
func TestE2ERepairLadder(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurmInTurn(t, testE2ERepairLadder)
}

// repairConf is the [checks.fault-inject] mode and a [repair] section
// with ladder for FaultInjected, two remedies an hour, and extra lines.
func repairConf(mode, ladder, extra string) string {
	return fmt.Sprintf("[checks.fault-inject]\nmode = %q\n[repair]\nenabled = true\nmax_remedies = 2\nwindow = \"1h\"\n%s\n[repair.ladders]\nFaultInjected = %s\nXID31 = [\"reboot\"]\n",
		mode, extra, ladder)
}

const repairProlog = `checks = ["fault-inject"]
budget = "60s"
check_timeout = "20s"`

func testE2ERepairLadder(t *testing.T, f slurmtest.Flavour) {
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	s1 := newSetup(t, repairProlog, repairConf("fail", `["reboot"]`, ""))
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 3, Prolog: s1.wrapper(t, bin), PrologFlags: "Alloc", Root: f.Root,
		Reboot: true, ResumeTimeout: 60,
		// nextstate=DOWN needs a DOWN node to stay DOWN when slurmd registers.
		ExtraConf: []string{"ReturnToService=1"}})
	t.Run("reboot-then-resume", func(t *testing.T) { repairRebootThenResume(t, c, bin, s1) })
	t.Run("reset-reboot-service", func(t *testing.T) { repairToService(t, c, bin) })
	t.Run("nextstate-down", func(t *testing.T) { repairNextStateDown(t, c, bin) })
}

// repairRebootThenResume is n1's scenario, through a job's prolog.
func repairRebootThenResume(t *testing.T, c *slurmtest.Cluster, bin string, s e2eSetup) {
	node := c.Nodes[0]
	t0 := time.Now()
	job := c.Sbatch(t, "echo ran on $SLURMD_NODENAME\n", "-w", node)
	pending := c.WaitNode(t, node, 60*time.Second, func(n slurm.Node) bool { return n.Is("REBOOT_REQUESTED") || n.Is("REBOOT_ISSUED") })
	t.Logf("%.1fs: reboot pending: %s", time.Since(t0).Seconds(), nodeState(t, c, node).Fields["State"])
	if !pending.Drained() || !strings.HasPrefix(pending.Reason, "vigil: fault-inject FaultInjected gpu0") {
		t.Errorf("pending reboot: %+v, want drained by vigil", pending)
	}
	back := waitBack(t, c, node, 1, func(n slurm.Node) bool { return n.State == "IDLE" && n.Drained() })
	t.Logf("%.1fs: back from the reboot: %s, reason %q", time.Since(t0).Seconds(), back.Fields["State"], back.Reason)
	r := lastModeReport(t, s, node, "prolog")
	if m := r.Action.Remedy; r.Action.Kind != report.ActionDrain || m == nil || m.Kind != report.RemedyReboot || !m.Done || m.Attempt != 1 ||
		!slices.Equal(m.Command, []string{"scontrol", "reboot", "reason=vigil: fault-inject FaultInjected gpu0", node}) {
		t.Errorf("prolog report's action %+v, remedy %+v", r.Action, m)
	}
	if !strings.HasPrefix(back.Reason, "vigil: fault-inject FaultInjected gpu0") {
		t.Errorf("back with reason %q, want vigil's kept", back.Reason)
	}

	// The cause is gone: the health re-test passes and resumes the node.
	s.write(t, repairProlog, repairConf("pass", `["reboot"]`, ""))
	out, code := runHealth(t, c, bin, s, node, "")
	if code != 0 || !strings.Contains(out, "resume "+node) {
		t.Fatalf("re-test, exit %d:\n%s", code, out)
	}
	c.WaitNode(t, node, 10*time.Second, func(n slurm.Node) bool { return !n.Drained() && n.ForeignState() == "" })
	t.Logf("%.1fs: re-tested and resumed", time.Since(t0).Seconds())
	if out, err := c.Command(t, "scontrol", "update", "JobId="+job, "StartTime=now"); err != nil {
		t.Fatalf("start now: %v\n%s", err, out)
	}
	// The job starts at the scheduler's next pass: the resume's own pass,
	// or, when that one came before the node's state settled on a loaded
	// machine (the job still says ReqNodeNotAvail), the periodic one a
	// sched_interval (60 s) later.
	c.WaitJob(t, job, 150*time.Second, "COMPLETED")
	if got := c.JobOutput(job); !strings.Contains(got, "ran on "+node) {
		t.Errorf("job output %q", got)
	}
	t.Logf("%.1fs: the requeued job ran on %s", time.Since(t0).Seconds(), node)
	rb, _ := c.Reboots()
	for _, e := range rb {
		if e.Node != node {
			t.Errorf("reboot log: %+v, only %s was to reboot", e, node)
		}
	}
}

// repairToService is n2's scenario: reset, reboot, NeedsService.
func repairToService(t *testing.T, c *slurmtest.Cluster, bin string) {
	node := c.Nodes[1]
	s := newSetup(t, repairProlog, "")
	resetLog := filepath.Join(s.dir, "reset.log")
	reset := filepath.Join(s.dir, "fake-nvidia-smi")
	if err := os.WriteFile(reset, []byte("#!/bin/sh\necho \"$@\" >> "+resetLog+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.write(t, repairProlog, repairConf("fail", `["reset", "reboot"]`, "")+
		fmt.Sprintf("[repair.reset]\nnvidia = [%q, \"-r\", \"-i\", \"{index}\"]\n[notify]\nmail = [\"ops\"]\n", reset))
	t0 := time.Now()

	out, code := runHealth(t, c, bin, s, node, "")
	r := lastModeReport(t, s, node, "health")
	if m := r.Action.Remedy; code != 1 || m == nil || m.Kind != report.RemedyReset || !m.Done || m.Attempt != 1 {
		t.Fatalf("first failure, exit %d, remedy %+v:\n%s", code, m, out)
	}
	if b, _ := os.ReadFile(resetLog); string(b) != "-r -i 0\n" {
		t.Errorf("reset command ran with %q, want \"-r -i 0\"", b)
	}
	t.Logf("%.1fs: first failure: gpu0 reset", time.Since(t0).Seconds())

	out, code = runHealth(t, c, bin, s, node, "")
	r = lastModeReport(t, s, node, "health")
	if m := r.Action.Remedy; code != 1 || m == nil || m.Kind != report.RemedyReboot || !m.Done || m.Attempt != 2 {
		t.Fatalf("second failure, exit %d, remedy %+v:\n%s", code, m, out)
	}
	waitBack(t, c, node, 1, func(n slurm.Node) bool { return n.State == "IDLE" && n.Drained() })
	t.Logf("%.1fs: second failure: rebooted, back drained", time.Since(t0).Seconds())

	out, code = runHealth(t, c, bin, s, node, "")
	r = lastModeReport(t, s, node, "health")
	const service = "vigil: fault-inject NeedsService gpu0 (FaultInjected, 1 reset, 1 reboot in 1h)"
	if m := r.Action.Remedy; code != 1 || m == nil || m.Kind != report.RemedyNeedsService || r.Action.Reason != service || !r.Action.Done {
		t.Fatalf("third failure, exit %d, action %+v, remedy %+v:\n%s", code, r.Action, m, out)
	}
	if n := nodeState(t, c, node); !n.Drained() || n.Reason != service {
		t.Errorf("after the third failure: %+v, want drained with %q", n, service)
	}
	mail, _ := os.ReadFile(c.MailLog)
	if !strings.Contains(string(mail), "NEEDS SERVICE") || !strings.Contains(string(mail), node) {
		t.Errorf("the admins' mail does not say it needs service:\n%s", mail)
	}
	t.Logf("%.1fs: third failure: drained for service", time.Since(t0).Seconds())

	// A passing run never resumes it.
	s.write(t, repairProlog, repairConf("pass", `["reset", "reboot"]`, ""))
	out, code = runHealth(t, c, bin, s, node, "")
	if code != 1 || !strings.Contains(out, "needs service") {
		t.Errorf("passing run, exit %d:\n%s", code, out)
	}
	if n := nodeState(t, c, node); !n.Drained() || n.Reason != service {
		t.Errorf("after a passing run: %+v, want still drained for service", n)
	}
	if rb, _ := c.Reboots(); countReboots(rb, node, "called") != 1 {
		t.Errorf("reboots of %s: %+v, want one", node, rb)
	}
}

// repairNextStateDown is n3's scenario: the reboot's nextstate=DOWN.
func repairNextStateDown(t *testing.T, c *slurmtest.Cluster, bin string) {
	node := c.Nodes[2]
	s := newSetup(t, repairProlog, repairConf("fail", `["reboot"]`, `reboot_nextstate = "down"`))
	t0 := time.Now()
	out, code := runHealth(t, c, bin, s, node, "")
	r := lastModeReport(t, s, node, "health")
	if m := r.Action.Remedy; code != 1 || m == nil || m.Kind != report.RemedyReboot || !m.Done || !slices.Contains(m.Command, "nextstate=DOWN") {
		t.Fatalf("failure, exit %d, remedy %+v:\n%s", code, m, out)
	}
	back := waitBack(t, c, node, 1, func(n slurm.Node) bool { return n.RebootedDown() })
	t.Logf("%.1fs: back DOWN: %s, reason %q", time.Since(t0).Seconds(), back.Fields["State"], back.Reason)
	s.write(t, repairProlog, repairConf("pass", `["reboot"]`, `reboot_nextstate = "down"`))
	out, code = runHealth(t, c, bin, s, node, "")
	if code != 0 || !strings.Contains(out, "resume "+node) {
		t.Fatalf("re-test, exit %d:\n%s", code, out)
	}
	// Up from DOWN, the node may read idle* (NOT_RESPONDING) until slurmctld's next ping.
	c.WaitNode(t, node, 30*time.Second, func(n slurm.Node) bool { return n.State == "IDLE" && !n.Drained() && n.ForeignState() == "" })
	t.Logf("%.1fs: re-tested and resumed", time.Since(t0).Seconds())
}

// waitBack waits until node's slurmd was restarted by the RebootProgram
// for the nth time and Slurm shows it back (no reboot pending, responding,
// and as back says).
func waitBack(t *testing.T, c *slurmtest.Cluster, node string, nth int, back func(slurm.Node) bool) slurm.Node {
	t.Helper()
	return c.WaitNode(t, node, 90*time.Second, func(n slurm.Node) bool {
		rb, _ := c.Reboots()
		return countReboots(rb, node, "restarted") >= nth && !n.Is("REBOOT_REQUESTED") && !n.Is("REBOOT_ISSUED") &&
			!n.Is("NOT_RESPONDING") && back(n)
	})
}

func countReboots(rb []slurmtest.Reboot, node, event string) int {
	n := 0
	for _, e := range rb {
		if e.Node == node && e.Event == event {
			n++
		}
	}
	return n
}

// runHealth runs a health run of node with s's config and state.
func runHealth(t *testing.T, c *slurmtest.Cluster, bin string, s e2eSetup, node, faultMode string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, "--health", "--node", node, "--config", s.config)
	cmd.Env = append(append(os.Environ(), c.Env...), "VIGIL_SLURM_BIN_DIR="+c.Client().BinDir, "VIGIL_STATE_DIR="+s.stateDir())
	if faultMode != "" {
		cmd.Env = append(cmd.Env, "VIGIL_FAULT_INJECT="+faultMode)
	}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return string(out), 0
}

// lastModeReport is the newest report of node and mode in s.
func lastModeReport(t *testing.T, s e2eSetup, node, mode string) report.Report {
	t.Helper()
	var last report.Report
	for _, r := range s.waitReports(t, func(r report.Report) bool { return r.Node == node && r.Mode == mode }) {
		if r.Node == node && r.Mode == mode && r.Start.After(last.Start) {
			last = r
		}
	}
	if last.Mode == "" {
		t.Fatalf("no %s report of %s in %s", mode, node, s.reports)
	}
	return last
}
