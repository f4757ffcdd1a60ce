package sample

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// DefaultMaxOpenFiles is the most /proc/PID file descriptors a Sampler
// keeps open between samples when MaxOpenFiles is 0: two per process, so
// files stay open for up to 1024 processes. It is lowered to half the soft
// RLIMIT_NOFILE where that is smaller. Each open /proc file holds about
// 4.4 kB of kernel memory (mostly its read buffer), 9 MB at this bound; the
// job's memory cgroup counts it where kernel memory is accounted.
const DefaultMaxOpenFiles = 2048

// procFile names a per-process file the sampler reads.
type procFile int

const (
	fileStat procFile = iota // /proc/PID/stat
	fileIO                   // /proc/PID/io
	numProcFiles
)

var procFileNames = [numProcFiles]string{"stat", "io"}

// openProcess holds the open files of one process between samples.
type openProcess struct {
	pid  int
	fd   [numProcFiles]int // -1 when not open
	seen uint64            // the last sample that listed the process
}

func (p *openProcess) empty() bool { return p.fd == [numProcFiles]int{-1, -1} }

// procFiles keeps the files /proc/PID/stat and /proc/PID/io open across
// samples and re-reads them from offset 0 (pread): a process that stays in
// the job costs two system calls per sample instead of six. The files are
// bound to the process, not to its PID: once it has exited, a read fails
// with ESRCH even if the PID now names another process, so a PID reused by
// a new process of the job is never read through the old process's file.
//
// Any failed read through a kept file closes it, and the file is opened
// afresh as on a first read, so errors, vanished and new processes are
// reported exactly as without the cache. Processes that are no longer
// listed have their files closed at the end of the sample.
//
// On fixture trees (regular files) a file rewritten in place is seen; one
// replaced by rename or removed is not, until its process leaves the list.
type procFiles struct {
	root   string        // Sampler.Root the files were opened under
	sample uint64        // counts samples
	procs  []openProcess // sorted by pid
	added  []openProcess // processes first met in this sample
	hint   int           // where in procs the next lookup looks first
	open   int           // descriptors held
	max    int           // bound on open in this sample
}

// begin starts a sample under root: files opened under another root are
// closed.
func (c *procFiles) begin(root string, maxOpen int) {
	if root != c.root {
		c.closeAll()
		c.root = root
	}
	c.max = maxOpen
	c.sample++
	c.hint = 0
	c.added = c.added[:0]
}

// lookup returns pid's entry, marked as listed in this sample; a new one
// with no open file if pid has none. The pointer is valid until the next
// lookup. Process lists come sorted (slurm.CgroupPIDs): then each lookup
// finds its entry where the previous one left off.
func (c *procFiles) lookup(pid int) *openProcess {
	i := c.hint
	if i >= len(c.procs) || c.procs[i].pid != pid {
		var found bool
		i, found = slices.BinarySearchFunc(c.procs, pid, func(p openProcess, pid int) int { return cmp.Compare(p.pid, pid) })
		if !found {
			c.hint = i
			c.added = append(c.added, openProcess{pid: pid, fd: [numProcFiles]int{-1, -1}, seen: c.sample})
			return &c.added[len(c.added)-1]
		}
	}
	c.hint = i + 1
	c.procs[i].seen = c.sample
	return &c.procs[i]
}

// end closes the files of processes the sample did not list, and forgets
// processes with no open file.
func (c *procFiles) end() {
	keep := c.procs[:0]
	for i := range c.procs {
		p := &c.procs[i]
		if p.seen != c.sample {
			c.dropAll(p)
		}
		if !p.empty() {
			keep = append(keep, *p)
		}
	}
	sorted := true
	for _, p := range c.added {
		if !p.empty() {
			keep = append(keep, p)
			sorted = false
		}
	}
	if !sorted {
		slices.SortStableFunc(keep, func(a, b openProcess) int { return cmp.Compare(a.pid, b.pid) })
		// A list that names a process twice (a PIDs function may) opens
		// its files twice in its first sample: keep the first.
		n := 0
		for i := range keep {
			if n > 0 && keep[i].pid == keep[n-1].pid {
				c.dropAll(&keep[i])
				continue
			}
			keep[n] = keep[i]
			n++
		}
		keep = keep[:n]
	}
	c.procs = keep
	c.added = c.added[:0]
}

