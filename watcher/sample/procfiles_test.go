package sample

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// checkFiles checks the sampler's kept files: sorted by PID, one entry per
// process, the count of open descriptors right, and this process holding
// exactly base+that many descriptors.
func checkFiles(t *testing.T, s *Sampler, base int) {
	t.Helper()
	c := &s.files
	n := 0
	for i, p := range c.procs {
		if i > 0 && c.procs[i-1].pid >= p.pid {
			t.Fatalf("kept files not sorted by PID: %+v", c.procs)
		}
		if p.empty() {
			t.Fatalf("entry without files kept: %+v", p)
		}
		for _, fd := range p.fd {
			if fd >= 0 {
				n++
			}
		}
	}
	if n != c.open {
		t.Fatalf("%d descriptors kept, counted %d", n, c.open)
	}
	if got := openFDs(t); got != base+n {
		t.Fatalf("process has %d descriptors open, want %d + %d kept", got, base, n)
	}
}

// fixturePIDs are the PIDs of fixtureTree(_, _, n).
func fixturePIDs(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = 10000 + i
	}
	return p
}

// fixtureSum is what a sample of the fixture processes pids adds up to.
func fixtureSum(pids []int) (io trace.IO, cpuUsec uint64, procsD int) {
	for _, pid := range pids {
		i := pid - 10000
		io.RChar += uint64(123456789 + i)
		io.WChar += uint64(98765 + i)
		io.ReadBytes += uint64(4096 * i)
		io.WriteBytes += uint64(8192 * i)
		cpuUsec += uint64(1000+i+100+i) * 10000
		if i%50 == 0 {
			procsD++
		}
	}
	return io, cpuUsec, procsD
}

// sameFiles reports whether a and b hold the same descriptors for the same
// processes.
func sameFiles(a, b []openProcess) bool {
	return slices.EqualFunc(a, b, func(x, y openProcess) bool { return x.pid == y.pid && x.fd == y.fd })
}

// isOpen reports whether fd is an open descriptor of this process.
func isOpen(fd int) bool {
	_, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	return errno == 0
}

func wantFixture(pids []int) trace.Sample {
	io, cpu, d := fixtureSum(pids)
	return trace.Sample{V: 1, Time: now, IO: io, CPUUsec: cpu, Procs: len(pids), ProcsD: d}
}

func TestSamplerKeepsFilesOpen(t *testing.T) {
	root, _ := fixtureTree(t, t.TempDir(), 3)
	list := fixturePIDs(3)
	s := &Sampler{Root: root, PIDs: func() ([]int, error) { return list, nil }}
	t.Cleanup(func() { s.Close() })
	base := openFDs(t)

	if got, want := s.Sample(now), wantFixture(list); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	checkFiles(t, s, base)
	if s.files.open != 6 {
		t.Fatalf("%d files kept open, want 6", s.files.open)
	}
	first := slices.Clone(s.files.procs)

	// A file rewritten in place is read again through the same descriptor.
	io := "rchar: 1\nwchar: 2\nsyscr: 0\nsyscw: 0\nread_bytes: 3\nwrite_bytes: 4\ncancelled_write_bytes: 0\n"
	if err := os.WriteFile(filepath.Join(root, "proc/10001/io"), []byte(io), 0o644); err != nil {
		t.Fatal(err)
	}
	want := wantFixture(list)
	want.IO.RChar -= 123456789 + 1 - 1
	want.IO.WChar -= 98765 + 1 - 2
	want.IO.ReadBytes -= 4096 - 3
	want.IO.WriteBytes -= 8192 - 4
	for i := 0; i < 3; i++ {
		if got := s.Sample(now); !reflect.DeepEqual(got, want) {
			t.Fatalf("sample %d: got %+v, want %+v", i+2, got, want)
		}
		checkFiles(t, s, base)
		if !sameFiles(s.files.procs, first) {
			t.Fatalf("sample %d: files %+v, want the first sample's %+v", i+2, s.files.procs, first)
		}
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, s, base)
	if s.files.open != 0 || openFDs(t) != base {
		t.Fatalf("after Close: %d kept, %d open, want 0 and %d", s.files.open, openFDs(t), base)
	}
	// Still usable after Close.
	if got := s.Sample(now); !reflect.DeepEqual(got, want) {
		t.Fatalf("after Close: got %+v, want %+v", got, want)
	}
	checkFiles(t, s, base)
}

