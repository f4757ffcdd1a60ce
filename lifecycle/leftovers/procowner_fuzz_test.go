package leftovers

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzProcOwner: /proc/PID/cgroup and /proc/PID/status of another user's
// process (whose cgroup paths and process name that user shapes) parse
// without a panic; a job id read from a cgroup is all digits and was a
// "job_" segment of the content; the uids of a status come from its Uid:
// line.
func FuzzProcOwner(f *testing.F) {
	f.Add([]byte("4:freezer:/slurm_n1/uid_1000/job_42/step_0\n0::/system.slice/n1_slurmstepd.scope/job_42/step_0/user/task_0\n"),
		[]byte("Name:\tpython\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n"))
	f.Add([]byte("0::/user.slice/job_42x/job_/job_0043\n"), []byte("Name:\tjob_42\nUid:\t0\t0\t0\t0\n"))
	f.Add([]byte("garbage"), []byte("Uid:\tx\n"))
	f.Fuzz(func(t *testing.T, cgroup, status []byte) {
		for id := range cgroupJobs(cgroup) {
			if _, err := strconv.ParseUint(id, 10, 64); err != nil || !strings.Contains(string(cgroup), "job_"+id) {
				t.Fatalf("job id %q from %q", id, cgroup)
			}
		}
		if uids, ok := statusUIDs(status); ok {
			if len(uids) == 0 || !strings.Contains(string(status), "Uid:") {
				t.Fatalf("uids %v from %q", uids, status)
			}
		}
	})
}
