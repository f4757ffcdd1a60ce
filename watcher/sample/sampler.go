// Package sample reads, for one Slurm job on one node, what the hang detector
// needs: the I/O counters, CPU time and states of the job's processes
// (/proc/PID/io, /proc/PID/stat), the job cgroup's CPU time (cgroup v2
// cpu.stat usage_usec or v1 cpuacct.usage), block I/O (v2 io.stat or v1
// blkio.throttle.io_service_bytes) and I/O pressure (v2 io.pressure) where
// the cgroup has them, and the job's accelerators through an Accelerators
// source.
//
// The parsers are pure (they take bytes); the readers take a root path, so
// tests run on fixture trees. Nothing that cannot be read stops a sample: it
// is named in trace.Sample.Missing instead.
//
// # Accelerators
//
// Accelerators is the seam for device telemetry. NVML reads NVIDIA devices
// through go-nvml (an nvml.Interface, so tests use go-nvml's mock);
// TraceAccelerators replays the accel readings of a recorded trace, so that
// a real job on a machine without accelerators can be watched with recorded
// (or made-up) device behaviour. A DCMI source for Ascend NPUs implements the
// same interface.
package sample

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Accelerators reads the job's accelerators. Sample returns one reading per
// device; on a partial failure it returns the readings it has and an error.
type Accelerators interface {
	Sample() ([]trace.Accel, error)
}

// TimedAccelerators is implemented by sources that depend on the sampler's
// clock (a trace replay). Sampler.Sample calls SampleAt instead of Sample
// when the source implements it.
type TimedAccelerators interface {
	Accelerators
	SampleAt(now time.Time) ([]trace.Accel, error)
}

// MaxMissingPerKind bounds the "io:PID"-style entries of one kind in
// trace.Sample.Missing; beyond it one "KIND:+N" entry counts the rest.
const MaxMissingPerKind = 8

// DefaultClockTicks is USER_HZ, the unit of /proc/PID/stat times, on Linux.
const DefaultClockTicks = 100

// Sampler samples one job on one node. Set the fields, then call Sample once
// per period, and Close when done: the sampler keeps the job's /proc/PID
// files open between samples. A Sampler is not safe for concurrent use.
type Sampler struct {
	// Root is the root under which /proc is read; "/" in production.
	Root string
	// Cgroups are the job's cgroup directories, as slurm.JobCgroups returns
	// them (full paths: not re-rooted under Root). Directories nested under
	// another of the list are not counted twice for CPU and block I/O.
	Cgroups []string
	// Accel reads the job's accelerators; nil for none.
	Accel Accelerators
	// Host and Job label the samples.
	Host, Job string
	// PIDs lists the job's processes; nil means slurm.CgroupPIDs(Cgroups).
	PIDs func() ([]int, error)
	// Exclude lists PIDs to leave out (the watcher's own step). The calling
	// process itself is always left out: its reads of /proc are not the
	// job's progress.
	Exclude []int
	// ClockTicks is USER_HZ; 0 means DefaultClockTicks.
	ClockTicks int
	// MaxOpenFiles bounds the /proc/PID files (two per process) kept open
	// between samples, which spares a steady process an open and a close of
	// each file per sample; beyond it files are opened and closed at each
	// sample. 0 means DefaultMaxOpenFiles or half the soft RLIMIT_NOFILE,
	// whichever is smaller; negative keeps none open.
	MaxOpenFiles int

	buf        []byte
	path       []byte
	files      procFiles
	defaultMax int
	launched   bool      // a launcher's rank variable was seen (Ranks)
	rankEnvs   rankCache // each process's rank variables, read once (Ranks)
}

// missing collects Missing entries, bounded per kind.
type missing struct {
	list   []string
	counts map[string]int
}

func (m *missing) add(kind string, id int) {
	if m.counts == nil {
		m.counts = make(map[string]int)
	}
	m.counts[kind]++
	if m.counts[kind] <= MaxMissingPerKind {
		m.list = append(m.list, kind+":"+strconv.Itoa(id))
	}
}

