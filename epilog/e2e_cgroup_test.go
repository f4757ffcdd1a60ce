package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestE2ECgroupLeftovers: vigil-epilog as Slurm's Epilog on cgroup v1 and
// v2 clusters of each Slurm. A job's background process is moved (by the
// test, as root) into a cgroup of its own inside the job's cgroup, where
// Slurm's step clean-up does not reach it: after scancel the process lives
// on and the job's cgroup cannot be removed. The epilog must kill it (v2:
// cgroup.kill; v1: thaw and SIGKILL), remove the job's cgroup deepest first,
// and list the PID in its report.
func TestE2ECgroupLeftovers(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/epilog")
	slurmtest.ForEachSlurmCgroup(t, func(t *testing.T, f slurmtest.Flavour, cg slurmtest.CgroupMode) {
		testE2ECgroupLeftovers(t, bin, f, cg)
	})
}

func testE2ECgroupLeftovers(t *testing.T, bin string, f slurmtest.Flavour, cg slurmtest.CgroupMode) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	reports := filepath.Join(dir, "reports")
	conf := filepath.Join(dir, "vigil.toml")
	body := fmt.Sprintf("[prolog]\nchecks = [\"fault-inject\"]\nreport_dir = %q\nrun_dir = %q\n[checks.fault-inject]\nmode = \"pass\"\n[epilog]\nrecheck = false\nkill_grace = \"1s\"\n",
		reports, filepath.Join(dir, "run"))
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "vigil-epilog.sh")
	if err := os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nexport VIGIL_STATE_DIR=%s\nexec %s --config %s \"$@\"\n", filepath.Join(dir, "state"), bin, conf)), 0o755); err != nil {
		t.Fatal(err)
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1, Epilog: wrapper, Root: f.Root, Cgroup: cg})
	node := c.Nodes[0]
	pidFile := filepath.Join(c.Dir, "jobs", "stray.pid")
	id := c.Sbatch(t, fmt.Sprintf("sleep 300 &\necho $! > %[1]s.tmp && mv %[1]s.tmp %[1]s\nwait\n", pidFile))
	c.WaitJob(t, id, 60*time.Second, "RUNNING")
	pid := waitPID(t, c, id, pidFile)
	jc, err := slurm.FindJobCgroup(c.CgroupRoot, id, 0, node)
	if err != nil {
		t.Fatalf("FindJobCgroup: %v\n%s", err, c.Dump(id))
	}
	stray := filepath.Join(jc.ProcsDir(), "stray")
	if err := os.Mkdir(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stray, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatalf("moving %d into %s: %v", pid, stray, err)
	}
	if out, err := c.Command(t, "scancel", id); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	c.WaitJob(t, id, 60*time.Second, "CANCELLED")

	r := waitEpilogReport(t, c, reports, id)
	if !slices.Contains(r.Action.Killed, pid) || !strings.Contains(strings.Join(r.Notes, "\n"), "killed processes left in the job's cgroup") {
		t.Errorf("epilog report: killed %v (want %d), notes %q", r.Action.Killed, pid, r.Notes)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the stray process %d outlived the epilog", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, d := range append(jc.Dirs(), stray) {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there after the epilog (%v)", d, err)
		}
	}
	c.WaitNode(t, node, 10*time.Second, func(n slurm.Node) bool { return !n.Drained() && n.State == "IDLE" })
}

// waitPID waits for the job to write a PID into path.
func waitPID(t *testing.T, c *slurmtest.Cluster, id, path string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s from job %s\n%s", path, id, c.Dump(id))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitEpilogReport waits for the epilog's report of job id.
func waitEpilogReport(t *testing.T, c *slurmtest.Cluster, dir, id string) report.Report {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, r := range readReports(t, dir) {
			if r.Job == id {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no epilog report for job %s in %s\n%s", id, dir, c.Dump(id))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// zombie reports whether pid is a zombie (dead, not yet reaped).
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}
