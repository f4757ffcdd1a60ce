// Package leftovers is the epilog's clean-up of what a job left on its
// node: the processes still in its cgroup, and those of the job that still
// hold its accelerators. It kills only what it can tie to the job: other
// jobs sharing a GPU and root's device daemons are left alone, and a
// process it cannot read is not the job's.
package leftovers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/internal/vendors"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// DeviceHolders finds the processes that hold device files open.
type DeviceHolders interface {
	// Holders returns the PIDs with an open file descriptor on any of
	// devices (absolute paths such as /dev/nvidia3), sorted.
	Holders(devices []string) ([]int, error)
}

// ProcFS finds device holders by reading /proc/PID/fd links under Root
// ("/" in production; tests point it at a fixture tree).
type ProcFS struct {
	// Root is the file system root that holds proc/.
	Root string
	// Self is a PID never reported (vigil itself); 0 means os.Getpid().
	Self int
}

// Holders implements DeviceHolders. Processes that vanish or whose fds
// cannot be read while scanning are skipped.
func (p ProcFS) Holders(devices []string) ([]int, error) {
	if len(devices) == 0 {
		return nil, nil
	}
	want := map[string]bool{}
	for _, d := range devices {
		want[d] = true
	}
	self := p.Self
	if self == 0 {
		self = os.Getpid()
	}
	procDir := filepath.Join(p.Root, "proc")
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return nil, fmt.Errorf("lifecycle: listing processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		fds, err := os.ReadDir(filepath.Join(procDir, e.Name(), "fd"))
		if err != nil {
			continue // gone, or a kernel thread we may not read
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(procDir, e.Name(), "fd", fd.Name()))
			if err == nil && want[target] {
				pids = append(pids, pid)
				break
			}
		}
	}
	sort.Ints(pids)
	return pids, nil
}

// Signaler sends signals to processes.
type Signaler interface {
	// Signal sends sig to pid; a process that is already gone is not an error.
	Signal(pid int, sig syscall.Signal) error
	// Alive reports whether pid still exists (and is not a zombie).
	Alive(pid int) bool
}

// OSSignaler signals real processes.
type OSSignaler struct{}

// Signal implements Signaler.
func (OSSignaler) Signal(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("lifecycle: signal %v to %d: %w", sig, pid, err)
	}
	return nil
}

