package leftovers

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/slurm"
)

// Whose a process is, for the epilog's kill of what holds the job's
// devices. A GPU is not the job's alone: Slurm's gres/shard and MPS give
// one GPU to several jobs, and root's device daemons (nvidia-persistenced,
// DCGM's host engine) keep every device open. A holder is the job's when
// Slurm put it in the job's cgroup, or when every uid of it is the job's
// user's (not root) and it is in no other job's cgroup. What cannot be
// read is not the job's: vigil kills only what it can tie to the job.

// JobOwns reports whether process pid (read under root's proc/) belongs to
// job, and when not, why, in words for the report.
func JobOwns(root string, job *slurm.Job, pid int) (bool, string) {
	dir := filepath.Join(root, "proc", strconv.Itoa(pid))
	cg, err := os.ReadFile(filepath.Join(dir, "cgroup"))
	if err != nil {
		return false, fmt.Sprintf("its cgroup is unreadable (%v)", err)
	}
	jobs := cgroupJobs(cg)
	if jobs[job.ID] {
		return true, ""
	}
	delete(jobs, job.ID)
	if len(jobs) > 0 {
		return false, fmt.Sprintf("it is in the cgroup of job %s", strings.Join(slices.Sorted(maps.Keys(jobs)), ", "))
	}
	st, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return false, fmt.Sprintf("its owner is unreadable (%v)", err)
	}
	uids, ok := statusUIDs(st)
	if !ok {
		return false, "its owner is unreadable (no Uid line)"
	}
	if job.UID < 0 {
		return false, "it is not in the job's cgroup and the job's user is unknown"
	}
	if job.UID == 0 {
		// A root job's processes outside its cgroup cannot be told from
		// root's daemons.
		return false, "it is not in the job's cgroup and the job's user is root"
	}
	for _, u := range uids {
		if u != job.UID {
			return false, fmt.Sprintf("it is not in the job's cgroup and runs as uid %d, not the job's user %d", u, job.UID)
		}
	}
	return true, ""
}

// cgroupJobs returns the Slurm job ids named in /proc/PID/cgroup content b.
func cgroupJobs(b []byte) map[string]bool { return slurm.JobIDs(slurm.ParseProcCgroup(b)) }

// statusUIDs returns the real, effective, saved and file-system uids of
// /proc/PID/status content b.
func statusUIDs(b []byte) ([]int, bool) {
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "Uid:")
		if !ok {
			continue
		}
		var uids []int
		for _, f := range strings.Fields(rest) {
			u, err := strconv.Atoi(f)
			if err != nil {
				return nil, false
			}
			uids = append(uids, u)
		}
		return uids, len(uids) > 0
	}
	return nil, false
}
