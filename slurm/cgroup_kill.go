package slurm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// KillJobCgroup kills every process left in the job's cgroups and removes
// the directories, deepest first, for an epilog that finds a job's cgroup
// still there after the job (slurmstepd killed or stuck, a process Slurm
// could not end). Under v2 it writes 1 to the job directory's cgroup.kill
// (SIGKILL to the whole subtree, kernel 5.14+), falling back to SIGKILL
// by PID where there is none; under v1 it thaws each freezer directory and
// SIGKILLs each PID. It waits up to wait for the processes to go (polling
// every 20 ms, sleeping through sleep) before the rmdirs. It returns the
// PIDs it found; an error joins what could not be killed or removed.
func KillJobCgroup(j JobCgroup, wait time.Duration, sleep func(time.Duration)) ([]int, error) {
	dirs := j.Dirs()
	pids, err := CgroupPIDs(dirs)
	if err != nil {
		return nil, fmt.Errorf("slurm: kill job cgroup: %w", err)
	}
	if len(pids) > 0 {
		signalCgroup(j, dirs, pids)
		const step = 20 * time.Millisecond
		for waited := time.Duration(0); waited < wait; waited += step {
			if left, err := CgroupPIDs(dirs); err != nil || len(left) == 0 {
				break
			}
			sleep(step)
		}
	}
	var errs []error
	for _, d := range dirs {
		if err := rmdirTree(d); err != nil {
			errs = append(errs, err)
		}
	}
	return pids, errors.Join(errs...)
}

// signalCgroup sends SIGKILL to the job's processes: v2 through
// cgroup.kill, v1 (or a v2 kernel without cgroup.kill) by PID after
// thawing the freezer (a frozen process dies only once thawed).
func signalCgroup(j JobCgroup, dirs []string, pids []int) {
	if j.Version == 2 && os.WriteFile(filepath.Join(j.Dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	if fz, ok := j.Controllers["freezer"]; ok {
		for _, d := range subdirs(fz) {
			_ = os.WriteFile(filepath.Join(d, "freezer.state"), []byte("THAWED"), 0)
		}
	}
	for _, pid := range pids {
		if pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// rmdirTree removes dir and every directory below it, deepest first (a
// cgroup directory goes only with rmdir, and only once it has no children
// and no processes). What is gone already is no error.
func rmdirTree(dir string) error {
	ds := subdirs(dir)
	var errs []error
	for i := len(ds) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(ds[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("slurm: rmdir %s: %w", ds[i], err))
		}
	}
	return errors.Join(errs...)
}

// subdirs lists dir and the directories below it, parents first.
func subdirs(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}
