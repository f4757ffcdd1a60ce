package hang

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang/straggler"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// cpuJob is a CPU-only job of hosts gpu01.. read once a minute for n
// minutes: I/O and CPU time grow by a jittered amount each minute, the
// processes' count moves by one now and then. held, if set, changes a
// host's reading at minute k (stops its processes, throttles its cgroup).
func cpuJob(seed int64, hosts, n int, held func(host string, k int, r *rand.Rand, s *trace.Sample)) []trace.Sample {
	return cpuJobEvery(seed, hosts, n, time.Minute, held)
}

// cpuJobEvery is cpuJob read once every period (n readings); the I/O and
// CPU time it adds per reading are a minute's.
func cpuJobEvery(seed int64, hosts, n int, period time.Duration, held func(host string, k int, r *rand.Rand, s *trace.Sample)) []trace.Sample {
	r := rand.New(rand.NewSource(seed))
	var out []trace.Sample
	io := make([]uint64, hosts)
	cpu := make([]uint64, hosts)
	thr := make([]uint64, hosts)
	for k := range n {
		for h := range hosts {
			io[h] += uint64(200+r.Intn(100)) << 20
			cpu[h] += uint64(50+r.Intn(10)) * 1e6
			s := trace.Sample{V: 1, Time: t0.Add(time.Duration(k)*period + time.Duration(h)*time.Second), Host: fmt.Sprintf("gpu%02d", h+1), Job: "77",
				IO: trace.IO{RChar: io[h], WChar: io[h]}, CPUUsec: cpu[h], Procs: 4 + r.Intn(2)}
			// A noisy job: a little throttling now and then on every host
			// (a quota met for a moment), far below StragglerThrottledShare.
			thr[h] += uint64(r.Intn(3)) * 1e6
			s.CPUThrottledUsec = thr[h]
			if held != nil {
				held(s.Host, k, r, &s)
				thr[h] = s.CPUThrottledUsec
			}
			out = append(out, s)
		}
	}
	return out
}

