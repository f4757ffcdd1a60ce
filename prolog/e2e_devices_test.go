package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestE2EJobDeviceScoping: on a node with two (fake) GPUs, under Slurm's
// cgroup/v1 and cgroup/v2 plugins with ConstrainDevices, two jobs of one
// GPU each run at once. Each job's prolog scopes its checks to the job's
// own GPU: the site's command check is told VIGIL_DEVICES, the GPU's
// index on the node (SLURM_JOB_GPUS), 0 for the first job and 1 for the
// second, while the second job itself sees its GPU as the only one it may
// open.
func TestE2EJobDeviceScoping(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	for _, mode := range slurmtest.CgroupModes() {
		t.Run(mode.String(), func(t *testing.T) { testJobDeviceScoping(t, bin, mode) })
	}
}

func testJobDeviceScoping(t *testing.T, bin string, mode slurmtest.CgroupMode) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	seen := filepath.Join(dir, "seen")
	check := fmt.Sprintf(`echo "job=$VIGIL_JOB_ID devices=$VIGIL_DEVICES" >> %s; echo '{"devices_seen": 1}'`, seen)
	s := newSetup(t, `checks = ["command"]`, fmt.Sprintf("[checks.command]\ncommand = [\"/bin/sh\", \"-c\", '''%s''']\n", check))
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1, Prolog: s.wrapper(t, bin), PrologFlags: "Alloc", Cgroup: mode, GPUsPerNode: 2})
	node := c.Nodes[0]
	release := filepath.Join(dir, "second-ran")
	first := c.Sbatch(t, fmt.Sprintf("n=0; while [ ! -e %s ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done\n", release),
		"-w", node, "--gres=gpu:1")
	c.WaitJob(t, first, 60*time.Second, "RUNNING")
	dev := filepath.Join(c.Dir, "dev")
	second := c.Sbatch(t, fmt.Sprintf("echo gpus=$SLURM_JOB_GPUS\nfor i in 0 1; do echo \"open$i=$(head -c0 %s/nvidia$i 2>&1)\"; done\ntouch %s\n", dev, release),
		"-w", node, "--gres=gpu:1")
	for _, id := range []string{first, second} {
		if st := c.WaitJob(t, id, 90*time.Second, "COMPLETED", "FAILED", "CANCELLED"); st != "COMPLETED" {
			t.Fatalf("job %s ended %s:\n%s", id, st, c.Dump(id))
		}
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the command check never ran: %v\n%s", err, c.Dump(second))
	}
	got := strings.Fields(string(b))
	want := []string{"job=" + first, "devices=0", "job=" + second, "devices=1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the prologs' command check was told %q, want %q", got, want)
	}
	out := c.JobOutput(second)
	for _, w := range []string{"gpus=1\n", "nvidia1' for reading: No such device or address", "nvidia0' for reading: Operation not permitted"} {
		if !strings.Contains(out, w) {
			t.Errorf("the second job's output lacks %q (its GPU is nvidia1, and nvidia0 is fenced off):\n%s", w, out)
		}
	}
}
