package sample

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// The fixtures under testdata/waits/node are real /proc files of processes
// blocked on purpose: 14443 in recvfrom and 14444 in epoll_wait on TCP
// sockets to 127.0.0.2 whose packets an iptables OUTPUT rule dropped
// (zero-window probes), 17117 in recvfrom with its packets dropped on
// INPUT (retransmits), 18132 a cat reading a FIFO, 18264 a cat reading a
// pipe, 19218 and 19219 in a frozen v1 freezer cgroup, 19839 in a frozen
// cgroup v2.
const waitsRoot = "testdata/waits/node"

func TestParseSyscall(t *testing.T) {
	for _, tc := range []struct {
		pid  string
		want Syscall
	}{
		{"14443", Syscall{Nr: 45, Arg0: 3}}, {"14444", Syscall{Nr: 232, Arg0: 4}}, {"18132", Syscall{Nr: 0, Arg0: 3}},
		{"18264", Syscall{Nr: 0, Arg0: 0}}, {"19218", Syscall{Nr: 230}},
	} {
		t.Run(tc.pid, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(waitsRoot, "proc", tc.pid, "syscall"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseSyscall(b)
			if err != nil || got != tc.want {
				t.Fatalf("ParseSyscall = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	for in, want := range map[string]Syscall{"running\n": {Running: true}, "-1 0x7ffd 0x7f00\n": {Nr: -1}} {
		if got, err := ParseSyscall([]byte(in)); err != nil || got != want {
			t.Errorf("ParseSyscall(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x 0x3", "45 zz", "-5 0x1 0x2"} {
		if _, err := ParseSyscall([]byte(bad)); err == nil {
			t.Errorf("ParseSyscall(%q): no error", bad)
		}
	}
}

func TestParseFDLinkAndWchan(t *testing.T) {
	for in, want := range map[string]FDTarget{
		"socket:[1366254]": {Kind: "socket", Inode: 1366254}, "pipe:[1385245]": {Kind: "pipe", Inode: 1385245},
		"anon_inode:[eventpoll]": {Kind: "anon", Path: "[eventpoll]"}, "/tmp/wcap/fifo": {Kind: "path", Path: "/tmp/wcap/fifo"},
		"socket:[12": {Kind: "path", Path: "socket:[12"},
	} {
		if got := ParseFDLink(in); got != want {
			t.Errorf("ParseFDLink(%q) = %+v, want %+v", in, got, want)
		}
	}
	if w := ParseWchan([]byte("0")); w != "" {
		t.Errorf("ParseWchan(0) = %q", w)
	}
	b, _ := os.ReadFile(filepath.Join(waitsRoot, "proc/18132/wchan"))
	if w := ParseWchan(b); w != "anon_pipe_read" {
		t.Errorf("wchan of the FIFO reader = %q", w)
	}
}

func TestParseMountInfo(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(waitsRoot, "proc/18132/mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	// A Lustre and an NFS mount as the kernel prints them.
	b = append(b, "120 27 0:51 / /lustre/scratch rw,relatime shared:60 - lustre 10.0.0.9@o2ib:/scratch rw,flock\n"+
		"121 27 0:52 / /home/my\\040data rw,relatime shared:61 - nfs4 fs1:/home rw,vers=4.2\n"...)
	ms := ParseMountInfo(b)
	for path, want := range map[string]string{"/": "ext4", "/root/x.py": "ext4", "/lustre/scratch/ds/0001.tar": "lustre",
		"/home/my data/a": "nfs4", "/sys/fs/cgroup/freezer/x": "cgroup", "/lustre/scratchy": "ext4"} {
		if m, ok := MountOf(ms, path); !ok || m.FSType != want {
			t.Errorf("MountOf(%q) = %+v, %v; want %s", path, m, ok, want)
		}
	}
}

func TestParseFrozen(t *testing.T) {
	for path, want := range map[string]bool{"sys/fs/cgroup/freezer/vigilwaits/freezer.state": true,
		"sys/fs/cgroup/unified/vigilwaits2/cgroup.events": true} {
		b, err := os.ReadFile(filepath.Join(waitsRoot, path))
		if err != nil || ParseFrozen(b) != want {
			t.Errorf("%s: frozen %v (%v), want %v", path, ParseFrozen(b), err, want)
		}
	}
	for _, s := range []string{"THAWED\n", "FREEZING\n", "populated 1\nfrozen 0\n"} {
		if ParseFrozen([]byte(s)) {
			t.Errorf("%q read as frozen", s)
		}
	}
}

func TestReadWaitsFixtures(t *testing.T) {
	w := readWaitsArch(waitsRoot, []int{14443, 14444, 17117, 18132, 18264, 19218, 19219, 19839, 99999}, "amd64")
	want := []trace.Wait{
		{On: trace.WaitFrozen, Procs: 3},
		{On: trace.WaitSocket, Syscall: "recvfrom", Peer: "127.0.0.2", Retrans: true, Procs: 2},
		{On: trace.WaitPipe, Syscall: "read", Procs: 1},             // an anonymous pipe
		{On: trace.WaitPipe, Syscall: "read", FS: "ext4", Procs: 1}, // a FIFO on ext4
		{On: trace.WaitPoll, Syscall: "epoll_wait", Peer: "127.0.0.2", Retrans: true, Procs: 1},
	}
	if w.Procs != 8 || w.Frozen != 3 || w.Skipped != 1 || !slices.Equal(w.Waits, want) {
		t.Fatalf("ReadWaits = %+v,\nwant 8 processes, 3 frozen, 1 skipped (vanished), groups %+v", w, want)
	}
	if !slices.Equal(w.RetransTo, []string{"127.0.0.2"}) {
		t.Errorf("RetransTo = %q, want the one peer whose data is retransmitted", w.RetransTo)
	}
}

// startBlocked starts a process and waits until the kernel shows it
// blocked in a system call (not running, not starting up).
func startBlocked(t *testing.T, cmd *exec.Cmd, call string) int {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for range 200 {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/syscall"); err == nil {
			if sc, err := ParseSyscall(b); err == nil && SyscallName(runtime.GOARCH, sc.Nr) == call {
				return cmd.Process.Pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%v never blocked in %s", cmd.Args, call)
	return 0
}

// TestSamplerWaitsRealProcesses reads real blocked processes: a cat on a
// FIFO, a cat opening a FIFO nobody writes, a cat on a pipe, and a reader
// of a TCP socket.
func TestSamplerWaitsRealProcesses(t *testing.T) {
	if _, ok := syscalls[runtime.GOARCH]; !ok {
		t.Skipf("no system call table for %s", runtime.GOARCH)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := exec.Command("mkfifo", fifo).Run(); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer that never writes
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	onFIFO := startBlocked(t, exec.Command("cat", fifo), "read")
	lonely := filepath.Join(dir, "lonely")
	if err := exec.Command("mkfifo", lonely).Run(); err != nil {
		t.Fatal(err)
	}
	opening := startBlocked(t, exec.Command("cat", lonely), "openat")
	pr, pw, _ := os.Pipe()
	defer pw.Close()
	pipeCat := exec.Command("cat")
	pipeCat.Stdin = pr
	onPipe := startBlocked(t, pipeCat, "read")
	pr.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { c, _ := l.Accept(); defer c.Close(); time.Sleep(time.Minute) }()
	reader := exec.Command("python3", "-c", "import socket,sys; s=socket.create_connection(('127.0.0.1', int(sys.argv[1]))); s.recv(1)",
		strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	onSock := startBlocked(t, reader, "recvfrom")
	s := &Sampler{Root: "/", PIDs: func() ([]int, error) { return []int{onFIFO, opening, onPipe, onSock}, nil }}
	got, ok := s.Waits()
	if !ok {
		t.Fatal("Waits: the processes could not be listed")
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	m, _ := MountOf(ParseMountInfo(mi), fifo)
	want := []trace.Wait{
		{On: trace.WaitPipe, Syscall: "openat", Procs: 1},
		{On: trace.WaitPipe, Syscall: "read", Procs: 1},
		{On: trace.WaitPipe, Syscall: "read", FS: m.FSType, Procs: 1},
		{On: trace.WaitSocket, Syscall: "recvfrom", Peer: "127.0.0.1", Procs: 1},
	}
	slices.SortFunc(want, func(a, b trace.Wait) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	if got.Procs != 4 || !slices.Equal(got.Waits, want) {
		t.Fatalf("Waits = %+v, want %+v", got, want)
	}
}
