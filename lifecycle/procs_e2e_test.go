package lifecycle

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestE2EEpilogSparesOtherJobsOnASharedGPU: two real Slurm jobs of the
// same user (uid 65534, as with gres/shard or MPS) hold the same GPU (a
// file at ROOT/dev/nvidia0, ROOT/proc the real /proc), and so does a root
// daemon outside any job. The epilog of the first job kills its holder,
// which Slurm put in the job's cgroup, and leaves the second job's
// (another job's cgroup) and the daemon's running; the second job is still
// running afterwards.
func TestE2EEpilogSparesOtherJobsOnASharedGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1})
	root := filepath.Join(c.Dir, "root")
	dev := filepath.Join(root, "dev", "nvidia0")
	if err := os.MkdirAll(filepath.Dir(dev), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dev, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc", filepath.Join(root, "proc")); err != nil {
		t.Fatal(err)
	}
	holder := func(name string) (id string, pid int) {
		pidFile := filepath.Join(c.Dir, "jobs", name+".pid")
		script := fmt.Sprintf("exec 3<%s\nsleep 300 &\necho $! > %[2]s.tmp && mv %[2]s.tmp %[2]s\nwait\n", dev, pidFile)
		id = c.Sbatch(t, script, "--uid=65534", "--gid=65534")
		c.WaitJob(t, id, 60*time.Second, "RUNNING")
		for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
			b, _ := os.ReadFile(pidFile)
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			if pid == 0 && time.Now().After(deadline) {
				t.Fatalf("no pid from job %s\n%s", id, c.Dump(id))
			}
		}
		return id, pid
	}
	mine, minePID := holder("mine")
	other, otherPID := holder("other")
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	daemon := exec.Command("sleep", "300")
	daemon.Stdin = f
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = daemon.Process.Kill(); _ = daemon.Wait() })
	for _, id := range []string{mine, other} {
		t.Cleanup(func() { _, _ = c.Command(t, "scancel", id) })
	}

	_, conf := setup(t, "checks = [\"t-pass\"]\n[epilog]\nrecheck = false\nkill_grace = \"1s\"")
	out := runWith(t, conf, decide.ModeEpilog, &fakeSlurm{node: slurm.Node{Name: c.Nodes[0], State: "IDLE"}},
		env{"SLURM_JOB_ID": mine, "SLURM_JOB_UID": "65534", "SLURM_JOB_GID": "65534", "SLURM_JOB_GPUS": "0",
			"SLURMD_NODENAME": c.Nodes[0]}, func(o *Options) { o.Root, o.Node = root, c.Nodes[0] })
	t.Logf("killed %v; notes %q", out.Report.Action.Killed, out.Report.Notes)
	// The batch shells hold the file too (exec 3<): job mine's is its own.
	killed := out.Report.Action.Killed
	if !slices.Contains(killed, minePID) || slices.Contains(killed, otherPID) || slices.Contains(killed, daemon.Process.Pid) || len(killed) > 2 {
		t.Errorf("killed %v, want job %s's %d (and its shell), not %d or %d", killed, mine, minePID, otherPID, daemon.Process.Pid)
	}
	if notes := strings.Join(out.Report.Notes, "\n"); !strings.Contains(notes, fmt.Sprintf("left alone process %d on the job's devices: it is in the cgroup of job %s", otherPID, other)) {
		t.Errorf("notes do not say why job %s's holder was left:\n%s", other, notes)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(minePID, 0) == nil && !isZombie(minePID) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if syscall.Kill(minePID, 0) == nil && !isZombie(minePID) {
		t.Errorf("job %s's holder %d outlived the epilog", mine, minePID)
	}
	for _, pid := range []int{otherPID, daemon.Process.Pid} {
		if syscall.Kill(pid, 0) != nil || isZombie(pid) {
			t.Errorf("the epilog of job %s killed %d", mine, pid)
		}
	}
	if st := c.JobInfo(t, other).State; st != "RUNNING" {
		t.Errorf("job %s is %s after job %s's epilog", other, st, mine)
	}
}

// isZombie reports whether pid is dead but not yet reaped (or gone).
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}
