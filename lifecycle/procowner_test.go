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

func TestJobOwns(t *testing.T) {
	const v1, v2 = "12:freezer:/slurm_n1/uid_1000/job_31/step_batch\n11:memory:/slurm_n1/uid_1000/job_31/step_batch/task_0\n",
		"0::/system.slice/n1_slurmstepd.scope/job_31/step_0/user/task_0\n"
	for _, tc := range []struct {
		name   string
		uid    int // the process's uids
		uids   string
		cgroup string
		jobUID int
		want   bool
		why    string
	}{
		{"in the job's v1 cgroup", 0, "", v1, 1000, true, ""},
		{"in the job's v2 cgroup", 1000, "", v2, 1000, true, ""},
		{"the job's user, in no job", 1000, "", "0::/user.slice/session-3.scope\n", 1000, true, ""},
		{"the job's user, in another job", 1000, "", strings.ReplaceAll(v2, "job_31", "job_310"), 1000, false, "it is in the cgroup of job 310"},
		{"root's daemon", 0, "", "0::/system.slice/nvidia-persistenced.service\n", 1000, false, "runs as uid 0, not the job's user 1000"},
		{"another user", 1001, "", "0::/\n", 1000, false, "runs as uid 1001"},
		{"set-uid root from the job's user", 0, "Uid:\t1000\t0\t0\t0\n", "0::/\n", 1000, false, "runs as uid 0"},
		{"a root job: only its cgroup", 0, "", "0::/\n", 0, false, "the job's user is root"},
		{"unknown job user", 1000, "", "0::/\n", -1, false, "the job's user is unknown"},
		{"a look-alike segment", 1001, "", "0::/x/job_31x/y\n", 1000, false, "runs as uid 1001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			procFixture(t, root, 7, tc.uid, tc.cgroup)
			if tc.uids != "" {
				if err := os.WriteFile(filepath.Join(root, "proc", "7", "status"), []byte("Name:\tx\n"+tc.uids), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, why := JobOwns(root, &slurm.Job{ID: "31", UID: tc.jobUID}, 7)
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("JobOwns = %v, %q; want %v, %q", got, why, tc.want, tc.why)
			}
		})
	}
	if ok, why := JobOwns(t.TempDir(), &slurm.Job{ID: "31", UID: 1000}, 7); ok || !strings.Contains(why, "unreadable") {
		t.Errorf("a vanished process: %v, %q", ok, why)
	}
}

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