func TestSamplerClosesFilesOfUnlistedProcesses(t *testing.T) {
	root, _ := fixtureTree(t, t.TempDir(), 6)
	all := fixturePIDs(6)
	var list []int
	s := &Sampler{Root: root, PIDs: func() ([]int, error) { return list, nil }}
	t.Cleanup(func() { s.Close() })
	base := openFDs(t)
	for _, step := range []struct {
		name string
		pids []int
	}{
		{"all", all},
		{"shrunk", all[:2]},
		{"grown, reversed", []int{all[5], all[3], all[1], all[0]}},
		{"listed twice", []int{all[2], all[2], all[4], all[1]}},
		{"kept again", []int{all[2], all[4], all[1]}},
		{"none", []int{}},
		{"again", all},
	} {
		t.Run(step.name, func(t *testing.T) {
			list = step.pids
			got := s.Sample(now)
			want := wantFixture(step.pids)
			if len(step.pids) == 0 {
				want = trace.Sample{V: 1, Time: now}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
			checkFiles(t, s, base)
			var kept []int
			for _, p := range s.files.procs {
				kept = append(kept, p.pid)
			}
			wantKept := slices.Compact(slices.Sorted(slices.Values(step.pids)))
			if !slices.Equal(kept, wantKept) {
				t.Fatalf("files kept for %v, want %v", kept, wantKept)
			}
		})
	}

	t.Run("process list unreadable", func(t *testing.T) {
		s.PIDs = func() ([]int, error) { return nil, errors.New("no") }
		if got := s.Sample(now); !reflect.DeepEqual(got.Missing, []string{"pids", "cpu"}) {
			t.Fatalf("got %+v", got)
		}
		checkFiles(t, s, base)
		if s.files.open != 0 {
			t.Fatalf("%d files kept", s.files.open)
		}
	})
}

func TestSamplerMaxOpenFiles(t *testing.T) {
	root, _ := fixtureTree(t, t.TempDir(), 5)
	list := fixturePIDs(5)
	for _, tc := range []struct {
		max, kept int
	}{
		{max: 4, kept: 4},
		{max: 3, kept: 3},
		{max: 1, kept: 1},
		{max: -1, kept: 0},
		{max: 100, kept: 10},
	} {
		t.Run(fmt.Sprint("max=", tc.max), func(t *testing.T) {
			s := &Sampler{Root: root, PIDs: func() ([]int, error) { return list, nil }, MaxOpenFiles: tc.max}
			t.Cleanup(func() { s.Close() })
			base := openFDs(t)
			for i := 0; i < 3; i++ {
				if got, want := s.Sample(now), wantFixture(list); !reflect.DeepEqual(got, want) {
					t.Fatalf("sample %d: got %+v, want %+v", i+1, got, want)
				}
				checkFiles(t, s, base)
				if s.files.open != tc.kept {
					t.Fatalf("sample %d: %d files kept, want %d", i+1, s.files.open, tc.kept)
				}
			}
		})
	}
	t.Run("default", func(t *testing.T) {
		var rl syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			t.Fatal(err)
		}
		s := &Sampler{}
		if got, want := s.maxOpenFiles(), int(min(DefaultMaxOpenFiles, rl.Cur/2)); got != want {
			t.Fatalf("maxOpenFiles() = %d, want %d (soft RLIMIT_NOFILE %d)", got, want, rl.Cur)
		}
	})
}