// dropAll closes the process's kept files.
func (c *procFiles) dropAll(p *openProcess) {
	for f := range p.fd {
		c.drop(p, procFile(f))
	}
}

// drop closes one of the process's kept files.
func (c *procFiles) drop(p *openProcess, f procFile) {
	if p.fd[f] >= 0 {
		syscall.Close(p.fd[f])
		p.fd[f] = -1
		c.open--
	}
}

// closeAll closes every kept file; it returns the first error.
func (c *procFiles) closeAll() error {
	var first error
	for _, list := range [][]openProcess{c.procs, c.added} {
		for _, p := range list {
			for f, fd := range p.fd {
				if fd < 0 {
					continue
				}
				if err := syscall.Close(fd); err != nil && first == nil {
					first = fmt.Errorf("sample: close %s/%d/%s: %w", filepath.Join(c.root, "proc"), p.pid, procFileNames[f], err)
				}
				c.open--
			}
		}
	}
	c.procs, c.added = c.procs[:0], c.added[:0]
	return first
}

// Close closes the /proc files the sampler keeps open between samples. The
// Sampler stays usable: the next Sample opens them again.
func (s *Sampler) Close() error {
	return s.files.closeAll()
}

// maxOpenFiles is the bound on kept descriptors for this sample.
func (s *Sampler) maxOpenFiles() int {
	switch {
	case s.MaxOpenFiles < 0:
		return 0
	case s.MaxOpenFiles > 0:
		return s.MaxOpenFiles
	}
	if s.defaultMax == 0 {
		s.defaultMax = DefaultMaxOpenFiles
		var rl syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur/2 < uint64(s.defaultMax) {
			s.defaultMax = int(rl.Cur / 2)
		}
		if s.defaultMax == 0 {
			s.defaultMax = -1 // none kept; computed once
		}
	}
	return max(s.defaultMax, 0)
}

// readProc reads file of the process p into the sampler's buffer, through
// the file kept open since an earlier sample if there is one, else by
// opening it under procFD (the open Root/proc directory, see openProc),
// keeping it open if the bound allows. The result is valid until the next
// read.
func (s *Sampler) readProc(procFD int, p *openProcess, f procFile) ([]byte, error) {
	c := &s.files
	if fd := p.fd[f]; fd >= 0 {
		if b, err := s.pread(fd); err == nil {
			return b, nil
		}
		// Gone, or no longer readable: do what a first read does.
		c.drop(p, f)
	}
	path := strconv.AppendInt(s.path[:0], int64(p.pid), 10)
	path = append(path, '/')
	path = append(path, procFileNames[f]...)
	s.path = path
	fd, err := openat(procFD, path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: string(path), Err: err}
	}
	b, err := s.pread(fd)
	if err != nil {
		syscall.Close(fd)
		return nil, &fs.PathError{Op: "read", Path: string(path), Err: err}
	}
	if c.open >= c.max {
		syscall.Close(fd)
		return b, nil
	}
	p.fd[f] = fd
	c.open++
	return b, nil
}

// openat opens path (relative to dirFD) read-only.
func openat(dirFD int, path []byte) (int, error) {
	for {
		fd, err := syscall.Openat(dirFD, string(path), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}

// pread reads fd from offset 0 to its end into the sampler's buffer. A read
// that does not fill the buffer is taken as the end: /proc files produce
// their whole content in one read when the buffer is large enough, and
// regular files read short only at their end; this spares one system call
// per file.
func (s *Sampler) pread(fd int) ([]byte, error) {
	if s.buf == nil {
		s.buf = make([]byte, 4096)
	}
	n := 0
	for {
		if n == len(s.buf) {
			s.buf = append(s.buf, make([]byte, len(s.buf))...)
		}
		m, err := syscall.Pread(fd, s.buf[n:], int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		n += m
		if m == 0 || n < len(s.buf) {
			return s.buf[:n], nil
		}
	}
}
