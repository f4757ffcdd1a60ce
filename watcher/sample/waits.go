package sample

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/internal/procnet"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// What each of the job's processes waits on, from what the kernel shows
// its owner: /proc/PID/syscall (the system call it is blocked in and its
// arguments; "running" when not in one), /proc/PID/wchan, the target of
// the file descriptor a read-like call waits on (/proc/PID/fd/N), the file
// system of a file (/proc/PID/mountinfo), the other end of a TCP socket
// and whether data to it is being retransmitted (/proc/PID/net/tcp and
// tcp6, by inode), and the cgroup freezer (v1 freezer.state, v2
// cgroup.events). A process that vanished or cannot be read is skipped.

// MaxWaitProcs bounds the processes looked at in one period.
const MaxWaitProcs = 1024

// MaxWaitFDs bounds the file descriptors read (readlink) in one period,
// and maxProcFDs those of one process.
const (
	MaxWaitFDs = 8192
	maxProcFDs = 512
)

// Syscall is what /proc/PID/syscall says.
type Syscall struct {
	// Nr is the system call's number; -1 when the process is blocked but
	// not in a system call (a page fault).
	Nr      int
	Arg0    uint64 // the first argument (a file descriptor for read-like calls)
	Running bool   // "running": on a CPU or runnable, in no system call
}

// ParseSyscall reads /proc/PID/syscall: "running", "-1 SP PC", or the
// number, six arguments, SP and PC ("45 0x3 0x7f28... 0x1 0x0 0x0 0x0 ...").
func ParseSyscall(b []byte) (Syscall, error) {
	f := strings.Fields(string(b))
	switch {
	case len(f) == 1 && f[0] == "running":
		return Syscall{Running: true}, nil
	case len(f) == 3 && f[0] == "-1":
		return Syscall{Nr: -1}, nil
	case len(f) < 2:
		return Syscall{}, fmt.Errorf("syscall %q: want a number and its arguments, or running", strings.TrimSpace(string(b)))
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil || nr < 0 {
		return Syscall{}, fmt.Errorf("syscall number %q: not a number", f[0])
	}
	a0, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
	if err != nil {
		return Syscall{}, fmt.Errorf("syscall argument %q: not hexadecimal", f[1])
	}
	return Syscall{Nr: nr, Arg0: a0}, nil
}

// ParseWchan reads /proc/PID/wchan: the kernel function the process sleeps
// in; "" for none ("0").
func ParseWchan(b []byte) string {
	w := strings.TrimSpace(string(b))
	if w == "0" {
		return ""
	}
	return w
}

// Classes of a system call: whether its first argument is the file
// descriptor waited on, and whether it waits on many.
const (
	callFD    = iota + 1 // read, recvfrom, write, accept, ...: the fd is the first argument
	callPoll             // poll, select, epoll_wait: no single fd
	callFutex            // futex
	callOther            // nanosleep, wait4, ...
)

type callInfo struct {
	name  string
	class int
}

// syscalls are the numbers of the calls a waiting process is found in, by
// architecture (arch/x86/entry/syscalls/syscall_64.tbl; the generic table
// of include/uapi/asm-generic/unistd.h for arm64).
var syscalls = map[string]map[int]callInfo{
	"amd64": {0: {"read", callFD}, 1: {"write", callFD}, 7: {"poll", callPoll}, 17: {"pread64", callFD},
		18: {"pwrite64", callFD}, 19: {"readv", callFD}, 20: {"writev", callFD}, 23: {"select", callPoll},
		35: {"nanosleep", callOther}, 42: {"connect", callFD}, 43: {"accept", callFD}, 44: {"sendto", callFD},
		45: {"recvfrom", callFD}, 46: {"sendmsg", callFD}, 47: {"recvmsg", callFD}, 61: {"wait4", callOther},
		202: {"futex", callFutex}, 230: {"clock_nanosleep", callOther}, 232: {"epoll_wait", callPoll},
		257: {"openat", callOther}, 270: {"pselect6", callPoll}, 271: {"ppoll", callPoll},
		281: {"epoll_pwait", callPoll}, 288: {"accept4", callFD}, 299: {"recvmmsg", callFD},
		307: {"sendmmsg", callFD}, 441: {"epoll_pwait2", callPoll}},
	"arm64": {22: {"epoll_pwait", callPoll}, 56: {"openat", callOther}, 63: {"read", callFD}, 64: {"write", callFD},
		65: {"readv", callFD}, 66: {"writev", callFD}, 67: {"pread64", callFD}, 68: {"pwrite64", callFD},
		72: {"pselect6", callPoll}, 73: {"ppoll", callPoll}, 98: {"futex", callFutex}, 101: {"nanosleep", callOther},
		115: {"clock_nanosleep", callOther}, 202: {"accept", callFD}, 203: {"connect", callFD}, 206: {"sendto", callFD},
		207: {"recvfrom", callFD}, 211: {"sendmsg", callFD}, 212: {"recvmsg", callFD}, 242: {"accept4", callFD},
		243: {"recvmmsg", callFD}, 260: {"wait4", callOther}, 269: {"sendmmsg", callFD}, 441: {"epoll_pwait2", callPoll}},
}

// SyscallName is the name of system call nr on arch (a GOARCH); "" when
// not one vigil tells apart.
func SyscallName(arch string, nr int) string { return syscalls[arch][nr].name }

// FDTarget is what a /proc/PID/fd/N link points at.
type FDTarget struct {
	Kind  string // "socket", "pipe", "anon" (anon_inode:...), or "path"
	Inode uint64 // of a socket or pipe
	Path  string // of a path, or the anon inode's name
}

// ParseFDLink reads the target of a /proc/PID/fd/N link: "socket:[1366254]",
// "pipe:[1385245]", "anon_inode:[eventpoll]", or a path.
func ParseFDLink(link string) FDTarget {
	for _, k := range []string{"socket", "pipe"} {
		if rest, ok := strings.CutPrefix(link, k+":["); ok {
			if n, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64); err == nil && strings.HasSuffix(rest, "]") {
				return FDTarget{Kind: k, Inode: n}
			}
		}
	}
	if rest, ok := strings.CutPrefix(link, "anon_inode:"); ok {
		return FDTarget{Kind: "anon", Path: rest}
	}
	return FDTarget{Kind: "path", Path: link}
}