func (m *missing) whole(what string) { m.list = append(m.list, what) }

func (m *missing) done() []string {
	for _, kind := range []string{"gone", "stat", "io"} {
		if n := m.counts[kind] - MaxMissingPerKind; n > 0 {
			m.list = append(m.list, kind+":+"+strconv.Itoa(n))
		}
	}
	return m.list
}

// Sample reads the job's state at now (the caller's clock). It never fails:
// what cannot be read is named in the result's Missing ("pids" when the
// process list or /proc cannot be read, "gone:PID" for a process that
// exited while being read, "stat:PID" and "io:PID" for unreadable files,
// "io" when no process's I/O could be read, "cpu" when no CPU time could be
// read, "cgroup_io", "io_pressure", "accel").
func (s *Sampler) Sample(now time.Time) trace.Sample {
	out := trace.Sample{V: trace.Version, Time: now, Host: s.Host, Job: s.Job}
	var miss missing
	pids, pidsErr := s.listPIDs()
	if pidsErr != nil {
		miss.whole("pids")
		pids = nil
	}
	procs, err := s.readProcs(pids, &miss)
	if err != nil {
		miss.whole("pids")
		pidsErr = err
	}
	out.Procs, out.ProcsD, out.ProcsT, out.IO = procs.procs, procs.procsD, procs.procsT, procs.io
	if procs.ioTried > 0 && procs.ioRead == 0 {
		miss.whole("io")
	}
	cg := s.cgroupCPU()
	if usec, ok := s.cpuUsec(cg, procs, pidsErr == nil); ok {
		out.CPUUsec = usec
	} else {
		miss.whole("cpu")
	}
	out.CgroupIO = s.cgroupIO(&miss)
	out.IOPressure = s.pressure(&miss)
	out.CPUThrottledUsec = cg.throttled
	out.Accel = s.accelerators(now, &miss)
	out.Missing = miss.done()
	return out
}

// procTotals is what a sample reads from the job's processes.
type procTotals struct {
	procs, procsD int      // processes, and those in state D
	procsT        int      // those stopped or traced (state T or t)
	io            trace.IO // I/O counters, summed
	ticks         uint64   // CPU time, clock ticks, summed
	statRead      int      // processes whose stat was read
	ioTried       int      // processes whose io was to be read (not zombies)
	ioRead        int      // processes whose io was read
}

// listPIDs returns the job's processes: from s.PIDs, or the Cgroups'.
func (s *Sampler) listPIDs() ([]int, error) {
	if s.PIDs != nil {
		return s.PIDs()
	}
	return slurm.CgroupPIDs(s.Cgroups)
}

// readProcs reads the stat and io files of the processes pids, but the
// calling process and the excluded ones; what cannot be read goes to miss.
// It fails only when /proc cannot be opened. Files kept open for processes
// no longer listed are closed in any case.
func (s *Sampler) readProcs(pids []int, miss *missing) (procTotals, error) {
	var t procTotals
	s.files.begin(s.Root, s.maxOpenFiles())
	defer s.files.end()
	if len(pids) == 0 {
		return t, nil
	}
	procFD, err := s.openProc()
	if err != nil {
		return t, err
	}
	defer syscall.Close(procFD)
	self := os.Getpid()
	for _, pid := range pids {
		if pid == self || s.excluded(pid) {
			continue
		}
		s.readProcess(procFD, pid, &t, miss)
	}
	return t, nil
}

