package lifecycle

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/record"
	"github.com/vigil-hpc/vigil/slurm"
)

const testUID, testGID = 12345, 12346

func resultRun(t *testing.T, prolog string, dry bool, e env) (dir string, o Outcome) {
	t.Helper()
	dir, conf := setup(t, prolog)
	o = runWith(t, conf, decide.ModeProlog, &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, e, func(o *Options) { o.DryRun = dry })
	return dir, o
}

func TestJobResultFile(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown to the job's user")
	}
	spool := t.TempDir()
	e := jobEnv()
	e["SLURM_JOB_UID"], e["SLURM_JOB_GID"] = "12345", "12346"
	_, o := resultRun(t, "checks = [\"t-pass\", \"t-fail\"]\nresult_dir = \""+spool+"\"", false, e)
	if o.ExitCode != decide.ExitFail {
		t.Fatalf("exit %d, want %d", o.ExitCode, decide.ExitFail)
	}
	path := filepath.Join(spool, "vigil-42-n1.json")
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("no result file: %v (notes %v)", err, o.Report.Notes)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != testUID || st.Gid != testGID || fi.Mode().Perm() != 0o644 || !fi.Mode().IsRegular() {
		t.Errorf("result file %v uid %d gid %d, want -rw-r--r-- %d:%d", fi.Mode(), st.Uid, st.Gid, testUID, testGID)
	}
	b, _ := os.ReadFile(path)
	var jr record.JobResult
	if err := json.Unmarshal(b, &jr); err != nil {
		t.Fatal(err)
	}
	if jr.Job != "42" || jr.Node != "n1" || jr.Verdict != benchmarks.StatusFail || !jr.Requeued ||
		len(jr.Failed) != 1 || jr.Failed[0] != (record.JobResultCheck{Check: "t-fail", Reason: "Broken", Device: "gpu0", Message: "gpu0 is broken"}) ||
		jr.Checks["t-pass"] != benchmarks.StatusPass || jr.Action != "drain" {
		t.Errorf("result file:\n%s", b)
	}
	if left, _ := filepath.Glob(filepath.Join(spool, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestJobResultFileWorkdirAndDryRun(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown to the job's user")
	}
	work := t.TempDir()
	if err := os.Chown(work, testUID, testGID); err != nil {
		t.Fatal(err)
	}
	// The job's user must reach its working directory.
	if err := os.Chmod(filepath.Dir(work), 0o755); err != nil {
		t.Fatal(err)
	}
	e := jobEnv()
	e["SLURM_JOB_UID"], e["SLURM_JOB_GID"], e["SLURM_JOB_WORK_DIR"] = "12345", "12346", work
	resultRun(t, "checks = [\"t-pass\"]\nresult_dir = \"workdir\"", true, e)
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Fatalf("a dry run wrote %v", ents)
	}
	resultRun(t, "checks = [\"t-pass\"]\nresult_dir = \"workdir\"", false, e)
	if _, err := os.Stat(filepath.Join(work, "vigil-42-n1.json")); err != nil {
		t.Fatal(err)
	}
}
