package coord

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
	"time"

	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/munge"
	"github.com/vigil-hpc/vigil/cgo/munge/mungetest"
)

// BenchmarkMungeCredential is what MUNGE costs the coordinator's node per
// credential: one encode and one decode through a private munged, the CPU
// of this process and of munged together. A period of a 1024-node job
// costs the coordinator's node 1023 decodes (the summaries) and 2046
// encodes (tick and digest to each member); it reports that estimate too.
func BenchmarkMungeCredential(b *testing.B) {
	d := mungetest.Start(b)
	m, err := munge.Open(munge.Config{Socket: d.Socket, Lib: dl.Options{}})
	if err != nil {
		b.Skipf("libmunge: %v", err)
	}
	defer m.Close()
	pid := readPid(b, filepath.Join(d.Dir, "munged.pid"))
	payload := []byte(strings.Repeat("b", 160)) // a message's binding: header and payload digest
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	m0 := procCPU(b, pid)
	b.ResetTimer()
	for range b.N {
		cred, err := m.Encode(payload)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Decode(cred); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	self := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	per := (self + procCPU(b, pid) - m0) / time.Duration(b.N)
	b.ReportMetric(float64(per.Microseconds()), "cpu-µs/encode+decode")
	period := 3 * 1023 * per / 2 // 1023 decodes and 2046 encodes, each about half a pair
	b.ReportMetric(float64(period.Milliseconds()), "cpu-ms/period@1024")
	p := watchcfg.DefaultHang().Period
	b.ReportMetric(100*period.Seconds()/p.Seconds(), "%core@"+hangfmt.ShortDuration(p))
}

func readPid(b *testing.B, path string) int {
	for range 50 {
		if data, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("no pid in %s", path)
	return 0
}

// procCPU is a process's user and system time from /proc/PID/stat.
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}
