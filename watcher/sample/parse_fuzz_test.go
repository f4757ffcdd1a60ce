package sample

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Seeds: files read on a Debian 12 host with cgroup v1 (testdata/captured:
// /proc/self/io and /proc/self/stat, /proc/1/stat, the stat of a process
// named "x) (y z", cpuacct.usage, memory.stat, cgroup.procs and the blkio
// files of the root cgroups, cpu.stat and io.pressure of the unified
// hierarchy, /proc/pressure/io) and the fixture trees under testdata/proc
// and testdata/cgroup.
func addFiles(f *testing.F, patterns ...string) {
	f.Helper()
	n := 0
	for _, p := range patterns {
		m, err := filepath.Glob(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range m {
			b, err := os.ReadFile(name)
			if err != nil {
				continue // testdata/proc/103/io is a directory
			}
			f.Add(b)
			n++
		}
	}
	if n == 0 {
		f.Fatalf("no seed files for %v", patterns)
	}
}

// checkFormatErr fails unless err wraps ErrFormat.
func checkFormatErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrFormat) {
		t.Fatalf("%s: error %v does not wrap ErrFormat", what, err)
	}
}

// FuzzParseProcIO checks that ParseProcIO's errors wrap ErrFormat, that it
// accepts only input that names all four counters, and that the counters it
// returns read back the same from a file written in the kernel's format.
func FuzzParseProcIO(f *testing.F) {
	addFiles(f, "captured/io-*", "proc/*/io")
	f.Add([]byte("rchar: 18446744073709551615\nwchar: 0\nread_bytes: 0\nwrite_bytes: 0\n"))
	f.Add([]byte("rchar:1\nwchar:2\nread_bytes:3\nwrite_bytes:4\nrchar:5"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseProcIO(b)
		checkFormatErr(t, "/proc/PID/io", err)
		if err != nil {
			if got != (trace.IO{}) {
				t.Fatalf("error %v with values %+v", err, got)
			}
			return
		}
		for _, k := range []string{"rchar:", "wchar:", "read_bytes:", "write_bytes:"} {
			if !bytes.Contains(b, []byte(k)) {
				t.Fatalf("accepted %q without %s", b, k)
			}
		}
		again, err := ParseProcIO(fmt.Appendf(nil, "rchar: %d\nwchar: %d\nsyscr: 1\nsyscw: 1\nread_bytes: %d\nwrite_bytes: %d\ncancelled_write_bytes: 0\n",
			got.RChar, got.WChar, got.ReadBytes, got.WriteBytes))
		if err != nil || again != got {
			t.Fatalf("%+v re-read as %+v, %v", got, again, err)
		}
	})
}

// FuzzParseProcStat checks ParseProcStat on arbitrary input (errors wrap
// ErrFormat; the state is the first field after the last ')') and on stat
// lines built from an arbitrary command name, which may hold spaces,
// parentheses and newlines as a real one may: the times always read back.
func FuzzParseProcStat(f *testing.F) {
	addFiles(f, "captured/stat-*", "proc/*/stat")
	for _, s := range []string{
		"77 (a) b (c)) D 1 2 3 0 -1 0 0 0 0 0 9 8 7 6 20 0 1 0\n",
		"77 (x) S 1 2 3 0 -1 0 0 0 0 0 9 8 -1 6 20\n",
		"77 ()) R 1 2 3 0 -1 0 0 0 0 0 18446744073709551615 8 7 6",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseProcStat(b)
		checkFormatErr(t, "/proc/PID/stat", err)
		if err == nil {
			rest := bytes.TrimLeft(b[bytes.LastIndexByte(b, ')')+1:], " ")
			if len(rest) == 0 || got.State != rest[0] {
				t.Fatalf("%q: state %q", b, got.State)
			}
		}
		// The same times under a command name made of the input (the
		// kernel keeps at most 15 bytes of it, of any value but NUL).
		comm := bytes.ReplaceAll(b[:min(len(b), 15)], []byte{0}, nil)
		want := ProcStat{State: 'S', UTime: uint64(len(b)) << 40, STime: 2, CUTime: 3, CSTime: 1<<64 - 1}
		line := fmt.Appendf(nil, "4242 (%s) S 1 4242 4242 0 -1 4194560 100 0 0 0 %d %d %d %d 20 0 1 0 100 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
			comm, want.UTime, want.STime, want.CUTime, want.CSTime)
		if got, err := ParseProcStat(line); err != nil || got != want {
			t.Fatalf("%q: got %+v, %v; want %+v", line, got, err, want)
		}
	})
}