// readProcess adds process pid to t: its state and CPU time from its stat
// file, then, unless it is a zombie, its I/O counters from its io file.
// A process that exited while being read is named "gone:PID" in miss, an
// unreadable file "stat:PID" or "io:PID".
func (s *Sampler) readProcess(procFD, pid int, t *procTotals, miss *missing) {
	files := s.files.lookup(pid)
	b, err := s.readProc(procFD, files, fileStat)
	if err != nil {
		s.files.dropAll(files)
		if vanished(err) {
			miss.add("gone", pid)
		} else {
			t.procs++
			miss.add("stat", pid)
		}
		return
	}
	st, err := ParseProcStat(b)
	t.procs++
	if err != nil {
		miss.add("stat", pid)
		return
	}
	t.statRead++
	switch st.State {
	case 'D':
		t.procsD++
	case 'T', 't': // stopped (SIGSTOP, job control), or stopped by a tracer
		t.procsT++
	}
	t.ticks += st.Ticks()
	if st.State == 'Z' {
		s.files.drop(files, fileIO)
		return // a zombie's counters reach its parent's when it is reaped
	}
	t.ioTried++
	b, err = s.readProc(procFD, files, fileIO)
	if err != nil {
		if vanished(err) {
			miss.add("gone", pid)
		} else {
			miss.add("io", pid)
		}
		return
	}
	pio, err := ParseProcIO(b)
	if err != nil {
		miss.add("io", pid)
		return
	}
	t.ioRead++
	t.io.RChar += pio.RChar
	t.io.WChar += pio.WChar
	t.io.ReadBytes += pio.ReadBytes
	t.io.WriteBytes += pio.WriteBytes
}

// cpuUsec is the job's CPU time, microseconds: the cgroups' where they
// have it, else the processes' (when their stat could be read, or when
// there are none and pidsOK says the process list was read). ok is false
// when neither is known.
func (s *Sampler) cpuUsec(cg cgroupTimes, procs procTotals, pidsOK bool) (usec uint64, ok bool) {
	if cg.ok {
		return cg.usec, true
	}
	if procs.statRead > 0 || (procs.procs == 0 && pidsOK) {
		ticks := s.ClockTicks
		if ticks <= 0 {
			ticks = DefaultClockTicks
		}
		return procs.ticks * 1e6 / uint64(ticks), true
	}
	return 0, false
}

// accelerators reads s.Accel (at now, for a TimedAccelerators); nil
// without a source. A failed read is named "accel" in miss.
func (s *Sampler) accelerators(now time.Time, miss *missing) []trace.Accel {
	if s.Accel == nil {
		return nil
	}
	var acc []trace.Accel
	var err error
	if ta, ok := s.Accel.(TimedAccelerators); ok {
		acc, err = ta.SampleAt(now)
	} else {
		acc, err = s.Accel.Sample()
	}
	if err != nil {
		miss.whole("accel")
	}
	return acc
}

func (s *Sampler) excluded(pid int) bool {
	for _, p := range s.Exclude {
		if p == pid {
			return true
		}
	}
	return false
}

func vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// openProc opens the directory Root/proc, under which readProc opens files
// relative to it (openat), which spares the kernel the walk of the prefix.
func (s *Sampler) openProc() (int, error) {
	root := s.Root
	if root == "" {
		root = "/"
	}
	dir := filepath.Join(root, "proc")
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}

// readFile reads a whole (small, pseudo-) file into the sampler's buffer,
// which it returns; valid until the next read.
func (s *Sampler) readFile(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return s.readFD(fd, path)
}

