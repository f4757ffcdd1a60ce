package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// BenchmarkPrologFastPath runs the built vigil-prolog on its fast path
// (health facts only, --dry-run, an empty config) on this machine, and
// reports the wall time and CPU time per run (CPU time does not depend on
// how loaded the machine is), the peak resident memory of the vigil-prolog
// process tree, and that of its checker child alone.
func BenchmarkPrologFastPath(b *testing.B) {
	bin := slurmtest.BuildBinary(b, "github.com/vigil-hpc/vigil/prolog")
	dir := b.TempDir()
	conf := filepath.Join(dir, "vigil.toml")
	if err := os.WriteFile(conf, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	reports := filepath.Join(dir, "reports")
	var wall, cpu time.Duration
	var rss, childRSS int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "--dry-run", "--suite", "health", "--config", conf,
			"--report-dir", reports, "--log-level", "error")
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		wall += time.Since(t0)
		if err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		// wait4's usage covers the process and the children it reaped
		// (the checker): CPU times add up, Maxrss is the largest of them.
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > rss {
			rss = ru.Maxrss
		}
	}
	b.StopTimer()
	m, _ := filepath.Glob(filepath.Join(reports, "*.json"))
	for _, p := range m {
		var r report.Report
		if data, err := os.ReadFile(p); err == nil && json.Unmarshal(data, &r) == nil && r.CheckerMaxRSSKiB > childRSS {
			childRSS = r.CheckerMaxRSSKiB
		}
	}
	b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "ms/run")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/run")
	b.ReportMetric(float64(rss)/1024, "peak-rss-MB")
	b.ReportMetric(float64(childRSS)/1024, "checker-rss-MB")
}
