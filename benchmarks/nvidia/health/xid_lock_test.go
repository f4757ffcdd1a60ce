package health

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

// TestXIDLockUserCannotBlock: a user who holds the lock file earlier
// versions left in the state directory (opened read-only, flocked) no
// longer delays the check; a lock vigil cannot take in time (another run
// holds it) is unknown with StateLockBusy, well before the check's
// deadline, never a fail or a timeout; a lock directory a user owns is
// unknown with StateDirUnsafe.
func TestXIDLockUserCannotBlock(t *testing.T) {
	state := openStateDir(t, "xid.lock")
	holdLock(t, filepath.Join(state, "xid.lock"), true)
	root := newLogRoot(t, "boot-1", "healthy.txt")
	run := func(timeout time.Duration) (benchmarks.Result, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		env := &benchmarks.Env{Settings: xidSettingsFor(t, root, state)}
		start := time.Now()
		r := (&xid{nvmlCheck{newHealthyNode().library()}}).Run(ctx, env)
		return r, time.Since(start)
	}

	r, took := run(20 * time.Second)
	assert.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	assert.Less(t, took, 2*time.Second, "the user's lock held the check")
	assert.FileExists(t, filepath.Join(state, "xid-state.json"))

	holdLock(t, filepath.Join(state, osutil.LockDirName, "xid.lock"), false)
	r, took = run(2 * time.Second)
	assert.Equal(t, benchmarks.StatusUnknown, r.Status, r.Message)
	assert.Equal(t, devcheck.ReasonStateLockBusy, r.Reason)
	assert.Contains(t, r.Message, "lock still held by another process")
	assert.Less(t, took, 1500*time.Millisecond, "the check waited past half its time")

	other := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.MkdirAll(filepath.Join(other, osutil.LockDirName), 0o700))
	require.NoError(t, os.Chown(filepath.Join(other, osutil.LockDirName), 65534, 65534))
	env := &benchmarks.Env{Settings: xidSettingsFor(t, root, other)}
	r = (&xid{nvmlCheck{newHealthyNode().library()}}).Run(context.Background(), env)
	assert.Equal(t, benchmarks.StatusUnknown, r.Status, r.Message)
	assert.Equal(t, devcheck.ReasonStateDirUnsafe, r.Reason)
	assert.Contains(t, r.Message, "owned by uid 65534")
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
