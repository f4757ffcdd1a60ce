package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/slurm"
)

// TestEpilogCgroupLeftoversDryRun: a job cgroup (the v2 layout a real
// Slurm makes, under Root) still holding a process when the epilog runs is
// reported, not touched, in a dry run; without one the epilog says
// nothing about cgroups. The real kill runs in epilog's
// TestE2ECgroupLeftovers on v1 and v2 clusters.
func TestEpilogCgroupLeftoversDryRun(t *testing.T) {
	for _, tc := range []struct {
		name, job string
		want      string
	}{
		{"leftover", "31", "would kill processes left in the job's cgroup"},
		{"no cgroup", "32", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, conf := setup(t, "checks = [\"t-pass\"]\n[epilog]\nrecheck = false")
			root := t.TempDir()
			task := filepath.Join(root, "sys/fs/cgroup/system.slice/n1_slurmstepd.scope/job_31/step_0/user/task_0")
			if err := os.MkdirAll(task, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(task, "cgroup.procs"), []byte("4242\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
			out := runWith(t, conf, decide.ModeEpilog, fs, env{"SLURM_JOB_ID": tc.job, "SLURMD_NODENAME": "n1"}, func(o *Options) {
				o.Root, o.DryRun = root, true
			})
			notes := strings.Join(out.Report.Notes, "\n")
			if tc.want == "" && strings.Contains(notes, "cgroup") || tc.want != "" && !strings.Contains(notes, tc.want+" "+filepath.Dir(filepath.Dir(filepath.Dir(task)))+": [4242]") {
				t.Errorf("notes %q, want %q", notes, tc.want)
			}
			if len(out.Report.Action.Killed) != 0 {
				t.Errorf("dry run killed %v", out.Report.Action.Killed)
			}
			if _, err := os.Stat(task); err != nil {
				t.Errorf("dry run removed the cgroup: %v", err)
			}
		})
	}
}