// replayEvents replays ss (testConfig: a 10-minute window, 1-minute period)
// and returns its events of kind straggler, hung or digest in short form
// "minute host event reason", and the straggler events.
func replayEvents(t *testing.T, ss []trace.Sample) ([]string, []Event) {
	t.Helper()
	var out bytes.Buffer
	if err := Replay(bytes.NewReader(encode(t, ss)), testConfig(), &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	var stragglers []Event
	for _, line := range strings.Split(out.String(), "\n") {
		var e struct {
			Event
			Cause string `json:"cause"`
		}
		if line == "" || json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		switch e.Event.Event {
		case EventStraggler:
			stragglers = append(stragglers, e.Event)
			got = append(got, fmt.Sprintf("%d %s straggler %s", int(e.Time.Sub(t0)/time.Minute), e.Host, e.Reason))
		case EventHung, "digest":
			got = append(got, fmt.Sprintf("%d %s %s %s%s", int(e.Time.Sub(t0)/time.Minute), e.Host, e.Event.Event, e.Reason, e.Cause))
		}
	}
	return got, stragglers
}

// TestStragglerStoppedOrThrottled: in a CPU-only job whose ranks step in
// lockstep, a host whose processes are stopped in a share of its readings
// (a SIGSTOP/SIGCONT duty cycle), or whose job cgroup is throttled by its
// CPU quota, while its peers' are not, is named once with its evidence,
// and no hang follows; a healthy noisy job, a host stopped for a reading
// or two, a helper stopped for good while the job runs on, and hosts all
// held back alike name nobody.
func TestStragglerStoppedOrThrottled(t *testing.T) {
	// stoppedFrom: host's processes caught stopped in 60% of the readings
	// from minute from on.
	stoppedFrom := func(host string, from int) func(string, int, *rand.Rand, *trace.Sample) {
		return func(h string, k int, r *rand.Rand, s *trace.Sample) {
			if (host == "" || h == host) && k >= from && r.Float64() < 0.6 {
				s.ProcsT = 1
			}
		}
	}
	// throttledFrom: host's cgroup throttled for 40% of each minute from
	// minute from on.
	throttledFrom := func(host string, from int) func(string, int, *rand.Rand, *trace.Sample) {
		return func(h string, k int, r *rand.Rand, s *trace.Sample) {
			if (host == "" || h == host) && k >= from {
				s.CPUThrottledUsec += 24e6
			}
		}
	}
	for _, tc := range []struct {
		name string
		held func(string, int, *rand.Rand, *trace.Sample)
		want string // the one straggler event, "" for none
	}{
		{"healthy noisy job", nil, ""},
		{"one host's rank duty-cycled by SIGSTOP/SIGCONT", stoppedFrom("gpu02", 12), "gpu02 straggler StoppedOrThrottled"},
		{"one host's cgroup throttled by its CPU quota", throttledFrom("gpu03", 12), "gpu03 straggler StoppedOrThrottled"},
		{"every host throttled alike", throttledFrom("", 12), ""},
		{"every host stopped alike (the job suspended in turns)", stoppedFrom("", 12), ""},
		{"one host stopped for two readings (a debugger's breakpoint)", func(h string, k int, r *rand.Rand, s *trace.Sample) {
			if h == "gpu02" && (k == 14 || k == 20) {
				s.ProcsT = 1
			}
		}, ""},
		{"a helper stopped for good on one host (suspended with ^Z), the job unslowed", func(h string, k int, r *rand.Rand, s *trace.Sample) {
			if h == "gpu03" && k >= 5 {
				s.ProcsT, s.Procs = 1, s.Procs+1
			}
		}, ""},
		{"one host throttled for two minutes", func(h string, k int, r *rand.Rand, s *trace.Sample) {
			if h == "gpu04" && (k == 14 || k == 15) {
				s.CPUThrottledUsec += 30e6
			}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range int64(5) {
				got, evs := replayEvents(t, cpuJob(seed, 4, 40, tc.held))
				if tc.want == "" {
					if len(got) != 0 {
						t.Fatalf("seed %d: %v, want no straggler, no hang", seed, got)
					}
					continue
				}
				if len(got) != 1 || !strings.HasSuffix(got[0], tc.want) {
					t.Fatalf("seed %d: %v, want one event %q and no hang", seed, got, tc.want)
				}
				e := evs[0]
				since, _ := time.Parse(time.RFC3339, fmt.Sprint(e.Evidence["since"]))
				if since.Before(t0.Add(12*time.Minute)) || since.After(t0.Add(16*time.Minute)) || e.Evidence["held_share"].(float64) < straggler.StragglerHeldShare ||
					e.Evidence["peers_held_share_median"].(float64) > straggler.StragglerPeersHeldShare || !strings.Contains(e.Message, "while its peers' are not") {
					t.Fatalf("seed %d: evidence %v, message %q", seed, e.Evidence, e.Message)
				}
				t.Logf("seed %d: %s: %s", seed, got[0], e.Message)
			}
		})
	}
}

// TestStragglerAtShippedDefaults: at the shipped settings (a 30-minute
// window, a 30 s period) the straggler rules judge the last
// straggler_window (10 minutes), not the whole window: a host duty-cycled
// by SIGSTOP/SIGCONT from minute 12 is named within that span and a few
// periods of its start, long before most of a 30-minute window is
// covered; a healthy noisy job names nobody.
func TestStragglerAtShippedDefaults(t *testing.T) {
	c := watchcfg.DefaultHang()
	if c.Window != 30*time.Minute || c.Period != 30*time.Second || c.StragglerSpan() != 10*time.Minute {
		t.Fatalf("window %v, period %v, straggler span %v: the test assumes the shipped 30m, 30s and 10m", c.Window, c.Period, c.StragglerSpan())
	}
	from := 24 // readings: minute 12
	stopped := func(h string, k int, r *rand.Rand, s *trace.Sample) {
		if h == "gpu02" && k >= from && r.Float64() < 0.6 {
			s.ProcsT = 1
		}
	}
	for seed := range int64(5) {
		for _, tc := range []struct {
			held func(string, int, *rand.Rand, *trace.Sample)
			want string
		}{{nil, ""}, {stopped, "gpu02"}} {
			var out bytes.Buffer
			if err := Replay(bytes.NewReader(encode(t, cpuJobEvery(seed, 4, 100, c.Period, tc.held))), c, &out); err != nil {
				t.Fatal(err)
			}
			var named []Event
			for _, line := range strings.Split(out.String(), "\n") {
				var e Event
				if line != "" && json.Unmarshal([]byte(line), &e) == nil && e.Event == EventStraggler {
					named = append(named, e)
				}
			}
			if tc.want == "" {
				if len(named) != 0 {
					t.Errorf("seed %d: a healthy noisy job: stragglers %+v", seed, named)
				}
				continue
			}
			if len(named) != 1 || named[0].Host != tc.want {
				t.Fatalf("seed %d: stragglers %+v, want one naming %s", seed, named, tc.want)
			}
			after := named[0].Time.Sub(t0.Add(time.Duration(from) * c.Period))
			t.Logf("seed %d: %s named %v after its slowdown began: %s", seed, named[0].Host, after, named[0].Message)
			if after > c.StragglerSpan()+3*c.Period {
				t.Errorf("seed %d: named %v after the slowdown began, want within the straggler span (%v) and 3 periods", seed, after, c.StragglerSpan())
			}
		}
	}
}