// readFD reads fd to its end and closes it. A read that does not fill the
// buffer is taken as the end: /proc and cgroup files produce their whole
// content in one read when the buffer is large enough, and regular files
// read short only at their end; this spares one read system call per file.
func (s *Sampler) readFD(fd int, path string) ([]byte, error) {
	defer syscall.Close(fd)
	if s.buf == nil {
		s.buf = make([]byte, 4096)
	}
	n := 0
	for {
		if n == len(s.buf) {
			s.buf = append(s.buf, make([]byte, len(s.buf))...)
		}
		m, err := syscall.Read(fd, s.buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		n += m
		if m == 0 || n < len(s.buf) {
			return s.buf[:n], nil
		}
	}
}

// topCgroups returns the cgroup dirs that are not nested under another one.
func (s *Sampler) topCgroups() []string {
	var top []string
	for _, d := range s.Cgroups {
		d = filepath.Clean(d)
		nested := false
		for _, o := range s.Cgroups {
			o = filepath.Clean(o)
			if o != d && strings.HasPrefix(d, o+string(filepath.Separator)) {
				nested = true
				break
			}
		}
		if !nested {
			top = append(top, d)
		}
	}
	return top
}

// cgroupTimes is what the job's cgroups say of its CPU, from one read of
// each file per period.
type cgroupTimes struct {
	// usec sums their CPU time (v2 cpu.stat, v1 cpuacct.usage),
	// microseconds; ok is false when no dir has either file, or one
	// cannot be read.
	usec uint64
	ok   bool
	// throttled sums the time their CPU quota held them back
	// (ParseCPUThrottled of every readable cpu.stat), microseconds; 0 when
	// none says: the straggler rule reads its growth, and a cgroup
	// without a quota never grows it.
	throttled uint64
}

// cgroupCPU reads the job's cgroups' CPU time and throttled time.
func (s *Sampler) cgroupCPU() (out cgroupTimes) {
	bad := false
	usec, ok := uint64(0), false
	for _, d := range s.topCgroups() {
		if b, err := s.readFile(filepath.Join(d, "cpu.stat")); err == nil {
			if v, ok, err := ParseCPUThrottled(b); err == nil && ok {
				out.throttled += v
			}
			if v, err := ParseCPUStat(b); err == nil {
				usec += v
				ok = true
				continue
			}
			bad = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			bad = true
		}
		if b, err := s.readFile(filepath.Join(d, "cpuacct.usage")); err == nil {
			if v, err := ParseCPUAcctUsage(b); err == nil {
				usec += v
				ok = true
				continue
			}
			bad = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			bad = true
		}
	}
	if !bad {
		// A cgroup whose CPU file exists but cannot be read: use the
		// processes' times instead of a partial sum.
		out.usec, out.ok = usec, ok
	}
	return out
}

// cgroupIO sums the job cgroups' block I/O: v2 io.stat, else v1
// blkio.throttle.io_service_bytes_recursive, else
// blkio.throttle.io_service_bytes. nil when no dir has any.
func (s *Sampler) cgroupIO(miss *missing) *trace.CgroupIO {
	var sum trace.CgroupIO
	found, bad := false, false
	for _, d := range s.topCgroups() {
		for _, f := range []struct {
			name  string
			parse func([]byte) (trace.CgroupIO, error)
		}{
			{"io.stat", ParseIOStat},
			{"blkio.throttle.io_service_bytes_recursive", ParseBlkioServiceBytes},
			{"blkio.throttle.io_service_bytes", ParseBlkioServiceBytes},
		} {
			b, err := s.readFile(filepath.Join(d, f.name))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err == nil {
				var c trace.CgroupIO
				if c, err = f.parse(b); err == nil {
					sum.ReadBytes += c.ReadBytes
					sum.WriteBytes += c.WriteBytes
					found = true
					break
				}
			}
			bad = true
			break
		}
	}
	if bad {
		miss.whole("cgroup_io")
		return nil
	}
	if !found {
		return nil
	}
	return &sum
}

// pressure sums the job cgroups' io.pressure totals; nil when none has it.
func (s *Sampler) pressure(miss *missing) *trace.Pressure {
	var sum trace.Pressure
	found := false
	for _, d := range s.topCgroups() {
		b, err := s.readFile(filepath.Join(d, "io.pressure"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var p trace.Pressure
		if err == nil {
			p, err = ParsePressure(b)
		}
		if err != nil {
			// io.pressure exists but reads EOPNOTSUPP when PSI is off.
			if !errors.Is(err, syscall.EOPNOTSUPP) {
				miss.whole("io_pressure")
			}
			return nil
		}
		sum.SomeUsec += p.SomeUsec
		sum.FullUsec += p.FullUsec
		found = true
	}
	if !found {
		return nil
	}
	return &sum
}