// FuzzParseCgroupFiles runs every cgroup file parser of the sampler on the
// same input. Errors wrap ErrFormat; a sum over devices is never smaller
// than one of its terms (no wrap-around); values read back from the
// kernel's format.
func FuzzParseCgroupFiles(f *testing.F) {
	addFiles(f, "captured/cpuacct.usage", "captured/memory.stat", "captured/cpu.stat", "captured/io.pressure",
		"captured/proc-pressure-io", "captured/blkio.*", "captured/cgroup.procs", "cgroup/*/*/*/*/*/*")
	f.Add([]byte("8:0 Read 18446744073709551615\n8:16 Read 1\n"))
	f.Add([]byte("8:0 rbytes=18446744073709551615 wbytes=0\n8:16 rbytes=1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := ParseCPUStat(b); err == nil {
			if again, err := ParseCPUStat(fmt.Appendf(nil, "usage_usec %d\nuser_usec 0\nsystem_usec 0\n", v)); err != nil || again != v {
				t.Fatalf("cpu.stat %d re-read as %d, %v", v, again, err)
			}
		} else {
			checkFormatErr(t, "cpu.stat", err)
		}
		if v, err := ParseCPUAcctUsage(b); err == nil {
			if again, _ := ParseCPUAcctUsage(fmt.Appendf(nil, "%d000\n", v)); again != v {
				t.Fatalf("cpuacct.usage %d µs re-read as %d", v, again)
			}
		} else {
			checkFormatErr(t, "cpuacct.usage", err)
		}

		blk, err := ParseBlkioServiceBytes(b)
		checkFormatErr(t, "blkio", err)
		if err == nil {
			for _, line := range bytes.Split(b, []byte{'\n'}) {
				if fl := bytes.Fields(line); len(fl) == 3 {
					v, _ := parseUint(fl[2])
					if (string(fl[1]) == "Read" && v > blk.ReadBytes) || (string(fl[1]) == "Write" && v > blk.WriteBytes) {
						t.Fatalf("blkio: total %+v below the line %q", blk, line)
					}
				}
			}
		}

		ios, err := ParseIOStat(b)
		checkFormatErr(t, "io.stat", err)
		if err == nil {
			for _, line := range bytes.Split(b, []byte{'\n'}) {
				fl := bytes.Fields(line)
				for _, kv := range fl[min(1, len(fl)):] { // the first is the device
					k, v, _ := bytes.Cut(kv, []byte{'='})
					n, _ := parseUint(v)
					if (string(k) == "rbytes" && n > ios.ReadBytes) || (string(k) == "wbytes" && n > ios.WriteBytes) {
						t.Fatalf("io.stat: total %+v below the field %q", ios, kv)
					}
				}
			}
		}

		p, err := ParsePressure(b)
		checkFormatErr(t, "pressure", err)
		if err == nil {
			if !strings.Contains(string(b), "some") {
				t.Fatalf("pressure without a some line: %q", b)
			}
			again, err := ParsePressure(fmt.Appendf(nil, "some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", p.SomeUsec, p.FullUsec))
			if err != nil || again != p {
				t.Fatalf("pressure %+v re-read as %+v, %v", p, again, err)
			}
		}
	})
}
