package spanktest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestJobCgroups runs the plugin's job_cgroups_in (the selftest driver)
// on the /proc/self/cgroup lines of an extern step's slurmstepd, under a
// directory standing for /sys/fs/cgroup: on cgroup v1 the job's directory
// of each controller that holds the job (named hierarchies left alone);
// on cgroup v2 a leaf of the job's own, job_<id>/vigil_watch, made beside
// its steps (a v2 process lives in a leaf, and slurmstepd kills the
// extern step's cgroup, with a watcher in it, before slurm_spank_exit
// lets it send the digest of a job that failed); after that, the
// driver removes them as slurm_spank_exit does: the v2 leaf and its job
// directory, once empty.
func TestJobCgroups(t *testing.T) {
	bin := selftest(t)
	for _, tc := range []struct {
		name  string
		lines string
		dirs  []string // made before, under mnt
		want  []string // printed, under mnt
	}{
		{name: "v1",
			lines: "12:freezer:/slurm_n1/uid_0/job_42/step_extern\n11:memory,cpuacct:/slurm_n1/uid_0/job_42/step_extern/task_0\n" +
				"1:name=systemd:/system.slice/slurmd.service\n0::/system.slice/slurmd.service\n",
			dirs: []string{"freezer/slurm_n1/uid_0/job_42", "memory/slurm_n1/uid_0/job_42"},
			want: []string{"freezer/slurm_n1/uid_0/job_42", "memory/slurm_n1/uid_0/job_42"}},
		{name: "v2",
			lines: "0::/system.slice/n1_slurmstepd.scope/job_42/step_extern/slurm\n",
			dirs:  []string{"system.slice/n1_slurmstepd.scope/job_42/step_extern/slurm"},
			want:  []string{"system.slice/n1_slurmstepd.scope/job_42/vigil_watch"}},
		{name: "v2 another job", lines: "0::/system.slice/n1_slurmstepd.scope/job_421/step_extern/slurm\n",
			dirs: []string{"system.slice/n1_slurmstepd.scope/job_421/step_extern/slurm"}},
		{name: "v2 outside any job", lines: "0::/system.slice/slurmd.service\n", dirs: []string{"system.slice/slurmd.service"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := t.TempDir()
			for _, d := range tc.dirs {
				if err := os.MkdirAll(filepath.Join(mnt, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			file := filepath.Join(t.TempDir(), "cgroup")
			if err := os.WriteFile(file, []byte(tc.lines), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "job-cgroups", file, mnt, "42").CombinedOutput()
			if err != nil {
				t.Fatalf("selftest job-cgroups: %v\n%s", err, out)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, filepath.Join(mnt, w))
			}
			if got := strings.Fields(string(out)); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("job cgroups %q, want %q", got, want)
			}
			for _, w := range want {
				if _, err := os.Stat(w); !os.IsNotExist(err) {
					t.Errorf("%s is still there after the exit's clean-up (%v)", w, err)
				}
			}
			if tc.name == "v2" {
				// The job's directory is left while a step's is in it (rmdir
				// removes only an empty directory).
				if _, err := os.Stat(filepath.Join(mnt, "system.slice/n1_slurmstepd.scope/job_42/step_extern")); err != nil {
					t.Errorf("the job's step directory was removed: %v", err)
				}
			}
		})
	}
}
