package node

import (
	"context"
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// diskEnv points the disk check at dir with small, fast settings.
func diskEnv(t *testing.T, dir string, extra string) *benchmarks.Env {
	return &benchmarks.Env{Settings: settings(t, fmt.Sprintf("path = %q\nsize_mib = 2\nblock_kib = 256\n%s", dir, extra))}
}

// assertEmpty fails when the check left anything in dir.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Empty(t, names, "the test file must always be removed")
}

// mountTmpfs mounts a tmpfs of the given size on a fresh directory and
// unmounts it when the test ends. It needs root (CI runs as root).
func mountTmpfs(t *testing.T, size string) string {
	return mountTmpfsMode(t, size, "0700")
}

// mountTmpfsMode mounts a tmpfs of size whose root has mode (octal): 0700
// is a scratch directory only root can write, 1777 one like /tmp.
func mountTmpfsMode(t *testing.T, size, mode string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode="+mode, "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, "mount tmpfs (needs root and mount from Debian package mount): %s", out)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// TestDiskHealthy measures a real directory. Thresholds are off: how fast
// this machine's disk is belongs to BenchmarkDisk, not to a test.
func TestDiskHealthy(t *testing.T) {
	dir := t.TempDir()
	r := (&disk{now: time.Now}).Run(context.Background(), diskEnv(t, dir, "min_write_mib_s = 0\nmin_read_mib_s = 0\nmax_latency_ms = 0"))
	assert.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	names := map[string]benchmarks.Value{}
	for _, v := range r.Values {
		names[v.Name] = v
		assert.Equal(t, dir, v.Device)
	}
	for _, n := range []string{"write_mib_s", "read_mib_s", "read_latency_ms"} {
		assert.Greater(t, names[n].Value, 0.0, n)
	}
	assert.Nil(t, names["write_mib_s"].Threshold)
	assertEmpty(t, dir)
}

// TestDiskSlow uses a clock that advances 1 s per reading: 2 MiB in a few
// seconds is far below the thresholds.
func TestDiskSlow(t *testing.T) {
	var now time.Time
	clock := func() time.Time {
		now = now.Add(time.Second)
		return now
	}
	cases := []struct {
		name, extra, reason, msg string
	}{
		{"write", "", "DiskWriteSlow", "write 2.0 MiB/s < 10"},
		{"read", "min_write_mib_s = 0", "DiskReadSlow", "read 2.0 MiB/s < 10"},
		{"latency", "min_write_mib_s = 0\nmin_read_mib_s = 0", "DiskLatencyHigh", "4 KiB read latency 1000.00 ms > 100"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := (&disk{now: clock}).Run(context.Background(), diskEnv(t, dir, tc.extra))
			assert.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
			assert.Equal(t, tc.reason, r.Reason)
			assert.Equal(t, dir, r.Device)
			assert.Contains(t, r.Message, tc.msg)
			assertEmpty(t, dir)
		})
	}
	t.Run("no thresholds", func(t *testing.T) {
		dir := t.TempDir()
		r := (&disk{now: clock}).Run(context.Background(), diskEnv(t, dir, "min_write_mib_s = 0\nmin_read_mib_s = 0\nmax_latency_ms = 0"))
		assert.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	})
}

func TestDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "64k")
	r := (&disk{now: time.Now}).Run(context.Background(), diskEnv(t, dir, ""))
	assert.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
	assert.Equal(t, "DiskFull", r.Reason)
	assert.Equal(t, dir, r.Device)
	assert.Equal(t, dir+" disk full: write to "+dir+": no space left on device", r.Message)
	assertEmpty(t, dir)
}

func TestDiskReadOnly(t *testing.T) {
	dir := mountTmpfs(t, "4m")
	out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput()
	require.NoError(t, err, "remount read-only: %s", out)
	r := (&disk{now: time.Now}).Run(context.Background(), diskEnv(t, dir, ""))
	assert.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
	assert.Equal(t, "DiskReadOnly", r.Reason)
	assert.Contains(t, r.Message, dir+" read-only file system: create test file in "+dir)
	assertEmpty(t, dir)
}

func TestDiskBadPath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "scratch")
	r := (&disk{now: time.Now}).Run(context.Background(), diskEnv(t, missing, ""))
	assert.Equal(t, benchmarks.StatusFail, r.Status)
	assert.Equal(t, "DiskPathMissing", r.Reason)
	assert.Contains(t, r.Message, "scratch directory missing")

	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	r = (&disk{now: time.Now}).Run(context.Background(), diskEnv(t, file, ""))
	assert.Equal(t, "DiskPathMissing", r.Reason)
	assert.Contains(t, r.Message, "is not a directory")
}

