package slurm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestKillJobCgroupRealV2 builds a job's v2 layout in a cgroup of its own
// under the host's cgroup2 mount (root only), puts a process in a task
// directory and one in the step's slurm/ (as slurmstepd sits there), and
// kills them with KillJobCgroup: both die through cgroup.kill and the
// whole tree is removed, deepest first.
func TestKillJobCgroupRealV2(t *testing.T) {
	const mount = "/sys/fs/cgroup/unified"
	var st syscall.Statfs_t
	if os.Geteuid() != 0 || syscall.Statfs(mount, &st) != nil || st.Type != 0x63677270 {
		t.Skip("needs root and a cgroup2 mount at " + mount)
	}
	top := filepath.Join(mount, fmt.Sprintf("vstkill%d", os.Getpid()))
	job := filepath.Join(top, "system.slice", "n1_slurmstepd.scope", "job_7")
	t.Cleanup(func() { _ = rmdirTree(top) })
	var pids []int
	for _, d := range []string{"step_0/user/task_0", "step_0/slurm"} {
		dir := filepath.Join(job, d)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = cmd.Wait() }() // reap, so that the dead process leaves the cgroup
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, cmd.Process.Pid)
	}
	j, err := FindJobCgroup(top, "7", 0, "n1")
	if err != nil {
		t.Fatal(err)
	}
	killed, err := KillJobCgroup(j, 5*time.Second, time.Sleep)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pids)
	if !slices.Equal(killed, pids) {
		t.Errorf("killed %v, want %v", killed, pids)
	}
	if _, err := os.Stat(job); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("job cgroup still there: %v", err)
	}
	if _, err := FindJobCgroup(top, "7", 0, "n1"); !errors.Is(err, ErrNoJobCgroup) {
		t.Errorf("FindJobCgroup after the kill: %v", err)
	}
}

func TestKillJobCgroupGone(t *testing.T) {
	_, err := KillJobCgroup(JobCgroup{Version: 2, Dir: filepath.Join(t.TempDir(), "job_1")}, time.Second, time.Sleep)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want ErrNotExist", err)
	}
}