// TestSamplerReopensAfterFailedRead: a kept file that fails to read is
// closed and the file opened again, as on a first read.
func TestSamplerReopensAfterFailedRead(t *testing.T) {
	root, _ := fixtureTree(t, t.TempDir(), 2)
	list := fixturePIDs(2)
	s := &Sampler{Root: root, PIDs: func() ([]int, error) { return list, nil }}
	t.Cleanup(func() { s.Close() })
	base := openFDs(t)
	s.Sample(now)
	// Swap a kept descriptor for one that fails to read (a directory).
	p := &s.files.procs[1]
	dir, err := syscall.Open(root, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(p.fd[fileIO])
	p.fd[fileIO] = dir
	if got, want := s.Sample(now), wantFixture(list); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	checkFiles(t, s, base)
	// checkFiles found no descriptor beyond the kept ones: the directory's
	// is closed.
	if s.files.open != 4 {
		t.Fatalf("%d files kept, want 4", s.files.open)
	}
}

// TestSamplerRootChange: files kept under one root are closed when the
// sampler reads another.
func TestSamplerRootChange(t *testing.T) {
	root, _ := fixtureTree(t, t.TempDir(), 2)
	list := fixturePIDs(2)
	s := &Sampler{Root: root, PIDs: func() ([]int, error) { return list, nil }}
	t.Cleanup(func() { s.Close() })
	base := openFDs(t)
	s.Sample(now)
	if s.files.open != 4 {
		t.Fatalf("%d files kept", s.files.open)
	}
	s.Root = "testdata"
	s.PIDs = pids(101)
	got := s.Sample(now)
	if want := (trace.IO{RChar: 1000, WChar: 2000, ReadBytes: 4096, WriteBytes: 8192}); got.IO != want || got.Procs != 1 {
		t.Fatalf("got %+v", got)
	}
	checkFiles(t, s, base)
	if s.files.open != 2 {
		t.Fatalf("%d files kept, want 2", s.files.open)
	}
}

// TestSamplerProcessExits samples a real process through kept files while
// it runs, as a zombie and after it has been reaped.
func TestSamplerProcessExits(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatalf("sleep (Debian package coreutils): %v", err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	pid := cmd.Process.Pid
	// On a loaded machine the new process may still be paging its program
	// in (state D) for a moment: wait until it sleeps, as sleep(1) does.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(b), ") S ") {
			break
		}
	}
	s := &Sampler{Root: "/", PIDs: pids(pid)}
	t.Cleanup(func() { s.Close() })
	base := openFDs(t)

	for i := 0; i < 2; i++ {
		if got := s.Sample(time.Now()); got.Procs != 1 || got.ProcsD != 0 || len(got.Missing) != 0 {
			t.Fatalf("running, sample %d: got %+v", i+1, got)
		}
		checkFiles(t, s, base)
		if s.files.open != 2 {
			t.Fatalf("running: %d files kept, want 2", s.files.open)
		}
	}
	kept := s.files.procs[0].fd
	stat := kept[fileStat]

	// Killed, not yet reaped: a zombie, counted, its I/O not read and its
	// io file closed.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := s.pread(stat)
		if err != nil {
			t.Fatal(err)
		}
		st, err := ParseProcStat(b)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %c 10 s after SIGKILL", st.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := s.Sample(time.Now()); got.Procs != 1 || len(got.Missing) != 0 || got.IO != (trace.IO{}) {
		t.Fatalf("zombie: got %+v", got)
	}
	checkFiles(t, s, base)
	if s.files.open != 1 || s.files.procs[0].fd[fileStat] != stat || isOpen(kept[fileIO]) {
		t.Fatalf("zombie: files %+v (%d open), want only stat (%d) kept", s.files.procs, s.files.open, stat)
	}

	// Reaped: the kept file reads ESRCH, whatever process the PID may name
	// by now; the sample says the process is gone and closes its files.
	cmd.Wait() // closes the process's pidfd: this process holds one descriptor fewer
	waited = true
	if _, err := s.pread(stat); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("read of a reaped process's stat through a kept file: %v, want ESRCH", err)
	}
	if got := s.Sample(time.Now()); got.Procs != 0 || !reflect.DeepEqual(got.Missing, []string{fmt.Sprint("gone:", pid)}) {
		t.Fatalf("reaped: got %+v", got)
	}
	if s.files.open != 0 || len(s.files.procs) != 0 || isOpen(stat) {
		t.Fatalf("reaped: files %+v (%d open), want none", s.files.procs, s.files.open)
	}
}

// TestSamplerRealProcCountersAdvance: counters read again through kept
// /proc files are current.
func TestSamplerRealProcCountersAdvance(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do echo x; sleep 0.01; done > /dev/null")
	if err := cmd.Start(); err != nil {
		t.Fatalf("sh (Debian package dash): %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := &Sampler{Root: "/", PIDs: pids(cmd.Process.Pid)}
	t.Cleanup(func() { s.Close() })
	first := s.Sample(time.Now())
	if first.Procs != 1 || len(first.Missing) != 0 || s.files.open != 2 {
		t.Fatalf("first sample %+v, %d files kept", first, s.files.open)
	}
	kept := slices.Clone(s.files.procs)
	deadline := time.Now().Add(10 * time.Second)
	for {
		time.Sleep(20 * time.Millisecond)
		got := s.Sample(time.Now())
		if got.Procs != 1 || len(got.Missing) != 0 || !sameFiles(s.files.procs, kept) {
			t.Fatalf("got %+v, files %+v, want %+v", got, s.files.procs, kept)
		}
		if got.IO.WChar > first.IO.WChar {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("wchar still %d after 10 s of writes", got.IO.WChar)
		}
	}
}
