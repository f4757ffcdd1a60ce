package slurm_test

import (
	"errors"
	"flag"
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

var cgroupCapture = flag.String("capture-cgroup", "", "record the v2 clusters' job cgroup trees under this directory (testdata/cgroup) while TestE2EJobCgroup runs")

// TestE2EJobCgroup runs real jobs on one cluster per Slurm and cgroup
// plugin (v1, and v2 as production lays it out: see slurmtest.CgroupV2)
// and, while they run, finds their cgroups in the layout slurmd made and
// lists their PIDs and tasks. With -capture-cgroup DIR it also records the
// v2 trees as fixtures (DIR/v2real-<version>).
func TestE2EJobCgroup(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurmCgroup(t, func(t *testing.T, f slurmtest.Flavour, cg slurmtest.CgroupMode) {
		// Contain: every job gets an extern step (user/task_special under v2).
		c := slurmtest.Start(t, slurmtest.Options{Nodes: 3, Root: f.Root, Cgroup: cg, PrologFlags: "Contain"})
		if c.CgroupPlugin == "" {
			t.Fatalf("this machine has no cgroup v1 freezer hierarchy under /sys/fs/cgroup; the cluster runs proctrack/linuxproc and jobs get no cgroup")
		}
		t.Run("batch", func(t *testing.T) { testE2EJobCgroupBatch(t, c, cg) })
		t.Run("tasks", func(t *testing.T) { testE2EJobCgroupTasks(t, c, cg) })
	})
}

// jobDir makes a directory under the cluster's jobs directory that every
// job user may write (t.TempDir's parent is 0700).
func jobDir(t *testing.T, c *slurmtest.Cluster, name string) string {
	t.Helper()
	out, err := os.MkdirTemp(filepath.Join(c.Dir, "jobs"), name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o777); err != nil {
		t.Fatal(err)
	}
	return out
}

// readPID waits (20 s at most) for a job to write a PID into dir/name.
func readPID(t *testing.T, c *slurmtest.Cluster, id, dir, name string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			if pid, err := strconv.Atoi(strings.Fields(string(b) + " x")[0]); err == nil {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s from job %s: %v\n%s", name, id, err, c.Dump(id))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testE2EJobCgroupBatch: a batch job as nobody and its child are in the
// job's cgroup, as in `scontrol listpids`; another node has none; the
// cgroup goes when the job ends.
func testE2EJobCgroupBatch(t *testing.T, c *slurmtest.Cluster, cg slurmtest.CgroupMode) {
	// The job runs as nobody, as user jobs do: under v1 its cgroups sit under uid_65534.
	const uid = 65534
	out := jobDir(t, c, "cgroup")
	script := fmt.Sprintf(`#!/bin/sh
echo $$ > %[1]s/script.tmp && mv %[1]s/script.tmp %[1]s/script.pid
sleep 300 &
echo $! > %[1]s/child.tmp && mv %[1]s/child.tmp %[1]s/child.pid
wait
`, out)
	node := c.Nodes[1]
	id := c.Sbatch(t, script, "-w", node, "--uid="+strconv.Itoa(uid), "--gid="+strconv.Itoa(uid))
	c.WaitJob(t, id, 60*time.Second, "RUNNING")
	scriptPID, childPID := readPID(t, c, id, out, "script.pid"), readPID(t, c, id, out, "child.pid")
	if j := c.JobInfo(t, id); j.NodeList != node || j.UserID != "nobody(65534)" {
		t.Fatalf("job ran on %q as %q, want %q as nobody(65534)", j.NodeList, j.UserID, node)
	}
	root := c.CgroupRoot
	jc, err := slurm.FindJobCgroup(root, id, uid, node)
	if err != nil {
		t.Fatalf("FindJobCgroup: %v\n%s", err, c.Dump(id))
	}
	t.Logf("job %s cgroups: v%d %v", id, jc.Version, jc.Dirs())
	want := jobCgroupWant(root, cg, node, uid, id)
	if jc.Version != want.Version || jc.ProcsDir() != want.ProcsDir() {
		t.Errorf("FindJobCgroup = %+v, want v%d with processes under %s", jc, want.Version, want.ProcsDir())
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
	// The subtree of ProcsDir alone holds every process of the job.
	if ppids, err := slurm.CgroupPIDs([]string{jc.ProcsDir()}); err != nil || !slices.Equal(ppids, pids) {
		t.Errorf("ProcsDir PIDs = %v, %v; all directories %v", ppids, err, pids)
	}
	checkListPIDs(t, c, id, node, scriptPID, childPID)
	if _, err := slurm.FindJobCgroup(root, id, uid, c.Nodes[0]); !errors.Is(err, slurm.ErrNoJobCgroup) {
		t.Errorf("FindJobCgroup on %s: err = %v, want ErrNoJobCgroup", c.Nodes[0], err)
	}
	if out, err := c.Command(t, "scancel", id); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	c.WaitJob(t, id, 60*time.Second, "CANCELLED")
	waitNoJobCgroup(t, c, root, id, uid, node)
	if pids, err := slurm.CgroupPIDs(dirs); err == nil && len(pids) > 0 {
		t.Errorf("after the job: CgroupPIDs = %v, want none", pids)
	}
}

// jobCgroupWant is where slurmd puts a job's cgroup on this machine: v1
// freezer under slurm_<node>/uid_<uid>, v2 under the node's scope.
func jobCgroupWant(root string, cg slurmtest.CgroupMode, node string, uid int, id string) slurm.JobCgroup {
	if cg == slurmtest.CgroupV2 {
		return slurm.JobCgroup{Version: 2, Dir: filepath.Join(root, "system.slice", node+"_slurmstepd.scope", "job_"+id)}
	}
	return slurm.JobCgroup{Version: 1, Controllers: map[string]string{
		"freezer": filepath.Join(root, "freezer", "slurm_"+node, "uid_"+strconv.Itoa(uid), "job_"+id)}}
}

// checkListPIDs: Slurm's own view (scontrol listpids) holds the PIDs.
func checkListPIDs(t *testing.T, c *slurmtest.Cluster, id, node string, pids ...int) {
	t.Helper()
	lp, err := c.Command(t, "scontrol", "listpids", id, node)
	if err != nil {
		t.Fatalf("%v\n%s", err, lp)
	}
	for _, p := range pids {
		if !slices.ContainsFunc(strings.Split(lp, "\n"), func(l string) bool {
			f := strings.Fields(l)
			return len(f) > 0 && f[0] == strconv.Itoa(p)
		}) {
			t.Errorf("scontrol listpids %s does not list %d:\n%s", id, p, lp)
		}
	}
}

// waitNoJobCgroup waits (20 s at most) until the job's cgroup is gone.
func waitNoJobCgroup(t *testing.T, c *slurmtest.Cluster, root, id string, uid int, node string) {
	t.Helper()
	// slurmstepd removes the job's cgroup once its processes are gone; on
	// a loaded 2-core machine that took more than 20 s after Slurm called
	// the job cancelled (Slurm 24.11, cgroup v2).
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := slurm.FindJobCgroup(root, id, uid, node)
		if errors.Is(err, slurm.ErrNoJobCgroup) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s ended but its cgroup on %s is still there (err %v)\n%s\n%s", id, node, err, cgroupLeft(root, id, uid, node), c.Dump(id))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cgroupLeft says what holds a job cgroup that outlived its job: each
// directory and its processes, with their name and state from /proc.
func cgroupLeft(root, id string, uid int, node string) string {
	dirs, err := slurm.JobCgroups(root, id, uid, node)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, d := range dirs {
		pids, _ := slurm.CgroupPIDs([]string{d})
		fmt.Fprintf(&b, "%s: processes %v\n", d, pids)
		for _, p := range pids {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
			fmt.Fprintf(&b, "  %d: %s\n", p, strings.TrimSpace(string(st)))
		}
	}
	return b.String()
}

// testE2EJobCgroupTasks: a two-task step over two nodes (one task each)
// beside the batch step. Each node's job cgroup holds its task's PID in a
// task directory of step 0, named by the node-local task id (Slurm 22.05
// under v2: task_0 on both nodes) or the global one (24.11, and 22.05's v1
// cpuacct: task_0 and task_1).
func testE2EJobCgroupTasks(t *testing.T, c *slurmtest.Cluster, cg slurmtest.CgroupMode) {
	out := jobDir(t, c, "tasks")
	script := fmt.Sprintf(`#!/bin/sh
srun -N2 -n2 --ntasks-per-node=1 sh -c 'echo $$ > %[1]s/task-$SLURM_PROCID.pid; exec sleep 300' &
echo $$ > %[1]s/batch.pid
wait
`, out)
	nodes := []string{c.Nodes[0], c.Nodes[2]}
	id := c.Sbatch(t, script, "-N2", "-w", strings.Join(nodes, ","))
	c.WaitJob(t, id, 60*time.Second, "RUNNING")
	batch := readPID(t, c, id, out, "batch.pid")
	ranks := []int{readPID(t, c, id, out, "task-0.pid"), readPID(t, c, id, out, "task-1.pid")}
	// Measured: 22.05's v2 numbers tasks by local id, its v1 (cpuacct) and
	// 24.11 by global id.
	global := strings.HasPrefix(c.Version, "24.") || cg == slurmtest.CgroupV1
	if *cgroupCapture != "" && cg == slurmtest.CgroupV2 {
		captureCgroupTree(t, c, id, filepath.Join(*cgroupCapture, "v2real-"+c.Version[:5]))
	}
	for rank, node := range nodes {
		jc, err := slurm.FindJobCgroup(c.CgroupRoot, id, 0, node)
		if err != nil {
			t.Fatalf("FindJobCgroup on %s: %v\n%s", node, err, c.Dump(id))
		}
		tasks, err := jc.Tasks()
		if err != nil {
			t.Fatal(err)
		}
		wantID := 0
		if global {
			wantID = rank
		}
		found := false
		for _, tk := range tasks {
			pids, _ := slurm.CgroupPIDs([]string{tk.Dir})
			t.Logf("%s: %+v pids %v", node, tk, pids)
			if slices.Contains(pids, ranks[rank]) {
				found = true
				if tk.Step != "0" || tk.ID != wantID || tk.Special {
					t.Errorf("rank %d (pid %d) on %s is in %+v, want step 0 task %d", rank, ranks[rank], node, tk, wantID)
				}
			}
			if slices.Contains(pids, batch) && (node != nodes[0] || tk.Step != "batch") {
				t.Errorf("the batch script (pid %d) is in %+v on %s", batch, tk, node)
			}
		}
		if !found {
			t.Errorf("rank %d (pid %d) is in no task directory on %s: %+v", rank, ranks[rank], node, tasks)
		}
	}
	if out, err := c.Command(t, "scancel", id); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	c.WaitJob(t, id, 60*time.Second, "CANCELLED")
	for _, node := range nodes {
		waitNoJobCgroup(t, c, c.CgroupRoot, id, 0, node)
	}
}
