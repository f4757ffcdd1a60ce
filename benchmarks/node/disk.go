package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ncw/directio"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// Reasons of the disk check.
const (
	// ReasonDiskFull: no space (or quota) left to write the test file.
	ReasonDiskFull = "DiskFull"
	// ReasonDiskReadOnly: the scratch file system is mounted read-only.
	ReasonDiskReadOnly = "DiskReadOnly"
	// ReasonDiskNotWritable: permission to write the scratch directory is denied.
	ReasonDiskNotWritable = "DiskNotWritable"
	// ReasonDiskPathMissing: the scratch directory does not exist.
	ReasonDiskPathMissing = "DiskPathMissing"
	// ReasonDiskIOError: a read or write failed otherwise (EIO ...).
	ReasonDiskIOError = "DiskIOError"
	// ReasonDiskDataMismatch: what was read back differs from what was written.
	ReasonDiskDataMismatch = "DiskDataMismatch"
	// ReasonDiskWriteSlow: O_DIRECT write throughput below the threshold.
	ReasonDiskWriteSlow = "DiskWriteSlow"
	// ReasonDiskReadSlow: O_DIRECT read throughput below the threshold.
	ReasonDiskReadSlow = "DiskReadSlow"
	// ReasonDiskLatencyHigh: mean 4 KiB O_DIRECT read latency above the threshold.
	ReasonDiskLatencyHigh = "DiskLatencyHigh"
	// ReasonDirectIOUnsupported: the file system refuses O_DIRECT (unknown).
	ReasonDirectIOUnsupported = "DirectIOUnsupported"
)

// diskSettings are the settings of [checks.disk].
type diskSettings struct {
	// Path is the scratch directory to test. Where other users can write
	// it (the default, /tmp) a full or slow result is unknown
	// (ReasonDiskUserWritable, diskJudge): point it at a directory only
	// root can write for those to count.
	Path string `toml:"path"`
	// SizeMiB is how much is written and read back, in MiB.
	SizeMiB int `toml:"size_mib"`
	// BlockKiB is the size of each write and read, in KiB (a multiple of 4).
	BlockKiB int `toml:"block_kib"`
	// MinWriteMiBs is the lowest acceptable write throughput, in MiB/s (0: not checked).
	MinWriteMiBs float64 `toml:"min_write_mib_s"`
	// MinReadMiBs is the lowest acceptable read throughput, in MiB/s (0: not checked).
	MinReadMiBs float64 `toml:"min_read_mib_s"`
	// MaxLatencyMs is the highest acceptable mean latency of a 4 KiB read,
	// in milliseconds (0: not checked).
	MaxLatencyMs float64 `toml:"max_latency_ms"`
	// LatencySamples is how many 4 KiB reads the latency is the mean of.
	LatencySamples int `toml:"latency_samples"`
}

// disk measures O_DIRECT write and read throughput and read latency of the
// scratch directory. It runs isolated because I/O on a failing disk can
// hang.
type disk struct {
	// now is the clock; tests replace it.
	now func() time.Time
}

func init() { benchmarks.Register(&disk{now: time.Now}) }

// Spec describes the check.
func (*disk) Spec() benchmarks.Descriptor {
	return benchmarks.Descriptor{Name: "disk", Kind: benchmarks.KindPerf, Vendor: benchmarks.VendorNone, Isolated: true, Default: true,
		Description: "O_DIRECT write and read bandwidth and latency in the scratch directory",
		Settings:    func() any { return defaultDiskSettings() },
		Reasons: []string{ReasonDiskPathMissing, ReasonDirectIOUnsupported, ReasonDiskFull, ReasonDiskReadOnly, ReasonDiskNotWritable,
			ReasonDiskIOError, ReasonDiskDataMismatch, ReasonDiskWriteSlow, ReasonDiskReadSlow, ReasonDiskLatencyHigh, ReasonDiskUserWritable}}
}

// defaultDiskSettings returns the shipped settings of [checks.disk].
func defaultDiskSettings() *diskSettings {
	return &diskSettings{Path: os.TempDir(), SizeMiB: 8, BlockKiB: 1024,
		MinWriteMiBs: 10, MinReadMiBs: 10, MaxLatencyMs: 100, LatencySamples: 32}
}

