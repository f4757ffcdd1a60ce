package osutil

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nobody is the unprivileged user the attacks run as.
const nobody = "65534"

// asNobody runs argv as uid/gid 65534 with no supplementary groups.
func asNobody(argv ...string) *exec.Cmd {
	return exec.Command("setpriv", append([]string{"--reuid=" + nobody, "--regid=" + nobody, "--clear-groups"}, argv...)...)
}

// openState is a state directory that every user can reach (like
// /var/lib/vigil, mode 0755), in a fresh temporary directory.
func openState(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attack runs as another uid")
	}
	top := t.TempDir()
	state := filepath.Join(top, "state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{top, filepath.Dir(top)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return state
}

// TestUserCannotHoldALock: a lock file in the state directory itself
// (mode 0644, as vigil made them before) can be held by any user, who
// opens it read-only and flocks it; the lock directory Lock makes is
// root's alone, so the same user cannot open the lock at all, and vigil
// takes it at once.
func TestUserCannotHoldALock(t *testing.T) {
	state := openState(t)
	old := filepath.Join(state, "xid.lock")
	if err := os.WriteFile(old, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := asNobody("flock", "--shared", "--nonblock", old, "true").CombinedOutput(); err != nil {
		t.Fatalf("the old layout should let nobody hold its lock (the attack), got %v: %s", err, out)
	}

	unlock, err := Lock(context.Background(), state, "xid.lock", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	lock := filepath.Join(state, LockDirName, "xid.lock")
	fi, err := os.Stat(filepath.Dir(lock))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("lock directory %v, %v: want mode 0700", fi, err)
	}
	out, err := asNobody("flock", "--shared", "--nonblock", lock, "true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Permission denied") {
		t.Fatalf("nobody took vigil's lock: %v: %s", err, out)
	}
	// Holding it "from outside" also fails for a user who guesses the path
	// of a directory they may not search.
	if out, err := asNobody("sh", "-c", "exec 3<"+lock).CombinedOutput(); err == nil {
		t.Fatalf("nobody opened %s: %s", lock, out)
	}
	start := time.Now()
	unlock, err = Lock(context.Background(), state, "xid.lock", time.Second)
	if err != nil || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("lock after the attempts: %v after %v", err, time.Since(start))
	}
	unlock()
}

// TestLockIsBounded: a lock another process holds is given up after the
// bound with ErrLockBusy, and sooner when the context has less time left.
func TestLockIsBounded(t *testing.T) {
	state := t.TempDir()
	dir, err := PrivateDir(filepath.Join(state, LockDirName))
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("flock", filepath.Join(dir, "rdma.lock"), "sleep", "30")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if exec.Command("flock", "--nonblock", filepath.Join(dir, "rdma.lock"), "true").Run() != nil {
			break // held
		}
		if time.Now().After(deadline) {
			t.Fatal("the holder never took the lock")
		}
	}
	start := time.Now()
	_, err = Lock(context.Background(), state, "rdma.lock", 300*time.Millisecond)
	took := time.Since(start)
	if !errors.Is(err, ErrLockBusy) || took < 300*time.Millisecond || took > 2*time.Second {
		t.Fatalf("busy lock: %v after %v, want ErrLockBusy after the 300ms bound", err, took)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = Lock(ctx, state, "rdma.lock", time.Hour)
	if took := time.Since(start); !errors.Is(err, ErrLockBusy) || took > 350*time.Millisecond {
		t.Fatalf("busy lock under a 400ms context: %v after %v, want ErrLockBusy within half of it", err, took)
	}
}

// TestPrivateDirRefuses: a lock directory that a user owns, that group or
// others may open, or whose parent another user can write, is refused
// with ErrUnsafeDir; a root-owned one in a sticky directory such as /tmp is
// fine (only its owner may rename or remove it there).
func TestPrivateDirRefuses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	mk := func(t *testing.T, parentMode, mode os.FileMode, chown bool) string {
		t.Helper()
		parent := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(parent, 0o755); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(parent, LockDirName)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(parent, parentMode); err != nil {
			t.Fatal(err)
		}
		if chown {
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		name             string
		parentMode, mode os.FileMode
		chown            bool
		want             string
	}{
		{"owned by a user", 0o755, 0o700, true, "owned by uid 65534"},
		{"open to others", 0o755, 0o755, false, "mode 0755, want 0700"},
		{"parent writable by all", 0o777, 0o700, false, "can be written by other users"},
		{"parent writable by its group", 0o775, 0o700, false, "can be written by other users"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := mk(t, tc.parentMode, tc.mode, tc.chown)
			_, err := PrivateDir(dir)
			if !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrUnsafeDir saying %q", err, tc.want)
			}
			_, err = Lock(context.Background(), filepath.Dir(dir), "x.lock", time.Second)
			if !errors.Is(err, ErrUnsafeDir) {
				t.Fatalf("Lock: %v, want ErrUnsafeDir", err)
			}
		})
	}
	t.Run("sticky parent", func(t *testing.T) {
		dir := mk(t, os.ModeSticky|0o777, 0o700, false)
		if _, err := PrivateDir(dir); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a user's link in place of the directory", func(t *testing.T) {
		parent := filepath.Join(t.TempDir(), "state")
		theirs := filepath.Join(t.TempDir(), "theirs")
		for _, d := range []string{parent, theirs} {
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(theirs, filepath.Join(parent, LockDirName)); err != nil {
			t.Fatal(err)
		}
		if _, err := PrivateDir(filepath.Join(parent, LockDirName)); !errors.Is(err, ErrUnsafeDir) {
			t.Fatalf("err = %v, want ErrUnsafeDir", err)
		}
	})
}
