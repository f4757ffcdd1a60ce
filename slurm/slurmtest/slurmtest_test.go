package slurmtest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

func TestClusterRunsJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, testClusterRunsJobs)
}

func testClusterRunsJobs(t *testing.T, f slurmtest.Flavour) {
	c := slurmtest.Start(t, slurmtest.Options{GPUsPerNode: 2, Root: f.Root})
	if len(c.Nodes) != 3 {
		t.Fatalf("Nodes = %v, want 3", c.Nodes)
	}
	if out, err := c.Command(t, "scontrol", "--version"); err != nil || !strings.Contains(out, " "+f.Version) {
		t.Errorf("scontrol --version = %q (%v), want a version starting %q", out, err, f.Version)
	}
	if f.Root != "" {
		clientEntersHolder(t, c)
	}
	out, err := c.Command(t, "sinfo", "-h", "-N", "-o", "%N %T %G")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, n := range c.Nodes {
		if !strings.Contains(out, n+" idle gpu:2") {
			t.Errorf("sinfo does not show %s idle with gpu:2:\n%s", n, out)
		}
	}

	id := c.Sbatch(t, "echo hello from $SLURM_JOB_ID on $SLURMD_NODENAME gpus=$SLURM_JOB_GPUS\n", "--gres=gpu:2", "-w", c.Nodes[1])
	if st := c.WaitJob(t, id, 30*time.Second, "COMPLETED", "FAILED", "CANCELLED"); st != "COMPLETED" {
		t.Fatalf("job %s ended %s\n%s", id, st, c.Dump(id))
	}
	want := "hello from " + id + " on " + c.Nodes[1] + " gpus=0,1"
	if got := strings.TrimSpace(c.JobOutput(id)); got != want {
		t.Errorf("job output = %q, want %q", got, want)
	}
	j := c.JobInfo(t, id)
	if j.ID != id || j.NodeList != c.Nodes[1] || j.State != "COMPLETED" {
		t.Errorf("JobInfo = %+v", j)
	}
}

// clientEntersHolder checks that a client of a root's cluster enters the
// namespace the cluster's holder set up (nsenter) rather than setting up one
// of its own (unshare and eight mounts): sh -x shows the command the
// wrapper runs.
func clientEntersHolder(t *testing.T, c *slurmtest.Cluster) {
	t.Helper()
	bin := filepath.Join(c.Dir, "rootbin", "scontrol")
	cmd := exec.Command("/bin/sh", "-x", bin, "--version")
	cmd.Env = append(os.Environ(), c.Env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), " 24.11") {
		t.Errorf("%s --version = %q (%v)\n%s", bin, out, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "exec /usr/bin/nsenter -t ") || strings.Contains(stderr.String(), "unshare") {
		t.Errorf("scontrol did not enter the holder's namespace:\n%s", stderr.String())
	}
}

func TestPrologWrappedWithConf(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, testPrologWrappedWithConf)
}

func testPrologWrappedWithConf(t *testing.T, f slurmtest.Flavour) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "prolog.log")
	prolog := filepath.Join(dir, "prolog")
	// The prolog proves it sees this cluster: scontrol (found on PATH) with
	// SLURM_CONF reaches slurmctld and shows the job.
	script := "#!/bin/sh\n{ echo \"conf=$SLURM_CONF job=$SLURM_JOB_ID\"; scontrol show job \"$SLURM_JOB_ID\" | head -1; } >> " + log + " 2>&1\n"
	if err := os.WriteFile(prolog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1, Prolog: prolog, PrologFlags: "Alloc", Root: f.Root})
	id := c.Sbatch(t, "true\n")
	c.WaitJob(t, id, 30*time.Second, "COMPLETED")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if !strings.Contains(got, "conf="+c.Conf+" job="+id) || !strings.Contains(got, "JobId="+id) {
		t.Errorf("prolog log:\n%s", got)
	}
}

func TestWaitNodeAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2})
	n := c.Nodes[0]
	if out, err := c.Command(t, "scontrol", "update", "NodeName="+n, "State=DRAIN", "Reason=admin: bad fan"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := c.WaitNode(t, n, 10*time.Second, func(x slurm.Node) bool { return len(x.Flags) > 0 })
	if got.State != "IDLE" || got.Flags[0] != "DRAIN" || !strings.HasPrefix(got.Reason, "admin: bad fan") {
		t.Errorf("node = %+v", got)
	}
	c.Restart(t)
	id := c.Sbatch(t, "true\n", "-w", c.Nodes[1])
	c.WaitJob(t, id, 30*time.Second, "COMPLETED")
}

func TestBuildBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	p := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/slurm/slurmtest/testdata/hello")
	if p2 := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/slurm/slurmtest/testdata/hello"); p2 != p {
		t.Errorf("second build %s != %s", p2, p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v", fi.Mode())
	}
}

