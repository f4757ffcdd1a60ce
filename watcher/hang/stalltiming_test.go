package hang

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// stallTrace is one host of a job that writes steadily (rate bytes per
// second) until stall, then spins in a collective (devices at 100%, low
// power, CPU flat): samples every period from t0, each late by up to
// jitter (the sampler's own time), n samples.
func stallTrace(period, jitter, stall time.Duration, n int, seed int64) []trace.Sample {
	r := rand.New(rand.NewSource(seed))
	const rate = 1 << 20 // bytes per second
	out := make([]trace.Sample, 0, n)
	for i := 0; i < n; i++ {
		at := time.Duration(i) * period
		if jitter > 0 {
			at += time.Duration(r.Int63n(int64(jitter)))
		}
		wrote := uint64(min(at, stall).Seconds() * rate)
		s := trace.Sample{V: 1, Time: t0.Add(at), Host: "gpu01", Job: "7",
			IO: trace.IO{WChar: wrote, WriteBytes: wrote}, CPUUsec: uint64(at.Seconds() * 2e6), Procs: 8}
		for d := 0; d < 2; d++ {
			s.Accel = append(s.Accel, trace.Accel{ID: fmt.Sprint(d), Util: 100, PowerW: 140, MemUsedMiB: 70000})
		}
		out = append(out, s)
	}
	return out
}

// TestVerdictOneWindowAfterTheStall: the suspect verdict comes one window
// after the last sample that showed progress (never earlier, at most one
// sampling interval later), so never before the stall + window; its
// "since" is that last progress. The 2-minute window and 20 s period are
// issue 19's: with jitter in the sampling moments the verdict came at
// 98 s, one period early, when the interval in which the window started
// was not counted.
func TestVerdictOneWindowAfterTheStall(t *testing.T) {
	const period = 20 * time.Second
	for _, tc := range []struct {
		name   string
		jitter time.Duration
		stall  time.Duration // after t0
	}{
		{"on the grid, stall on a sample", 0, 5 * time.Minute},
		{"on the grid, stall just after a sample", 0, 5*time.Minute + time.Second},
		{"on the grid, stall just before a sample", 0, 5*time.Minute + 19*time.Second},
		{"jittered, stall on a sample", 50 * time.Millisecond, 5 * time.Minute},
		{"jittered, stall mid-period", 50 * time.Millisecond, 5*time.Minute + 10*time.Second},
		{"jittered, stall just before a sample", 50 * time.Millisecond, 5*time.Minute + 19*time.Second},
		{"jittered a lot, stall just before a sample", 2 * time.Second, 5*time.Minute + 17*time.Second},
	} {
		for seed := int64(1); seed <= 8; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", tc.name, seed), func(t *testing.T) {
				c := watchcfg.DefaultHang()
				c.Window, c.Period, c.Grace = 2*time.Minute, period, time.Minute
				ss := stallTrace(period, tc.jitter, tc.stall, 40, seed)
				var last time.Time // the newest sample whose I/O grew
				for i := 1; i < len(ss); i++ {
					if ss[i].IO.WChar > ss[i-1].IO.WChar {
						last = ss[i].Time
					}
				}
				evs := run(t, c, ss)
				if len(evs) == 0 || evs[0].Event != EventSuspect {
					t.Fatalf("events %v, want a suspect verdict first", evs)
				}
				got := evs[0].Time
				stall := t0.Add(tc.stall)
				if got.Before(stall.Add(c.Window)) {
					t.Errorf("suspect %v after the stall, before one window (%v)", got.Sub(stall), c.Window)
				}
				if d := got.Sub(last.Add(c.Window)); d < 0 || d >= period+2*tc.jitter {
					t.Errorf("suspect at last progress + %v, want + window (%v) within one period", got.Sub(last), c.Window)
				}
				if since := evs[0].Evidence["since"]; since != last.Format(time.RFC3339) {
					t.Errorf("since %v, want the last progress %s", since, last.Format(time.RFC3339))
				}
				if !evs[0].Since.Equal(last) {
					t.Errorf("Since %v, want the last progress %v", evs[0].Since, last)
				}
			})
		}
	}
}
