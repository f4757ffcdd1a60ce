package sample

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fixtureTree writes a /proc tree with n processes and a cgroup v1 job
// directory listing them (cgroup.procs in two steps, cpuacct.usage) under
// dir. These are real files on disk: /proc itself cannot hold made-up
// processes, so the figures include ordinary file system opens, not procfs.
func fixtureTree(tb testing.TB, dir string, n int) (root string, cgroup string) {
	tb.Helper()
	root = filepath.Join(dir, "root")
	cgroup = filepath.Join(dir, "cgroup/freezer/slurm_n1/uid_1000/job_9")
	var step0, step1 strings.Builder
	for i := 0; i < n; i++ {
		pid := 10000 + i
		pd := filepath.Join(root, "proc", strconv.Itoa(pid))
		if err := os.MkdirAll(pd, 0o755); err != nil {
			tb.Fatal(err)
		}
		state := "S"
		if i%50 == 0 {
			state = "D"
		}
		stat := fmt.Sprintf("%d (python3 worker %d) %s 1 %d %d 0 -1 4194560 12345 0 0 0 %d %d 0 0 20 0 8 0 100 12345678 1000 18446744073709551615 1 1 0 0 0 0 0 16781312 1266 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
			pid, i, state, pid, pid, 1000+i, 100+i)
		io := fmt.Sprintf("rchar: %d\nwchar: %d\nsyscr: 1234\nsyscw: 567\nread_bytes: %d\nwrite_bytes: %d\ncancelled_write_bytes: 0\n",
			123456789+i, 98765+i, 4096*i, 8192*i)
		for name, body := range map[string]string{"stat": stat, "io": io} {
			if err := os.WriteFile(filepath.Join(pd, name), []byte(body), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
		if i%2 == 0 {
			fmt.Fprintf(&step0, "%d\n", pid)
		} else {
			fmt.Fprintf(&step1, "%d\n", pid)
		}
	}
	for step, body := range map[string]string{"step_0": step0.String(), "step_1": step1.String(), "": ""} {
		d := filepath.Join(cgroup, step)
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(cgroup, "cpuacct.usage"), []byte("123456789012\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	return root, cgroup
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSample samples a job of 10, 100 and 1000 processes, process list
// from the cgroup tree (slurm.CgroupPIDs) included. Besides time and
// allocations per sample it reports the process's CPU time per sample
// (cpu-us/op, less sensitive to a busy machine than wall time), the live
// heap after sampling (heap-MB) and the /proc files kept open between
// samples (kept-fds; each holds about 4.4 kB of kernel memory, see
// DefaultMaxOpenFiles). The processes stay the same from sample to sample;
// "reopen" keeps no file open, as for processes that are new at every
// sample.
func BenchmarkSample(b *testing.B) {
	for _, bc := range []struct {
		procs  int
		reopen bool
	}{{10, false}, {100, false}, {1000, false}, {1000, true}} {
		name := fmt.Sprintf("procs=%d", bc.procs)
		if bc.reopen {
			name += ",reopen"
		}
		b.Run(name, func(b *testing.B) {
			n := bc.procs
			root, cg := fixtureTree(b, b.TempDir(), n)
			s := &Sampler{Root: root, Cgroups: []string{cg}, Host: "n1", Job: "9"}
			if bc.reopen {
				s.MaxOpenFiles = -1
			}
			b.Cleanup(func() { s.Close() })
			if got := s.Sample(time.Now()); got.Procs != n || len(got.Missing) != 0 || got.ProcsD != (n+49)/50 {
				b.Fatalf("sample: %d procs, %d in D, missing %v", got.Procs, got.ProcsD, got.Missing)
			}
			b.ReportAllocs()
			b.ResetTimer()
			c0 := cpuTime()
			for i := 0; i < b.N; i++ {
				s.Sample(time.Now())
			}
			cpu := cpuTime() - c0
			b.StopTimer()
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
			b.ReportMetric(float64(s.files.open), "kept-fds")
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MB")
		})
	}
}

// BenchmarkParse parses a /proc/PID/stat and a /proc/PID/io as the kernel
// writes them, once each per process per sample.
func BenchmarkParse(b *testing.B) {
	stat := []byte("1234 (python3 worker 7) S 1 1234 1234 0 -1 4194560 12345 0 0 0 1007 107 0 0 20 0 8 0 100 12345678 1000 18446744073709551615 1 1 0 0 0 0 0 16781312 1266 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
	io := []byte("rchar: 123456796\nwchar: 98772\nsyscr: 1234\nsyscw: 567\nread_bytes: 28672\nwrite_bytes: 57344\ncancelled_write_bytes: 0\n")
	b.Run("stat", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseProcStat(stat); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("io", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseProcIO(io); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRanks reads the ranks of a node's 8 and 128 processes, as the
// watcher does each period: torchrun's children (RANK, read once and
// kept) and srun's tasks (SLURM_PROCID only, read again every period: a
// process caught before its exec shows its parent's environment).
func BenchmarkRanks(b *testing.B) {
	for _, launcher := range []bool{true, false} {
		for _, n := range []int{8, 128} {
			name := fmt.Sprintf("procs=%d,srun-tasks", n)
			if launcher {
				name = fmt.Sprintf("procs=%d,torchrun", n)
			}
			b.Run(name, func(b *testing.B) {
				root := b.TempDir()
				pids := make([]int, n)
				for i := range n {
					pids[i] = 1000 + i
					env := fmt.Sprintf("PATH=/usr/bin\x00HOME=/home/u\x00SLURM_JOB_ID=9\x00SLURM_STEP_ID=0\x00SLURM_PROCID=%d\x00SLURM_LOCALID=%d\x00", i, i)
					if launcher {
						env += fmt.Sprintf("RANK=%d\x00LOCAL_RANK=%d\x00WORLD_SIZE=%d\x00", i, i, n)
					}
					dir := filepath.Join(root, "proc", strconv.Itoa(pids[i]))
					if err := os.MkdirAll(dir, 0o755); err != nil {
						b.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, "environ"), []byte(env+strings.Repeat("X=1\x00", 100)), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				c := rankCache{}
				if ranks, _ := readRanks(root, pids, false, c); len(ranks) != n {
					b.Fatalf("%d ranks, want %d", len(ranks), n)
				}
				b.ReportAllocs()
				for b.Loop() {
					readRanks(root, pids, false, c)
				}
			})
		}
	}
}