func TestDiskSettings(t *testing.T) {
	for _, extra := range []string{"block_kib = 3", "block_kib = 4096", "max_latency_ms = -1"} {
		t.Run(extra, func(t *testing.T) {
			r := (&disk{now: time.Now}).Run(context.Background(), diskEnv(t, t.TempDir(), extra))
			assert.Equal(t, benchmarks.StatusUnknown, r.Status)
			assert.Equal(t, "InvalidSettings", r.Reason, r.Message)
		})
	}
	t.Run("defaults", func(t *testing.T) {
		s := defaultDiskSettings()
		assert.Equal(t, os.TempDir(), s.Path)
		assert.Equal(t, 8, s.SizeMiB)
	})
}

func TestDiskCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	r := (&disk{now: time.Now}).Run(ctx, diskEnv(t, dir, ""))
	assert.Equal(t, benchmarks.StatusUnknown, r.Status)
	assert.Equal(t, "Canceled", r.Reason)
	assertEmpty(t, dir)
}

func TestClassifyDiskError(t *testing.T) {
	cases := []struct {
		err    error
		reason string
	}{
		{&fs.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}, "DiskFull"},
		{syscall.EDQUOT, "DiskFull"},
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.EROFS}, "DiskReadOnly"},
		{syscall.EACCES, "DiskNotWritable"},
		{syscall.EPERM, "DiskNotWritable"},
		{syscall.ENOENT, "DiskPathMissing"},
		{syscall.EIO, "DiskIOError"},
		{errors.New("odd"), "DiskIOError"},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			reason, _ := classifyDiskError(tc.err)
			assert.Equal(t, tc.reason, reason)
		})
	}
}

func BenchmarkDisk(b *testing.B) {
	dir := b.TempDir()
	c := &disk{now: time.Now}
	env := &benchmarks.Env{Settings: func(v any) error { v.(*diskSettings).Path = dir; return nil }}
	for b.Loop() {
		if r := c.Run(context.Background(), env); r.Status != benchmarks.StatusPass {
			b.Fatalf("%s: %s", r.Reason, r.Message)
		}
	}
}

// TestDiskRunValidatesLikeTheLoader: the check refuses out-of-range
// settings at run time with the same Validate the config loader calls.
func TestDiskRunValidatesLikeTheLoader(t *testing.T) {
	c := &disk{now: time.Now}
	env := &benchmarks.Env{Settings: func(v any) error { v.(*diskSettings).SizeMiB = 0; return nil }}
	r := c.Run(context.Background(), env)
	assert.Equal(t, benchmarks.StatusUnknown, r.Status)
	assert.Equal(t, devcheck.ReasonInvalidSettings, r.Reason)
	assert.Contains(t, r.Message, "settings of [checks.disk]: size_mib = 0: want 1 to 1024")
	var se *benchmarks.SettingError
	s := defaultDiskSettings()
	s.SizeMiB = 0
	require.ErrorAs(t, s.Validate(), &se)
	assert.Equal(t, "size_mib", se.Key)
}

// settings returns an Env.Settings that decodes a TOML table, rejecting
// keys the check does not know, as the config package does.
func settings(t *testing.T, table string) func(v any) error {
	t.Helper()
	return func(v any) error {
		md, err := toml.Decode(table, v)
		if err != nil {
			return err
		}
		if u := md.Undecoded(); len(u) > 0 {
			t.Fatalf("settings %q: unknown keys %v", table, u)
		}
		return nil
	}
}

// TestRegistered: the node checks are registered under their names,
// isolated, with fresh valid defaults.
func TestRegistered(t *testing.T) {
	for name, kind := range map[string]benchmarks.Kind{"disk": benchmarks.KindPerf, "rdma": benchmarks.KindHealth, "command": benchmarks.KindPerf} {
		c, ok := benchmarks.Lookup(name)
		require.True(t, ok, name)
		d := c.Spec()
		assert.Equal(t, name, d.Name)
		assert.True(t, d.Isolated, name)
		assert.Equal(t, kind, d.Kind, name)
		require.NotNil(t, d.Settings, name)
		a, b := d.Settings(), d.Settings()
		assert.NotSame(t, a, b)
		require.NoError(t, a.(benchmarks.Validator).Validate(), name)
	}
}