// Validate reports out-of-range settings.
func (s *diskSettings) Validate() error {
	switch {
	case s.Path == "":
		return benchmarks.BadSetting("path", `"": want a scratch directory`)
	case s.SizeMiB < 1 || s.SizeMiB > 1024:
		return benchmarks.BadSetting("size_mib", "%d: want 1 to 1024", s.SizeMiB)
	case s.BlockKiB < 4 || s.BlockKiB%4 != 0 || s.BlockKiB > s.SizeMiB*1024:
		return benchmarks.BadSetting("block_kib", "%d: want a multiple of 4 from 4 to size_mib*1024 (%d)", s.BlockKiB, s.SizeMiB*1024)
	case s.LatencySamples < 0:
		return benchmarks.BadSetting("latency_samples", "%d: want 0 or more", s.LatencySamples)
	case s.MinWriteMiBs < 0:
		return benchmarks.BadSetting("min_write_mib_s", "%v: want 0 (not checked) or more", s.MinWriteMiBs)
	case s.MinReadMiBs < 0:
		return benchmarks.BadSetting("min_read_mib_s", "%v: want 0 (not checked) or more", s.MinReadMiBs)
	case s.MaxLatencyMs < 0:
		return benchmarks.BadSetting("max_latency_ms", "%v: want 0 (not checked) or more", s.MaxLatencyMs)
	}
	return nil
}

func (c *disk) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultDiskSettings()
	if err := loadSettings(env, s); err != nil {
		return devcheck.BadSettings(c.Spec().Name, err)
	}
	t := newTally(c.Spec().Name)
	c.measure(ctx, newDiskJudge(t, s.Path), *s)
	return t.Result(fmt.Sprintf("%s writable and fast enough", s.Path))
}

// measure writes, reads back and times a test file under s.Path, which it
// always removes.
func (c *disk) measure(ctx context.Context, t *diskJudge, s diskSettings) {
	f, name, ok := c.createTestFile(t, s)
	if !ok {
		return
	}
	defer os.Remove(name)
	defer f.Close()

	block := directio.AlignedBlock(s.BlockKiB << 10)
	total := int64(s.SizeMiB) << 20
	blocks := int(total / int64(len(block)))
	total = int64(blocks * len(block))
	m := diskRun{c: c, t: t, s: s, f: f, dev: s.Path, block: block, blocks: blocks}
	if !m.write(ctx) {
		return
	}
	if !m.read(ctx) {
		return
	}
	if s.LatencySamples > 0 {
		m.latency(total)
	}
}

// createTestFile makes the test file, opened for direct I/O, in s.Path;
// when it cannot, it records why and returns ok false.
func (c *disk) createTestFile(t *diskJudge, s diskSettings) (f *os.File, name string, ok bool) {
	dev := s.Path
	info, err := os.Stat(s.Path)
	if err != nil {
		c.ioFail(t, dev, "stat", err)
		return nil, "", false
	}
	if !info.IsDir() {
		t.Fail(dev, ReasonDiskPathMissing, "%s is not a directory", s.Path)
		return nil, "", false
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	name = filepath.Join(s.Path, ".vigil-disk-"+hex.EncodeToString(suffix[:]))
	f, err = directio.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, syscall.EINVAL) {
			t.Unknown(dev, ReasonDirectIOUnsupported, "%s does not support O_DIRECT: %v", s.Path, err)
			return nil, "", false
		}
		c.ioFail(t, dev, "create test file in", err)
		return nil, "", false
	}
	return f, name, true
}

// diskRun is one measurement of the disk check over its test file: blocks
// blocks of len(block) bytes, each filled with its own pattern.
type diskRun struct {
	c      *disk
	t      *diskJudge
	s      diskSettings
	f      *os.File
	dev    string
	block  []byte
	blocks int
}

// diskPattern fills b with block i's pattern.
func diskPattern(i int, b []byte) {
	for j := 0; j < len(b); j += 8 {
		b[j] = byte(i)
		b[j+1] = byte(i >> 8)
		b[j+2] = byte(j >> 3)
		b[j+3] = byte(j >> 11)
		b[j+4], b[j+5], b[j+6], b[j+7] = 0x76, 0x69, 0x67, 0x6c
	}
}

// write writes every block, syncs, and records the write rate; false when
// it stopped.
func (m *diskRun) write(ctx context.Context) bool {
	start := m.c.now()
	for i := 0; i < m.blocks; i++ {
		if err := ctx.Err(); err != nil {
			m.t.Unknown(m.dev, devcheck.ReasonCanceled, "%s: stopped while writing: %v", m.s.Path, err)
			return false
		}
		diskPattern(i, m.block)
		if _, err := m.f.Write(m.block); err != nil {
			m.c.ioFail(m.t, m.dev, "write to", err)
			return false
		}
	}
	if err := m.f.Sync(); err != nil {
		m.c.ioFail(m.t, m.dev, "sync", err)
		return false
	}
	total := int64(m.blocks * len(m.block))
	writeRate := rate(total, m.c.now().Sub(start))
	m.c.threshold(m.t, m.dev, "write_mib_s", writeRate, m.s.MinWriteMiBs, ReasonDiskWriteSlow, "write")
	return true
}

