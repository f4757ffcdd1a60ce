package node

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/internal/osutil"
)

// TestRDMALockUserCannotBlock: a user holding the counter lock file that
// earlier versions left in the state directory does not delay the check;
// when another run holds vigil's own lock the counters are not compared
// and the check is unknown with StateLockBusy before its deadline, never
// a fail.
func TestRDMALockUserCannotBlock(t *testing.T) {
	state := openStateDir(t, "rdma.lock")
	holdLock(t, filepath.Join(state, "rdma.lock"), true)
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(rdmaFixture("dgx"))))
	run := func(timeout time.Duration) (benchmarks.Result, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		r := (&rdma{}).Run(ctx, rdmaEnv(t, root, state, ""))
		return r, time.Since(start)
	}
	r, took := run(20 * time.Second)
	assert.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	assert.Less(t, took, 2*time.Second, "the user's lock held the check")
	assert.FileExists(t, filepath.Join(state, "rdma.json"))

	holdLock(t, filepath.Join(state, osutil.LockDirName, "rdma.lock"), false)
	r, took = run(2 * time.Second)
	assert.Equal(t, benchmarks.StatusUnknown, r.Status, r.Message)
	assert.Equal(t, devcheck.ReasonStateLockBusy, r.Reason)
	assert.Contains(t, r.Message, "counters not compared")
	assert.Less(t, took, 1500*time.Millisecond)
}

// holdLock starts a process that holds an exclusive flock on path (as
// uid/gid 65534 when asNobody, opening the file read-only, as any user
// can) and returns once the lock is taken; the process is killed when the
// test ends.
func holdLock(t *testing.T, path string, asNobody bool) {
	t.Helper()
	argv := []string{"flock", "--exclusive", path, "sleep", "60"}
	if asNobody {
		argv = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); exec.Command("flock", "--nonblock", path, "true").Run() == nil; time.Sleep(10 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the holder never took %s", path)
	}
}

// openStateDir is a state directory every user can reach (mode 0755, like
// /var/lib/vigil) with, as earlier versions left it, a lock file there
// that any user can open (mode 0644).
func openStateDir(t *testing.T, lock string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attack runs as another uid")
	}
	top := t.TempDir()
	state := filepath.Join(top, "state")
	require.NoError(t, os.Mkdir(state, 0o755))
	require.NoError(t, os.Chmod(top, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(top), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(state, lock), nil, 0o644))
	return state
}
