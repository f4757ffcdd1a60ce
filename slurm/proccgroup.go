package slurm

import (
	"strconv"
	"strings"
)

// ProcCgroup is one line of /proc/PID/cgroup.
type ProcCgroup struct {
	Controllers string // "freezer", "cpu,cpuacct"; "" for cgroup v2
	Path        string // the cgroup's path under its hierarchy's root
}

// ParseProcCgroup reads /proc/PID/cgroup ("6:freezer:/slurm/uid_1000/job_7",
// "0::/system.slice/slurmstepd.scope/job_7").
func ParseProcCgroup(b []byte) []ProcCgroup {
	var out []ProcCgroup
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 {
			out = append(out, ProcCgroup{Controllers: f[1], Path: f[2]})
		}
	}
	return out
}

// JobIDs returns the Slurm job ids that the cgroup paths of a
// /proc/PID/cgroup name: every path segment job_<digits>, in any
// hierarchy (v1's /slurm[_node]/uid_U/job_J/..., v2's
// .../slurmstepd.scope/job_J/...).
func JobIDs(cgroups []ProcCgroup) map[string]bool {
	jobs := map[string]bool{}
	for _, cg := range cgroups {
		for _, seg := range strings.Split(cg.Path, "/") {
			id, ok := strings.CutPrefix(seg, "job_")
			if _, err := strconv.ParseUint(id, 10, 64); ok && err == nil {
				jobs[id] = true
			}
		}
	}
	return jobs
}
