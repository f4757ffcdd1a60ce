package slurmtest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestCgroupV2Cluster starts a two-node cluster under Slurm's cgroup/v2
// plugin with each Slurm and runs a job on the second node: the job sees
// the production path in its cgroup (its /proc/self/cgroup 0:: line is
// /system.slice/<node>_slurmstepd.scope/job_<id>/step_batch/user/task_...),
// that directory exists under Cluster.CgroupRoot on the host, the job holds
// neither LD_PRELOAD nor the library, the eBPF device filter of
// ConstrainDevices lets the job open its own GPU only, and after the test
// the cluster's cgroup directory is gone.
func TestCgroupV2Cluster(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, func(t *testing.T, f slurmtest.Flavour) {
		var root string
		t.Run("job", func(t *testing.T) {
			c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, Root: f.Root, Cgroup: slurmtest.CgroupV2, GPUsPerNode: 2})
			root = c.CgroupRoot
			if c.CgroupPlugin != "cgroup/v2" || !strings.HasPrefix(root, "/sys/fs/cgroup/unified/") {
				t.Fatalf("CgroupPlugin %q, CgroupRoot %q", c.CgroupPlugin, root)
			}
			node := c.Nodes[1]
			dev := filepath.Join(c.Dir, "dev")
			script := `echo "cgroup=$(grep '^0::' /proc/self/cgroup)"
echo "lines=$(wc -l < /proc/self/cgroup)"
echo "preload=$LD_PRELOAD"
echo "maps=$(grep -c cgv2only /proc/self/maps)"
echo "gpus=$SLURM_JOB_GPUS"
for i in 0 1; do echo "open$i=$(head -c0 ` + dev + `/nvidia$i 2>&1)"; done
`
			id := c.Sbatch(t, script, "-w", node, "--gres=gpu:1")
			c.WaitJob(t, id, 60*time.Second, "COMPLETED")
			out := c.JobOutput(id)
			want := "cgroup=0::/system.slice/" + node + "_slurmstepd.scope/job_" + id + "/step_batch/user/task_"
			if !strings.Contains(out, want) {
				t.Errorf("job output lacks %q:\n%s", want, out)
			}
			for _, w := range []string{"\npreload=\n", "\nmaps=0\n"} {
				if !strings.Contains(out, w) {
					t.Errorf("job output lacks %q (the preload library leaks into jobs):\n%s", w, out)
				}
			}
			// Opening a fake GPU (no driver behind it) fails with ENXIO when
			// the device filter lets it through, with EPERM when it does not.
			for _, w := range []string{"\ngpus=0\n", "nvidia0' for reading: No such device or address", "nvidia1' for reading: Operation not permitted"} {
				if !strings.Contains(out, w) {
					t.Errorf("job output lacks %q (ConstrainDevices under v2):\n%s", w, out)
				}
			}
			t.Logf("job output:\n%s", out)
			if !isDir(filepath.Join(root, "system.slice", node+"_slurmstepd.scope")) {
				t.Errorf("no scope of %s under %s", node, root)
			}
		})
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("after the cluster: %s still there (%v)", root, err)
		}
	})
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