// Alive implements Signaler.
func (OSSignaler) Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// The state follows the command name in parentheses.
	s := string(b)
	if i := lastIndex(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

func lastIndex(s string, c byte) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// KillHolders sends SIGTERM to pids, waits up to grace for them to go
// (polling through sleep), then SIGKILLs the rest. It returns the PIDs it
// signalled.
func KillHolders(s Signaler, pids []int, grace time.Duration, sleep func(time.Duration)) ([]int, error) {
	var errs []error
	var hit []int
	for _, pid := range pids {
		if err := s.Signal(pid, syscall.SIGTERM); err != nil {
			errs = append(errs, err)
			continue
		}
		hit = append(hit, pid)
	}
	const step = 100 * time.Millisecond
	for waited := time.Duration(0); waited < grace && anyAlive(s, hit); waited += step {
		sleep(step)
	}
	for _, pid := range hit {
		if s.Alive(pid) {
			if err := s.Signal(pid, syscall.SIGKILL); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return hit, errors.Join(errs...)
}

func anyAlive(s Signaler, pids []int) bool {
	for _, p := range pids {
		if s.Alive(p) {
			return true
		}
	}
	return false
}

// JobDevices returns the device files of the job's accelerators under root
// ("/" in production): for each index N, the device node N of every vendor
// of the table (vendors.Row.DevNodePath). No indices means none: on a
// shared node vigil never kills what it cannot tie to the job.
func JobDevices(root string, indices []int) []string {
	var out []string
	for _, i := range indices {
		for _, r := range vendors.Table {
			out = append(out, r.DevNodePath(root, i))
		}
	}
	return out
}

// Env is where and how Kill looks and kills.
type Env struct {
	// Root is the file system root that holds proc/, dev/ and sys/fs/cgroup ("/" in production).
	Root string
	// Holders finds the processes holding the job's devices; nil means ProcFS at Root.
	Holders DeviceHolders
	// Signaler kills them; nil means OSSignaler.
	Signaler Signaler
	// Sleep waits between SIGTERM and SIGKILL; nil means time.Sleep.
	Sleep func(time.Duration)
	// DryRun notes what would be killed and kills nothing.
	DryRun bool
}

// Kill kills what is left of job on this node (epilog), as e
// says: the processes in its cgroup, then those of the job that still hold
// its devices (o's Root, Holders, Signaler, Sleep and DryRun). A device
// holder is the job's only when JobOwns says so: other users' jobs sharing
// the GPU (shards, MPS) and the device daemons (nvidia-persistenced, DCGM)
// hold the same files and are left alone. The PIDs killed go into
// act.Killed.
// Notes (what was left alone, what could not be read or killed) go through
// note, formatted as by fmt.Sprintf.
func Kill(job *slurm.Job, e config.Epilog, o Env, act *report.Action, log logrus.FieldLogger, note func(format string, args ...any)) {
	if !e.KillProcesses || job == nil {
		return
	}
	killCgroupLeftovers(job, e, o, act, log, note)
	if len(job.GPUs) == 0 {
		return
	}
	h := o.Holders
	if h == nil {
		h = ProcFS{Root: o.Root}
	}
	holders, err := h.Holders(JobDevices(o.Root, job.GPUs))
	if err != nil {
		note("finding processes on the job's devices: %v", err)
		return
	}
	var pids []int
	for _, pid := range holders {
		if ok, why := JobOwns(o.Root, job, pid); ok {
			pids = append(pids, pid)
		} else {
			note("left alone process %d on the job's devices: %s", pid, why)
		}
	}
	if len(pids) == 0 {
		return
	}
	if o.DryRun {
		note("would kill processes of the job still holding its devices: %v", pids)
		return
	}
	sig := o.Signaler
	if sig == nil {
		sig = OSSignaler{}
	}
	sleep := o.Sleep
	if sleep == nil {
		sleep = time.Sleep
	}
	killed, err := KillHolders(sig, pids, e.KillGrace, sleep)
	act.Killed = append(act.Killed, killed...)
	if err != nil {
		note("killing leftover processes: %v", err)
	}
	log.WithField("pids", fmt.Sprint(killed)).Warn("killed processes of the job left on its devices")
}

// killCgroupLeftovers empties and removes the job's cgroup when it outlived
// the job: by the time slurmd runs the epilog every step has ended and
// slurmstepd has removed the cgroup, so one still there holds leftovers
// (v2: cgroup.kill, then rmdir deepest first; v1: thaw, SIGKILL, rmdir).
// No cgroup, or no cgroup hierarchy at Root, is the normal case and quiet.
func killCgroupLeftovers(job *slurm.Job, e config.Epilog, o Env, act *report.Action, log logrus.FieldLogger, note func(format string, args ...any)) {
	root := filepath.Join(o.Root, "sys", "fs", "cgroup")
	jc, err := slurm.FindJobCgroup(root, job.ID, job.UID, job.NodeName)
	if errors.Is(err, slurm.ErrNoJobCgroup) || errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		note("finding the job's cgroup: %v", err)
		return
	}
	pids, err := slurm.CgroupPIDs(jc.Dirs())
	if err != nil || len(pids) == 0 {
		return // gone meanwhile, or empty: slurmstepd's own rmdir is racing us
	}
	if o.DryRun {
		note("would kill processes left in the job's cgroup %s: %v", jc.ProcsDir(), pids)
		return
	}
	sleep := o.Sleep
	if sleep == nil {
		sleep = time.Sleep
	}
	// SIGKILL from cgroup.kill needs no grace, only time to land.
	killed, err := slurm.KillJobCgroup(jc, max(e.KillGrace, 2*time.Second), sleep)
	act.Killed = append(act.Killed, killed...)
	if err != nil {
		note("cleaning the job's cgroup: %v", err)
	}
	note("killed processes left in the job's cgroup %s: %v", jc.ProcsDir(), killed)
	log.WithFields(logrus.Fields{"pids": fmt.Sprint(killed), "cgroup": jc.ProcsDir()}).Warn("killed processes left in the job's cgroup")
}