// read reads every block back from the start, compares it with its
// pattern, and records the read rate; false when it stopped or found a
// block that differs.
func (m *diskRun) read(ctx context.Context) bool {
	if _, err := m.f.Seek(0, io.SeekStart); err != nil {
		m.c.ioFail(m.t, m.dev, "seek in", err)
		return false
	}
	want := directio.AlignedBlock(len(m.block))
	start := m.c.now()
	for i := 0; i < m.blocks; i++ {
		if err := ctx.Err(); err != nil {
			m.t.Unknown(m.dev, devcheck.ReasonCanceled, "%s: stopped while reading: %v", m.s.Path, err)
			return false
		}
		if _, err := io.ReadFull(m.f, m.block); err != nil {
			m.c.ioFail(m.t, m.dev, "read from", err)
			return false
		}
		diskPattern(i, want)
		if !bytes.Equal(m.block, want) {
			m.t.Fail(m.dev, ReasonDiskDataMismatch, "%s block %d read back differs from what was written", m.s.Path, i)
			return false
		}
	}
	total := int64(m.blocks * len(m.block))
	readRate := rate(total, m.c.now().Sub(start))
	m.c.threshold(m.t, m.dev, "read_mib_s", readRate, m.s.MinReadMiBs, ReasonDiskReadSlow, "read")
	return true
}

// latency reads LatencySamples 4 KiB pages spread over the file's total
// bytes and records their mean latency.
func (m *diskRun) latency(total int64) {
	s := m.s
	small := directio.AlignedBlock(directio.BlockSize)
	pages := total / int64(len(small))
	var sum time.Duration
	for i := 0; i < s.LatencySamples; i++ {
		// Spread the reads over the file: an odd step visits distinct
		// pages of a power-of-two page count.
		off := (int64(i) * 40503 % pages) * int64(len(small))
		t0 := m.c.now()
		if _, err := m.f.ReadAt(small, off); err != nil {
			m.c.ioFail(m.t, m.dev, "read from", err)
			return
		}
		sum += m.c.now().Sub(t0)
	}
	mean := float64(sum) / float64(s.LatencySamples) / float64(time.Millisecond)
	st := benchmarks.StatusPass
	if s.MaxLatencyMs > 0 && mean > s.MaxLatencyMs {
		st = benchmarks.StatusFail
		m.t.Fail(m.dev, ReasonDiskLatencyHigh, "%s 4 KiB read latency %.2f ms > %g", s.Path, mean, s.MaxLatencyMs)
	}
	var thr *float64
	if s.MaxLatencyMs > 0 {
		thr = devcheck.Ptr(s.MaxLatencyMs)
	}
	m.t.Value(m.dev, "read_latency_ms", mean, "ms", thr, "<=", st)
}

// threshold records a throughput and fails it when below min.
func (c *disk) threshold(t *diskJudge, dev, name string, v, min float64, reason, what string) {
	st := benchmarks.StatusPass
	var thr *float64
	if min > 0 {
		thr = devcheck.Ptr(min)
		if v < min {
			st = benchmarks.StatusFail
			t.Fail(dev, reason, "%s %s %.1f MiB/s < %g", dev, what, v, min)
		}
	}
	t.Value(dev, name, v, "MiB/s", thr, ">=", st)
}

// ioFail records a failed file operation with the reason its errno says.
func (c *disk) ioFail(t *diskJudge, dev, op string, err error) {
	reason, what := classifyDiskError(err)
	t.Fail(dev, reason, "%s %s: %s %s: %v", dev, what, op, dev, unwrapPath(err))
}

// classifyDiskError maps a file operation's error to a reason token and a
// short description for people.
func classifyDiskError(err error) (reason, what string) {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return ReasonDiskFull, "disk full"
	case errors.Is(err, syscall.EROFS):
		return ReasonDiskReadOnly, "read-only file system"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return ReasonDiskNotWritable, "permission denied"
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR):
		return ReasonDiskPathMissing, "scratch directory missing"
	}
	return ReasonDiskIOError, "I/O error"
}

// unwrapPath drops the path from an *os.PathError: the message names it already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// rate is a throughput in MiB/s; an unmeasurably short time counts as 1 ns.
func rate(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		d = time.Nanosecond
	}
	return float64(bytes) / (1 << 20) / d.Seconds()
}
