package node

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// TestDiskFilledByAUserIsNotEvidence: a scratch directory like /tmp (mode
// 1777) that an unprivileged user (nobody) fills to the last byte makes
// the disk check unknown with DiskUserWritable, saying why, never a fail
// that would drain the node. The same full file system in a directory only
// root can write is DiskFull, a fail.
func TestDiskFilledByAUserIsNotEvidence(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a tmpfs and fills it as another uid")
	}
	dir := mountTmpfsMode(t, "256k", "1777")
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"dd", "if=/dev/zero", "of="+filepath.Join(dir, "fill"), "bs=4k").CombinedOutput()
	require.Error(t, err, "dd should stop at a full file system")
	require.Contains(t, string(out), "No space left on device")

	r := (&disk{now: time.Now}).Run(context.Background(), diskEnv(t, dir, ""))
	assert.Equal(t, benchmarks.StatusUnknown, r.Status, r.Message)
	assert.Equal(t, ReasonDiskUserWritable, r.Reason)
	assert.Contains(t, r.Message, "no space left on device (DiskFull)")
	assert.Contains(t, r.Message, dir+" is writable by every user: a full or slow directory that users can fill or load is not evidence against the node")

	require.NoError(t, os.Chmod(dir, 0o700))
	r = (&disk{now: time.Now}).Run(context.Background(), diskEnv(t, dir, ""))
	assert.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
	assert.Equal(t, ReasonDiskFull, r.Reason)
}

// TestDiskSlowInAUsersDirectory: a directory a user owns (or could
// replace) is theirs: a "slow" result there (a threshold nothing meets) is
// unknown, and also in a root directory under a parent anyone can write;
// in a root-only directory it is the fail it always was.
func TestDiskSlowInAUsersDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: gives a directory to another uid")
	}
	const slow = "min_write_mib_s = 1e12"
	theirs := filepath.Join(t.TempDir(), "scratch")
	require.NoError(t, os.Mkdir(theirs, 0o755))
	require.NoError(t, os.Chown(theirs, 65534, 65534))
	r := (&disk{now: time.Now}).Run(context.Background(), diskEnv(t, theirs, slow))
	assert.Equal(t, benchmarks.StatusUnknown, r.Status, r.Message)
	assert.Equal(t, ReasonDiskUserWritable, r.Reason)
	assert.Contains(t, r.Message, "can be replaced by other users")

	open := t.TempDir()
	require.NoError(t, os.Chmod(open, 0o777))
	under := filepath.Join(open, "scratch")
	require.NoError(t, os.Mkdir(under, 0o700))
	r = (&disk{now: time.Now}).Run(context.Background(), diskEnv(t, under, slow))
	assert.Equal(t, benchmarks.StatusUnknown, r.Status, r.Message)
	assert.True(t, strings.Contains(r.Message, "(DiskWriteSlow)"), r.Message)

	mine := t.TempDir()
	r = (&disk{now: time.Now}).Run(context.Background(), diskEnv(t, mine, slow))
	assert.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
	assert.Equal(t, ReasonDiskWriteSlow, r.Reason)
}
