package leftovers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/internal/ostest"
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
			ostest.ProcFixture(t, root, 7, tc.uid, tc.cgroup)
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

func TestProcFSHolders(t *testing.T) {
	root := t.TempDir()
	mk := func(pid, fd int, target string) {
		d := filepath.Join(root, "proc", fmt.Sprint(pid), "fd")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(d, fmt.Sprint(fd))); err != nil {
			t.Fatal(err)
		}
	}
	mk(10, 3, "/dev/nvidia0")
	mk(10, 4, "/dev/nvidia1")
	mk(11, 0, "/dev/null")
	mk(12, 7, "/dev/nvidia1")
	mk(13, 5, "/dev/nvidiactl")
	mk(99, 3, "/dev/nvidia1") // vigil itself
	got, err := ProcFS{Root: root, Self: 99}.Holders([]string{"/dev/nvidia1"})
	if err != nil || fmt.Sprint(got) != "[10 12]" {
		t.Fatalf("holders %v, %v", got, err)
	}
	if got, _ := (ProcFS{Root: root}).Holders(nil); got != nil {
		t.Fatalf("no devices gave %v", got)
	}
}

func TestKillRealHolder(t *testing.T) {
	dev := filepath.Join(t.TempDir(), "nvidia7")
	if err := os.WriteFile(dev, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A process that ignores SIGTERM and holds the "device" open.
	cmd := exec.Command("sh", "-c", "trap '' TERM; exec sleep 60")
	cmd.Stdin = f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var pids []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pids, err = (ProcFS{Root: "/"}).Holders([]string{dev}); err != nil {
			t.Fatal(err)
		}
		if len(pids) > 0 {
			break
		}
	}
	if len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Fatalf("holders %v, want [%d]", pids, cmd.Process.Pid)
	}
	killed, err := KillHolders(OSSignaler{}, pids, 200*time.Millisecond, time.Sleep)
	if err != nil || len(killed) != 1 {
		t.Fatalf("killed %v, %v", killed, err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the holder survived SIGKILL")
	}
}
