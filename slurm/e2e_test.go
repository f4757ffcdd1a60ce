package slurm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestE2EDrainOwnership drains and resumes a node of a real cluster through
// the Client, and checks that a node an admin drained or downed is neither
// overwritten nor resumed.
func TestE2EDrainOwnership(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, testE2EDrainOwnership)
}

func testE2EDrainOwnership(t *testing.T, f slurmtest.Flavour) {
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 3, Root: f.Root})
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ours, admin, down := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	drained := func(n slurm.Node) bool { return n.Drained() }
	notDrained := func(n slurm.Node) bool { return !n.Drained() && n.State == "IDLE" }

	// sinfoReasons maps node → reason as `sinfo -R` shows them.
	sinfoReasons := func() map[string]string {
		t.Helper()
		out, err := c.Command(t, "sinfo", "-R", "-h", "-N", "-o", "%N|%E")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		m := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if n, r, ok := strings.Cut(l, "|"); ok {
				m[n] = r
			}
		}
		return m
	}

	t.Run("vigil drain shows in sinfo -R and resumes", func(t *testing.T) {
		if err := cl.Drain(ctx, ours, "GEMMBelowThreshold gpu3 412 TFLOPS"); err != nil {
			t.Fatalf("Drain: %v\n%s", err, c.Dump(""))
		}
		n := c.WaitNode(t, ours, 30*time.Second, drained)
		if !n.OwnedByVigil() || n.Reason != "vigil: GEMMBelowThreshold gpu3 412 TFLOPS" {
			t.Errorf("after Drain: node %+v, want reason %q", n, "vigil: GEMMBelowThreshold gpu3 412 TFLOPS")
		}
		if r := sinfoReasons()[ours]; r != "vigil: GEMMBelowThreshold gpu3 412 TFLOPS" {
			t.Errorf("sinfo -R reason for %s = %q, all: %v", ours, r, sinfoReasons())
		}

		resumed, err := cl.Resume(ctx, ours)
		if err != nil || !resumed {
			t.Fatalf("Resume = %v, %v; want true, nil\n%s", resumed, err, c.Dump(""))
		}
		c.WaitNode(t, ours, 30*time.Second, notDrained)
		if r, ok := sinfoReasons()[ours]; ok {
			t.Errorf("sinfo -R still lists %s: %q", ours, r)
		}

		// Nothing to resume: not an error, and reported as not resumed.
		resumed, err = cl.Resume(ctx, ours)
		if err != nil || resumed {
			t.Errorf("Resume of an idle node = %v, %v; want false, nil", resumed, err)
		}
	})

	t.Run("admin drain is neither overwritten nor resumed", func(t *testing.T) {
		if out, err := c.Command(t, "scontrol", "update", "NodeName="+admin, "State=DRAIN", "Reason=admin: bad fan"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		c.WaitNode(t, admin, 30*time.Second, drained)

		err := cl.Drain(ctx, admin, "vigil: XID 79")
		if !errors.Is(err, slurm.ErrNotOurs) {
			t.Errorf("Drain of an admin-drained node: err = %v, want ErrNotOurs", err)
		}
		resumed, err := cl.Resume(ctx, admin)
		if resumed || (err != nil && !errors.Is(err, slurm.ErrNotOurs)) {
			t.Errorf("Resume of an admin-drained node = %v, %v; want false (nil or ErrNotOurs)", resumed, err)
		}
		n, err := cl.Node(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		if !n.Drained() || n.OwnedByVigil() || n.Reason != "admin: bad fan" {
			t.Errorf("admin-drained node changed: %+v", n)
		}
		if r := sinfoReasons()[admin]; r != "admin: bad fan" {
			t.Errorf("sinfo -R reason for %s = %q, want the admin's", admin, r)
		}
	})

	t.Run("down node is not drained", func(t *testing.T) {
		if out, err := c.Command(t, "scontrol", "update", "NodeName="+down, "State=DOWN", "Reason=admin: psu"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		c.WaitNode(t, down, 30*time.Second, func(n slurm.Node) bool { return n.Is("DOWN") })
		if err := cl.Drain(ctx, down, "vigil: XID 79"); !errors.Is(err, slurm.ErrNotOurs) {
			t.Errorf("Drain of a down node: err = %v, want ErrNotOurs", err)
		}
		if resumed, err := cl.Resume(ctx, down); resumed || (err != nil && !errors.Is(err, slurm.ErrNotOurs)) {
			t.Errorf("Resume of a down node = %v, %v; want false", resumed, err)
		}
		n, err := cl.Node(ctx, down)
		if err != nil {
			t.Fatal(err)
		}
		if !n.Is("DOWN") || n.Reason != "admin: psu" {
			t.Errorf("down node changed: %+v", n)
		}
	})
}

// TestE2EJobCgroup runs a real batch job and, while it runs, finds its
// cgroups with the layout slurmd made on this machine and lists its PIDs:
// the batch script's and its child's must be there, as in `scontrol listpids`.
func TestE2EJobCgroup(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, testE2EJobCgroup)
}

func testE2EJobCgroup(t *testing.T, f slurmtest.Flavour) {
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 3, Root: f.Root})
	if c.CgroupPlugin == "" {
		t.Fatalf("this machine has no cgroup v1 freezer hierarchy under /sys/fs/cgroup; the cluster runs proctrack/linuxproc and jobs get no cgroup")
	}
	// The job runs as nobody, as user jobs do: its cgroups sit under uid_65534.
	const uid = 65534
	// t.TempDir's parent is 0700; the cluster's jobs directory is open to all.
	out, err := os.MkdirTemp(filepath.Join(c.Dir, "jobs"), "cgroup-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o777); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`#!/bin/sh
echo $$ > %[1]s/script.tmp && mv %[1]s/script.tmp %[1]s/script.pid
sleep 300 &
echo $! > %[1]s/child.tmp && mv %[1]s/child.tmp %[1]s/child.pid
wait
`, out)
	node := c.Nodes[1]
	id := c.Sbatch(t, script, "-w", node, "--uid="+strconv.Itoa(uid), "--gid="+strconv.Itoa(uid))
	c.WaitJob(t, id, 60*time.Second, "RUNNING")

	readPID := func(name string) int {
		t.Helper()
		var pid int
		deadline := time.Now().Add(20 * time.Second)
		for {
			b, err := os.ReadFile(filepath.Join(out, name))
			if err == nil {
				if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					return pid
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s from job %s: %v\n%s", name, id, err, c.Dump(id))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	scriptPID, childPID := readPID("script.pid"), readPID("child.pid")

	j := c.JobInfo(t, id)
	if j.NodeList != node || j.UserID != "nobody(65534)" {
		t.Fatalf("job ran on %q as %q, want %q as nobody(65534)", j.NodeList, j.UserID, node)
	}
	const root = "/sys/fs/cgroup"
	jc, err := slurm.FindJobCgroup(root, id, uid, node)
	if err != nil {
		t.Fatalf("FindJobCgroup: %v\n%s", err, c.Dump(id))
	}
	t.Logf("job %s cgroups: v%d %v", id, jc.Version, jc.Dirs())
	wantFreezer := filepath.Join(root, "freezer", "slurm_"+node, "uid_"+strconv.Itoa(uid), "job_"+id)
	if jc.Version != 1 || jc.ProcsDir() != wantFreezer {
		t.Errorf("FindJobCgroup = %+v, want v1 with freezer dir %s", jc, wantFreezer)
	}
	dirs, err := slurm.JobCgroups(root, id, uid, node)
	if err != nil || !slices.Equal(dirs, jc.Dirs()) {
		t.Errorf("JobCgroups = %v, %v; want %v", dirs, err, jc.Dirs())
	}
	pids, err := slurm.CgroupPIDs(dirs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{scriptPID, childPID} {
		if !slices.Contains(pids, p) {
			t.Errorf("CgroupPIDs = %v, missing %d (script %d, child %d)", pids, p, scriptPID, childPID)
		}
	}
	// Every PID in the freezer subtree alone: the same set (proctrack/cgroup
	// tracks every process of the job there).
	fpids, err := slurm.CgroupPIDs([]string{jc.ProcsDir()})
	if err != nil || !slices.Equal(fpids, pids) {
		t.Errorf("freezer PIDs = %v, %v; all controllers %v", fpids, err, pids)
	}
	// Slurm's own view agrees.
	lp, err := c.Command(t, "scontrol", "listpids", id, node)
	if err != nil {
		t.Fatalf("%v\n%s", err, lp)
	}
	for _, p := range []int{scriptPID, childPID} {
		if !slices.ContainsFunc(strings.Split(lp, "\n"), func(l string) bool {
			f := strings.Fields(l)
			return len(f) > 0 && f[0] == strconv.Itoa(p)
		}) {
			t.Errorf("scontrol listpids %s does not list %d:\n%s", id, p, lp)
		}
	}

	// Another node of the same host has no cgroup for this job.
	if _, err := slurm.FindJobCgroup(root, id, uid, c.Nodes[0]); !errors.Is(err, slurm.ErrNoJobCgroup) {
		t.Errorf("FindJobCgroup on %s: err = %v, want ErrNoJobCgroup", c.Nodes[0], err)
	}

	// When the job ends its cgroups go away.
	if out, err := c.Command(t, "scancel", id); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	c.WaitJob(t, id, 60*time.Second, "CANCELLED")
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := slurm.FindJobCgroup(root, id, uid, node)
		if errors.Is(err, slurm.ErrNoJobCgroup) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s cancelled but its cgroup is still there (err %v)", id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if pids, err := slurm.CgroupPIDs(dirs); err == nil && len(pids) > 0 {
		t.Errorf("after the job: CgroupPIDs = %v, want none", pids)
	}
}
