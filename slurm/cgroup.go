package slurm

// JobCgroups finds the job's cgroup directories under root (normally
// /sys/fs/cgroup) for cgroup v1 and v2 layouts; node is the slurmd name for
// hosts that run several slurmd.
func JobCgroups(root, jobID string, uid int, node string) ([]string, error) { return nil, errTODO }

// CgroupPIDs lists every PID in the cgroup subtrees of dirs, deduplicated and sorted.
func CgroupPIDs(dirs []string) ([]int, error) { return nil, errTODO }
