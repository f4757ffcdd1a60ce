package lifecycle

import (
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
)

// TestEpilogKillsOnlyTheJobsHolders: three real processes hold the job's
// GPU (a file at ROOT/dev/nvidia0, ROOT/proc being the real /proc): one of
// the job's user (uid 64123), one of another user sharing the GPU
// (nobody), and root's device daemon. The epilog of the job kills the
// first and leaves the other two running.
func TestEpilogKillsOnlyTheJobsHolders(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the holders run as other uids")
	}
	const jobUID = 64123
	root := t.TempDir()
	if err := os.Symlink("/proc", filepath.Join(root, "proc")); err != nil {
		t.Fatal(err)
	}
	dev := filepath.Join(root, "dev", "nvidia0")
	if err := os.MkdirAll(filepath.Dir(dev), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dev, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := func(uid int) (*exec.Cmd, chan error) {
		argv := []string{"sleep", "60"}
		if uid != 0 {
			id := strconv.Itoa(uid)
			argv = append([]string{"setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups"}, argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin = f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() }) // Wait above reaps it
		return cmd, done
	}
	job, jobDone := start(jobUID)
	other, otherDone := start(65534)
	daemon, daemonDone := start(0)
	// setpriv execs sleep: wait until each holder runs as its uid.
	for _, c := range []struct {
		cmd *exec.Cmd
		uid int
	}{{job, jobUID}, {other, 65534}} {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/status")
			if strings.Contains(string(b), "Uid:\t"+strconv.Itoa(c.uid)+"\t") && strings.Contains(string(b), "Name:\tsleep") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("holder %d never ran as uid %d", c.cmd.Process.Pid, c.uid)
			}
		}
	}

	_, conf := setup(t, "checks = [\"t-pass\"]\n[epilog]\nrecheck = false\nkill_grace = \"1s\"")
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	out := runWith(t, conf, decide.ModeEpilog, fs, env{"SLURM_JOB_ID": "31", "SLURM_JOB_UID": strconv.Itoa(jobUID),
		"SLURM_JOB_GID": strconv.Itoa(jobUID), "SLURM_JOB_GPUS": "0"}, func(o *Options) { o.Root = root })
	if !slices.Equal(out.Report.Action.Killed, []int{job.Process.Pid}) {
		t.Errorf("killed %v, want only the job's %d (notes %q)", out.Report.Action.Killed, job.Process.Pid, out.Report.Notes)
	}
	select {
	case <-jobDone:
	case <-time.After(5 * time.Second):
		t.Error("the job's holder survived the epilog")
	}
	time.Sleep(200 * time.Millisecond)
	for name, done := range map[string]chan error{"another user's": otherDone, "root's daemon": daemonDone} {
		select {
		case err := <-done:
			t.Errorf("the epilog killed %s holder: %v", name, err)
		default:
		}
	}
	for _, c := range []*exec.Cmd{other, daemon} {
		if err := syscall.Kill(c.Process.Pid, 0); err != nil {
			t.Errorf("holder %d gone: %v", c.Process.Pid, err)
		}
	}
}