// Mount is one line of /proc/PID/mountinfo.
type Mount struct {
	Root   string // the mount's root within its file system
	Point  string // where it is mounted
	FSType string // "ext4", "nfs4", "lustre", "cgroup", "cgroup2"
	Super  string // the super block's options ("rw,freezer" for the v1 freezer)
}

// ParseMountInfo reads /proc/PID/mountinfo; lines it cannot read are left
// out.
func ParseMountInfo(b []byte) []Mount {
	var out []Mount
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		pre, post, ok := strings.Cut(string(line), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 2 {
			continue
		}
		m := Mount{Root: unescapeMount(f[3]), Point: unescapeMount(f[4]), FSType: g[0]}
		if len(g) > 2 {
			m.Super = g[2]
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes ("\040" for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountOf is the mount that holds path: the last mounted of those whose
// point is the longest prefix of path; false when none is.
func MountOf(mounts []Mount, path string) (Mount, bool) {
	best, found := Mount{}, false
	for _, m := range mounts {
		p := strings.TrimSuffix(m.Point, "/")
		if path != m.Point && !strings.HasPrefix(path, p+"/") {
			continue
		}
		if !found || len(m.Point) >= len(best.Point) {
			best, found = m, true
		}
	}
	return best, found
}

// ParseFrozen reads a cgroup's freezer word: v1 freezer.state ("FROZEN";
// "FREEZING" and "THAWED" are not frozen) or v2 cgroup.events ("frozen 1").
func ParseFrozen(b []byte) bool {
	s := string(b)
	if strings.TrimSpace(s) == "FROZEN" {
		return true
	}
	for line := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(line) == "frozen 1" {
			return true
		}
	}
	return false
}

// classify says what a process blocked in call waits on,
// from the fd's target, its file mode (when known) and wchan.
func classify(call callInfo, t FDTarget, mode os.FileMode, modeKnown bool, wchan string) string {
	switch call.class {
	case callPoll:
		return trace.WaitPoll
	case callFutex:
		return trace.WaitFutex
	case callFD:
	default:
		if call.name == "openat" && isFIFOOpen(wchan) {
			return trace.WaitPipe // opening a FIFO no writer has opened
		}
		return trace.WaitSleep
	}
	switch t.Kind {
	case "socket":
		return trace.WaitSocket
	case "pipe":
		return trace.WaitPipe
	case "path":
		switch {
		case modeKnown && mode&os.ModeNamedPipe != 0, !modeKnown && strings.Contains(wchan, "pipe_"):
			return trace.WaitPipe
		case modeKnown && mode&(os.ModeDevice|os.ModeCharDevice|os.ModeSocket) != 0:
			return trace.WaitSleep
		}
		return trace.WaitFile
	}
	return trace.WaitSleep
}

// isFIFOOpen says wchan is where open(2) of a FIFO sleeps until the
// other end is opened: fifo_open, or its helper wait_for_partner.
func isFIFOOpen(wchan string) bool { return wchan == "wait_for_partner" || wchan == "fifo_open" }

// waitReader reads what processes wait on under root, within the bounds
// of one period; it caches what processes share (mounts, TCP tables,
// freezer states).
type waitReader struct {
	root   string
	arch   string
	fds    int                                  // file descriptors read so far
	mounts map[string][]Mount                   // by mount namespace
	tcp    map[string]map[uint64]procnet.Socket // by network namespace
	frozen map[string]bool                      // by freezer file
	groups map[trace.Wait]int                   // the result's groups
	// retransTo is every peer address with retransmitted data seen.
	retransTo map[string]bool
}

// ReadWaits reads what the processes pids wait on under root's /proc (at
// most MaxWaitProcs of them); a process that vanished or cannot be read
// counts in Skipped.
func ReadWaits(root string, pids []int) trace.Waits {
	return readWaitsArch(root, pids, runtime.GOARCH)
}

func readWaitsArch(root string, pids []int, arch string) trace.Waits {
	if root == "" {
		root = "/"
	}
	r := &waitReader{root: root, arch: arch, mounts: map[string][]Mount{}, tcp: map[string]map[uint64]procnet.Socket{},
		frozen: map[string]bool{}, groups: map[trace.Wait]int{}, retransTo: map[string]bool{}}
	w := trace.Waits{Waits: []trace.Wait{}}
	for i, pid := range pids {
		if i >= MaxWaitProcs {
			w.Skipped += len(pids) - i
			break
		}
		g, ok := r.process(pid)
		if !ok {
			w.Skipped++
			continue
		}
		w.Procs++
		if g.On == trace.WaitFrozen {
			w.Frozen++
		}
		r.groups[g]++
	}
	for g, n := range r.groups {
		g.Procs = n
		w.Waits = append(w.Waits, g)
	}
	for _, a := range slices.Sorted(maps.Keys(r.retransTo)) {
		if len(w.RetransTo) < trace.MaxRetransTo {
			w.RetransTo = append(w.RetransTo, a)
		}
	}
	slices.SortFunc(w.Waits, func(a, b trace.Wait) int {
		if a.Procs != b.Procs {
			return b.Procs - a.Procs
		}
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
	return w
}

// process reads what pid waits on; false when it vanished or its syscall
// file cannot be read.
func (r *waitReader) process(pid int) (trace.Wait, bool) {
	dir := filepath.Join(r.root, "proc", strconv.Itoa(pid))
	b, err := os.ReadFile(filepath.Join(dir, "syscall"))
	if err != nil {
		return trace.Wait{}, false
	}
	sc, err := ParseSyscall(b)
	if err != nil {
		return trace.Wait{}, false
	}
	if r.isFrozen(dir) {
		return trace.Wait{On: trace.WaitFrozen}, true
	}
	if sc.Running {
		return r.withRetrans(dir, trace.Wait{On: trace.WaitRunning}), true
	}
	call := syscalls[r.arch][sc.Nr]
	wchan := ""
	if b, err := os.ReadFile(filepath.Join(dir, "wchan")); err == nil {
		wchan = ParseWchan(b)
	}
	if call.class != callFD {
		return r.withRetrans(dir, trace.Wait{On: classify(call, FDTarget{}, 0, false, wchan), Syscall: call.name}), true
	}
	fd := filepath.Join(dir, "fd", strconv.FormatUint(sc.Arg0, 10))
	link, err := os.Readlink(fd)
	r.fds++
	if err != nil {
		return trace.Wait{On: trace.WaitSleep, Syscall: call.name}, true
	}
	t := ParseFDLink(link)
	fi, statErr := os.Stat(fd)
	var mode os.FileMode
	if statErr == nil {
		mode = fi.Mode()
	}
	g := trace.Wait{On: classify(call, t, mode, statErr == nil, wchan), Syscall: call.name}
	switch {
	case g.On == trace.WaitFile, g.On == trace.WaitPipe && t.Kind == "path": // a file, or a named FIFO
		if m, ok := MountOf(r.mountsOf(dir), t.Path); ok {
			g.FS = m.FSType
		}
	case g.On == trace.WaitSocket:
		if c, ok := r.tcpOf(dir)[t.Inode]; ok {
			g.Peer, g.Retrans = c.Remote.Addr().String(), c.Retransmitting()
			if g.Retrans {
				r.retransTo[g.Peer] = true
			}
		}
	}
	return g, true
}

// withRetrans adds to g, a wait on no single fd, the other end of the
// process's first TCP socket whose data is being retransmitted, and notes
// the other end of every such socket (at most maxProcFDs of its fds,
// within MaxWaitFDs in all).
func (r *waitReader) withRetrans(dir string, g trace.Wait) trace.Wait {
	if r.fds >= MaxWaitFDs {
		return g
	}
	ents, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return g
	}
	var tcp map[uint64]procnet.Socket
	for i, e := range ents {
		if i >= maxProcFDs || r.fds >= MaxWaitFDs {
			break
		}
		r.fds++
		link, err := os.Readlink(filepath.Join(dir, "fd", e.Name()))
		if err != nil {
			continue
		}
		t := ParseFDLink(link)
		if t.Kind != "socket" {
			continue
		}
		if tcp == nil {
			tcp = r.tcpOf(dir)
		}
		if c, ok := tcp[t.Inode]; ok && c.Retransmitting() {
			peer := c.Remote.Addr().String()
			r.retransTo[peer] = true
			if !g.Retrans {
				g.Peer, g.Retrans = peer, true
			}
		}
	}
	return g
}

// nsKey is the namespace link of dir's process (ns/net, ns/mnt), or the
// process's own directory when it cannot be read.
func nsKey(dir, ns string) string {
	if l, err := os.Readlink(filepath.Join(dir, "ns", ns)); err == nil {
		return l
	}
	return dir
}

// mountsOf is the mount table of dir's process (cached per namespace).
func (r *waitReader) mountsOf(dir string) []Mount {
	k := nsKey(dir, "mnt")
	m, ok := r.mounts[k]
	if !ok {
		if b, err := os.ReadFile(filepath.Join(dir, "mountinfo")); err == nil {
			m = ParseMountInfo(b)
		}
		r.mounts[k] = m
	}
	return m
}

// tcpOf is the TCP sockets of dir's process's network namespace by inode
// (cached).
func (r *waitReader) tcpOf(dir string) map[uint64]procnet.Socket {
	k := nsKey(dir, "net")
	if t, ok := r.tcp[k]; ok {
		return t
	}
	t := map[uint64]procnet.Socket{}
	socks, _ := procnet.ReadTCP(dir) // what could be read
	for _, c := range socks {
		if c.Inode != 0 {
			t[c.Inode] = c
		}
	}
	r.tcp[k] = t
	return t
}

// isFrozen reports whether dir's process is in a frozen cgroup: its v1
// freezer cgroup's freezer.state, or its v2 cgroup's cgroup.events, found
// through its mount table (under root).
func (r *waitReader) isFrozen(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup"))
	if err != nil {
		return false
	}
	mounts := r.mountsOf(dir)
	for _, cg := range slurm.ParseProcCgroup(b) {
		file := "cgroup.events"
		want := func(m Mount) bool { return m.FSType == "cgroup2" }
		if cg.Controllers != "" {
			if !slices.Contains(strings.Split(cg.Controllers, ","), "freezer") {
				continue
			}
			file = "freezer.state"
			want = func(m Mount) bool {
				return m.FSType == "cgroup" && slices.Contains(strings.Split(m.Super, ","), "freezer")
			}
		}
		for _, m := range mounts {
			if !want(m) {
				continue
			}
			rel, ok := strings.CutPrefix(cg.Path, strings.TrimSuffix(m.Root, "/"))
			if !ok {
				continue
			}
			path := filepath.Join(r.root, m.Point, rel, file)
			f, seen := r.frozen[path]
			if !seen {
				if b, err := os.ReadFile(path); err == nil {
					f = ParseFrozen(b)
				}
				r.frozen[path] = f
			}
			if f {
				return true
			}
		}
	}
	return false
}

// Waits reads what the job's processes wait on (ReadWaits over the
// processes Sample reads, the excluded ones and the calling process
// aside); false when the processes cannot be listed.
func (s *Sampler) Waits() (trace.Waits, bool) {
	pids, err := s.listPIDs()
	if err != nil {
		return trace.Waits{}, false
	}
	self := os.Getpid()
	pids = slices.DeleteFunc(slices.Clone(pids), func(p int) bool { return p == self || s.excluded(p) })
	return ReadWaits(s.Root, pids), true
}
