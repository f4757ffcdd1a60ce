package lifecycle

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
)

// TestRemedyHistoryUserLockCannotBlock: the remedy history's lock file of
// earlier versions (state_dir/remedies.json.lock, mode 0644) could be
// opened and flocked by any user, which blocked the prolog; held by
// nobody now, it delays nothing: the history takes its lock in the
// root-only lock directory, records the remedy and removes the old file.
func TestRemedyHistoryUserLockCannotBlock(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attack runs as another uid")
	}
	top := t.TempDir()
	state := filepath.Join(top, "state")
	for _, d := range []string{state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{top, filepath.Dir(top)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := filepath.Join(state, remediesFile+".lock")
	if err := os.WriteFile(old, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "flock", "--shared", old, "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	for deadline := time.Now().Add(5 * time.Second); exec.Command("flock", "--nonblock", old, "true").Run() == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nobody never took the old lock")
		}
	}

	var list []string
	now := time.Now()
	start := time.Now()
	h := remedies(state, notes{&list}, logrus.New())
	h.add("n1", decide.RemedyRecord{At: now, Kind: "reset", Check: "xid", Device: "gpu0"}, now, time.Hour)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("recording took %v: the user's lock held it", took)
	}
	if len(list) != 0 {
		t.Fatalf("notes: %q", list)
	}
	if got := h.read("n1"); len(got) != 1 || got[0].Device != "gpu0" {
		t.Fatalf("history %+v", got)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("old lock file still there: %v", err)
	}
	fi, err := os.Stat(filepath.Join(state, osutil.LockDirName, remediesLock))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file: %v, %v", fi, err)
	}
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "flock", "--nonblock",
		filepath.Join(state, osutil.LockDirName, remediesLock), "true").CombinedOutput()
	if err == nil {
		t.Fatalf("nobody took the remedy history's lock: %s", out)
	}
}