func TestHealthCheckAndMail(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, testHealthCheckAndMail)
}

func testHealthCheckAndMail(t *testing.T, f slurmtest.Flavour) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "hc.log")
	hc := filepath.Join(dir, "hc")
	script := "#!/bin/sh\necho \"node=$SLURMD_NODENAME conf=$SLURM_CONF path=$PATH\" >> " + log + "\n"
	if err := os.WriteFile(hc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, HealthCheckProgram: hc, HealthCheckInterval: 1, Root: f.Root})
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(log)
		if strings.Contains(string(b), "conf="+c.Conf) && strings.Contains(string(b), "/usr/bin") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health check did not run with SLURM_CONF and PATH; log:\n%s\n%s", b, c.Dump(""))
		}
		time.Sleep(50 * time.Millisecond)
	}

	id := c.Sbatch(t, "true\n", "--mail-type=END", "--mail-user=alice")
	c.WaitJob(t, id, 30*time.Second, "COMPLETED")
	for {
		b, _ := os.ReadFile(c.MailLog)
		if strings.Contains(string(b), "alice") && strings.Contains(string(b), "Job_id="+id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no mail for job %s in %s:\n%s", id, c.MailLog, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestParallelClusters starts clusters at the same time: their ports, node
// names and cgroups never collide.
func TestParallelClusters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Slurm clusters")
	}
	for i := 0; i < 3; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			c := slurmtest.Start(t, slurmtest.Options{Nodes: 2})
			id := c.Sbatch(t, "sleep 1\n", "-N", "2")
			c.WaitJob(t, id, 60*time.Second, "COMPLETED")
		})
	}
}

// TestReboot: with Options.Reboot, scontrol reboot runs its whole cycle on
// one node of several on the machine: slurmctld issues the reboot, slurmd
// runs the harness's RebootProgram, which restarts that node's slurmd
// alone (in a time namespace that has just booted), and the node is back, its drain kept (no ASAP, no
// nextstate), with Slurm's notes on its reason.
func TestReboot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, func(t *testing.T, f slurmtest.Flavour) {
		c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, Reboot: true, ResumeTimeout: 60, Root: f.Root})
		node, other := c.Nodes[0], c.Nodes[1]
		if out, err := c.Command(t, "scontrol", "update", "NodeName="+node, "State=DRAIN", "Reason=test: reboot me"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		t0 := time.Now()
		if out, err := c.Command(t, "scontrol", "reboot", "reason=test: reboot me", node); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		pending := c.WaitNode(t, node, 10*time.Second, func(n slurm.Node) bool { return n.Is("REBOOT_REQUESTED") || n.Is("REBOOT_ISSUED") })
		back := c.WaitNode(t, node, 60*time.Second, func(n slurm.Node) bool {
			return !n.Is("REBOOT_REQUESTED") && !n.Is("REBOOT_ISSUED") && n.State == "IDLE"
		})
		t.Logf("pending %s+%v %q; back %s+%v %q after %.1fs", pending.State, pending.Flags, pending.Reason, back.State, back.Flags, back.Reason, time.Since(t0).Seconds())
		if !back.Drained() || !strings.HasPrefix(back.Reason, "test: reboot me") {
			t.Errorf("back: %+v, want drained with the reason kept", back)
		}
		rb, err := c.Reboots()
		if err != nil {
			t.Fatal(err)
		}
		if len(rb) != 2 || rb[0].Node != node || rb[0].Event != "called" || rb[1].Node != node || rb[1].Event != "restarted" {
			t.Errorf("reboots %+v, want %s called then restarted", rb, node)
		}
		if n := c.WaitNode(t, other, time.Second, func(slurm.Node) bool { return true }); n.State != "IDLE" || n.Drained() {
			t.Errorf("the other node: %+v", n)
		}
		// The boot Slurm records lies between the RebootProgram's call and
		// the restart, and the registrations that follow do not read as
		// another reboot ("Node unexpectedly rebooted", DOWN).
		time.Sleep(5 * time.Second)
		n := c.WaitNode(t, node, time.Second, func(slurm.Node) bool { return true })
		boot, err := time.ParseInLocation("2006-01-02T15:04:05", n.Fields["BootTime"], time.Local)
		if err != nil || len(rb) != 2 || boot.Before(rb[0].At.Truncate(time.Second)) || boot.After(rb[1].At) {
			t.Errorf("BootTime %q (%v), want between the call and the restart %+v", n.Fields["BootTime"], err, rb)
		}
		if n.State != "IDLE" || strings.Contains(n.Reason, "unexpectedly rebooted") {
			t.Errorf("5 s after the reboot: %s %q", n.State, n.Reason)
		}
	})
}
