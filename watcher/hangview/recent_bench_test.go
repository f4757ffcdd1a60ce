package hangview

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// BenchmarkRecentCoordinator1024 is the coordinator of a 1024-node job with
// the default window (30 min) and period (60 s): it observes every node's
// reading each period. It reports the time per observed reading and the
// heap Recent holds once its 2.5 windows are full.
func BenchmarkRecentCoordinator1024(b *testing.B) {
	const hosts, window, period = 1024, 30 * time.Minute, time.Minute
	names := make([]string, hosts)
	for i := range names {
		names[i] = fmt.Sprintf("gpu%04d", i)
	}
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	periods := int(KeepWindows*float64(window/period)) + 5
	fill := func(r *Recent) {
		for p := range periods {
			t := start.Add(time.Duration(p) * period)
			for h, name := range names {
				r.Observe(trace.Sample{V: trace.Version, Time: t, Host: name, Job: "42",
					IO: trace.IO{ReadBytes: uint64(p * h)}, CPUUsec: uint64(p * 1000),
					Accel: []trace.Accel{{ID: "0", Util: 99, PowerW: 600}, {ID: "1", Util: 98, PowerW: 610}}}, nil)
			}
		}
	}
	var held float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := NewRecent(window)
		fill(r)
		runtime.GC()
		runtime.ReadMemStats(&after)
		held = float64(after.HeapAlloc) - float64(before.HeapAlloc)
		runtime.KeepAlive(r)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*periods*hosts), "ns/reading")
	b.ReportMetric(held/(1<<20), "MiB-held")
}
