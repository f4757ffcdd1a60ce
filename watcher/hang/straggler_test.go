package hang

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/straggler"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// noisyJob is period k's readings of a healthy, balanced job of hosts
// with 8 devices each: utilisation 90..100 %, SM clocks 1750..1980 MHz of
// 1980 under the power cap, power 540..700 W, each host a little cooler
// or hotter than the next (up to 90 MHz and 20 % of power apart), now and
// then a device without clocks, an idle blip, or a hardware slowdown for
// one reading. slow, if set, changes a reading of the host it names.
func noisyJob(r *rand.Rand, hosts, k int, slow func(host string, a *trace.Accel)) []trace.Sample {
	var out []trace.Sample
	for h := range hosts {
		s := trace.Sample{V: 1, Time: t0.Add(time.Duration(k)*time.Minute + time.Duration(h)*time.Second), Host: fmt.Sprintf("gpu%02d", h+1), Job: "9",
			IO: trace.IO{WChar: uint64(k+1) << 30}, Procs: 12}
		for d := range 8 {
			a := trace.Accel{ID: fmt.Sprint(d), Util: 90 + 10*r.Float64(), MemUsedMiB: 70000, PowerW: (540 + 160*r.Float64()) * (0.9 + 0.05*float64(h%5)),
				SMClockMHz: 1750 + r.Intn(231) - 30*(h%4), SMClockMaxMHz: 1980, Throttle: trace.ThrottleSwPowerCap}
			switch r.Intn(40) {
			case 0:
				a.SMClockMHz, a.SMClockMaxMHz, a.Throttle = 0, 0, 0 // not read
			case 1:
				a.Util, a.SMClockMHz, a.PowerW, a.Throttle = 0, 345, 90, trace.ThrottleGpuIdle
			case 2:
				a.SMClockMHz, a.Throttle = 1200, trace.ThrottleHwSlowdown
			}
			if slow != nil {
				slow(s.Host, &a)
			}
			s.Accel = append(s.Accel, a)
		}
		out = append(out, s)
	}
	return out
}

// runEpisodes feeds 30 periods of a job to a live tracker, one round per
// period, and returns its straggler events in short form.
func runEpisodes(c Config, hosts int, seed int64, slow func(host string, a *trace.Accel)) []string {
	r := rand.New(rand.NewSource(seed))
	e := NewLiveEpisodes(c)
	var got []string
	for k := range 30 {
		for _, s := range noisyJob(r, hosts, k, slow) {
			e.Observe(s, nil)
		}
		for _, x := range e.Due(t0.Add(time.Duration(k)*time.Minute + time.Minute/2)) {
			if ev, ok := x.(Event); ok && ev.Event == EventStraggler {
				got = append(got, fmt.Sprintf("%d %s %s", k, ev.Host, ev.Reason))
			}
		}
	}
	return got
}

// TestStragglersNoisyHealthyJob: a balanced job, however noisy its clocks,
// power and clock event reasons, has no straggler, through the episodes
// tracker as the coordinator runs it; a host whose devices are held down
// is named once.
func TestStragglersNoisyHealthyJob(t *testing.T) {
	c := testConfig()
	for seed := range int64(20) {
		if got := runEpisodes(c, 8, seed, nil); len(got) != 0 {
			t.Fatalf("seed %d: healthy job has stragglers %v", seed, got)
		}
	}
	// One device of gpu03 power-braked: its clock at a third.
	brake := func(host string, a *trace.Accel) {
		if host == "gpu03" && a.ID == "5" {
			a.Util, a.SMClockMHz, a.Throttle = 100, 660, trace.ThrottleHwPowerBrakeSlowdown|trace.ThrottleHwSlowdown
		}
	}
	got := runEpisodes(c, 8, 1, brake)
	if len(got) != 1 || !strings.HasSuffix(got[0], " gpu03 ThrottledWhilePeersNot") {
		t.Fatalf("power brake: %v", got)
	}
	// The whole of gpu06 draws a third of its peers' power at full
	// utilisation, its clocks and reasons unread.
	low := func(host string, a *trace.Accel) {
		if host == "gpu06" {
			a.Util, a.PowerW, a.SMClockMHz, a.SMClockMaxMHz, a.Throttle = 100, 200, 0, 0, 0
		}
	}
	got = runEpisodes(c, 8, 2, low)
	if len(got) != 1 || !strings.HasSuffix(got[0], " gpu06 LowPowerWhileBusy") {
		t.Fatalf("low power: %v", got)
	}
}

// stepLines are the lines line(step) of a rank as the batch host gpu01
// reads them from the job's output, at the given seconds after t0; step
// advances perMin(s) steps a minute at second s.
func stepLines(secs []int, line func(step int) string, perMin func(s int) float64) []trace.Sample {
	var out []trace.Sample
	step, last := 0.0, 0
	for _, s := range secs {
		for x := last; x < s; x++ {
			step += perMin(x) / 60
		}
		last = s
		out = append(out, trace.Sample{V: 1, Time: t0.Add(time.Duration(s) * time.Second), Host: "gpu01", Job: "4242",
			Log: &trace.Log{Stream: trace.StreamStdout, Line: line(int(step))}})
	}
	return out
}

// every is every k-th second in [from, to), each moved by up to jitter
// seconds (r, if set).
func every(r *rand.Rand, from, to, k, jitter int) []int {
	var out []int
	for s := from; s < to; s += k {
		if r != nil && jitter > 0 {
			s2 := s + r.Intn(jitter+1)
			out = append(out, min(s2, to-1))
			continue
		}
		out = append(out, s)
	}
	return out
}

// steady is a pace of 10 steps a minute.
func steady(int) float64 { return 10 }

// slowedFor is 10 steps a minute, divided by factor in [from, to) (minutes).
func slowedFor(factor float64, from, to int) func(int) float64 {
	return func(s int) float64 {
		if s >= from*60 && s < to*60 {
			return 10 / factor
		}
		return 10
	}
}

// rankLine is "[rankN]: epoch 1 step S loss 2.31".
func rankLine(rank int) func(int) string {
	return func(step int) string { return fmt.Sprintf("[rank%d]: epoch 1 step %d loss 2.31", rank, step) }
}

// stragglerProgressTrace: three hosts print their ranks' steps every
// minute; gpu03's rank is 2.5 times slower from minute 20 to 25.
func stragglerProgressTrace() []trace.Sample {
	host := func(name string, seed int64) gen {
		return gen{Host: name, Job: "4242", Seed: seed, Period: time.Minute, N: 50, Devs: 2, Phases: []phase{training}}
	}
	logs := []trace.Sample{layoutAt("gpu01", "gpu02", "gpu03")}
	for i, name := range []string{"gpu01", "gpu02", "gpu03"} {
		pace := steady
		if name == "gpu03" {
			pace = slowedFor(2.5, 20, 25)
		}
		logs = append(logs, stepLines(every(nil, 120, 3000, 60, 0), rankLine(i), pace)...)
	}
	return withLogs(logs, host("gpu01", 101), host("gpu02", 102), host("gpu03", 103))
}

// stragglerNotes replays ss and returns its straggler events.
func stragglerNotes(t *testing.T, ss []trace.Sample) []Event {
	t.Helper()
	var out bytes.Buffer
	if err := Replay(bytes.NewReader(encode(t, ss)), testConfig(), &out); err != nil {
		t.Fatal(err)
	}
	var evs []Event
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.Contains(line, `"event":"straggler"`) {
			continue
		}
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	return evs
}

// TestStragglerSlowStepsNamed: a rank slowed 2 to 3 times for 5 minutes is
// named with its host, by how much and since when, once; no hang follows.
func TestStragglerSlowStepsNamed(t *testing.T) {
	evs := stragglerNotes(t, stragglerProgressTrace())
	if len(evs) != 1 || evs[0].Host != "gpu03" || evs[0].Reason != straggler.StragglerSlowSteps {
		t.Fatalf("got %+v, want gpu03 SlowSteps once", evs)
	}
	e := evs[0]
	if got := e.Evidence["since"]; got != "2026-11-29T10:20:00Z" {
		t.Errorf("since %v, want 10:20:00", got)
	}
	if r, _ := e.Evidence["ratio"].(float64); r < 2.3 || r > 2.7 {
		t.Errorf("ratio %v", e.Evidence["ratio"])
	}
	if !strings.Contains(e.Message, "rank 2 takes") || !strings.Contains(e.Message, "since 10:20:00") {
		t.Errorf("message %q", e.Message)
	}
	if e.Time.Before(t0.Add(21*time.Minute)) || e.Time.After(t0.Add(26*time.Minute)) {
		t.Errorf("named at %v, want while it was slow", e.Time)
	}
	ds, _ := replayDigests(t, stragglerProgressTrace())
	if ds != 0 {
		t.Errorf("%d digests: a straggler is no hang", ds)
	}
	t.Log(e.Message)
	for _, factor := range []float64{2, 3} {
		logs := []trace.Sample{layoutAt("gpu01", "gpu02", "gpu03", "gpu04")}
		for i, name := range []string{"gpu01", "gpu02", "gpu03", "gpu04"} {
			pace := steady
			if name == "gpu02" {
				pace = slowedFor(factor, 20, 25)
			}
			logs = append(logs, stepLines(every(rand.New(rand.NewSource(int64(i))), 120, 3000, 30, 20), rankLine(i), pace)...)
		}
		evs := stragglerNotes(t, withLogs(logs, lookalikeHosts(4)...))
		if len(evs) != 1 || evs[0].Host != "gpu02" || evs[0].Reason != straggler.StragglerSlowSteps {
			t.Errorf("%.0f× slower: %+v", factor, evs)
		}
	}
}

// replayDigests is how many digests a replay of ss gives.
func replayDigests(t *testing.T, ss []trace.Sample) (int, string) {
	t.Helper()
	var out bytes.Buffer
	if err := Replay(bytes.NewReader(encode(t, ss)), testConfig(), &out); err != nil {
		t.Fatal(err)
	}
	return strings.Count(out.String(), `"event":"digest"`), out.String()
}

// lookalikeHosts are n healthy hosts' readings for 50 minutes.
func lookalikeHosts(n int) []gen {
	var out []gen
	for i := range n {
		out = append(out, gen{Host: fmt.Sprintf("gpu%02d", i+1), Job: "4242", Seed: int64(200 + i), Period: time.Minute, N: 50, Devs: 2, Phases: []phase{training}})
	}
	return out
}

// TestStragglerStepsLookalikes: healthy jobs whose ranks print their own
// progress, noisily, name nobody: logging at jittered moments, each rank
// a tqdm bar at its own step, a checkpoint or evaluation pause on every
// host, rank 0 printing more and a little slower, a one-off slow step or
// pause on one host, ranks crossing an epoch at different moments, lines
// no host can be told from. The false and true counts are logged.
func TestStragglerStepsLookalikes(t *testing.T) {
	layout := layoutAt("gpu01", "gpu02", "gpu03", "gpu04")
	tqdm := func(rank int) func(int) string {
		return func(step int) string {
			return fmt.Sprintf("[rank%d]: Epoch 0:  45%%|████▌     | %d/100000 [01:23<01:41,  5.42it/s, v_num=11, train_loss=2.31]", rank, step)
		}
	}
	epochs := func(rank int) func(int) string {
		return func(step int) string {
			return fmt.Sprintf("[rank%d]: Epoch: [%d][%4d/1000] loss 2.31", rank, step/1000, step%1000)
		}
	}
	// job: four ranks, one per host, printing at secs(rank), in format
	// line(rank), at pace(rank).
	job := func(secs func(r int) []int, line func(r int) func(int) string, pace func(r int) func(int) float64) []trace.Sample {
		logs := []trace.Sample{layout}
		for r := range 4 {
			logs = append(logs, stepLines(secs(r), line(r), pace(r))...)
		}
		return withLogs(logs, lookalikeHosts(4)...)
	}
	jittered := func(k, j int) func(int) []int {
		return func(r int) []int { return every(rand.New(rand.NewSource(int64(r+10*k))), 120, 3000, k, j) }
	}
	all := func(p func(int) float64) func(int) func(int) float64 { return func(int) func(int) float64 { return p } }
	pausedAll := func(from, to int) func(int) float64 {
		return func(s int) float64 {
			if s >= from*60 && s < to*60 {
				return 0
			}
			return 10
		}
	}
	only := func(rank int, p func(int) float64) func(int) func(int) float64 {
		return func(r int) func(int) float64 {
			if r == rank {
				return p
			}
			return steady
		}
	}
	cases := []struct {
		name string
		ss   []trace.Sample
	}{
		{"jittered lines every 30 s", job(jittered(30, 25), rankLine, all(steady))},
		{"jittered lines every 10 s", job(jittered(10, 9), rankLine, all(steady))},
		{"a tqdm bar per rank", job(jittered(7, 6), tqdm, all(steady))},
		{"checkpoint pause on every host", job(jittered(30, 20), rankLine, all(pausedAll(20, 26)))},
		{"evaluation on every host, slow steps", job(jittered(30, 20), rankLine, all(slowedFor(3, 20, 28)))},
		{"rank 0 logs more, 15% slower", job(func(r int) []int {
			if r == 0 {
				return every(rand.New(rand.NewSource(7)), 120, 3000, 5, 4)
			}
			return every(rand.New(rand.NewSource(int64(r))), 120, 3000, 60, 30)
		}, rankLine, only(0, slowedFor(1.15, 0, 60)))},
		{"one-off slow step on one host", job(jittered(30, 20), rankLine, only(2, slowedFor(30, 22, 23)))},
		{"a 4-minute pause on one host", job(jittered(30, 20), rankLine, only(1, pausedAll(20, 24)))},
		{"epoch boundaries at different moments", job(jittered(20, 19), epochs, all(func(int) float64 { return 120 }))},
		{"unattributed lines, one rank's", func() []trace.Sample {
			noRank := func(int) func(int) string {
				return func(step int) string { return fmt.Sprintf("epoch 1 step %d loss 2.31", step) }
			}
			return job(func(r int) []int {
				if r == 0 {
					return every(nil, 120, 3000, 60, 0)
				}
				return nil
			}, noRank, only(0, slowedFor(3, 10, 40)))
		}()},
	}
	falseNotes := 0
	for _, tc := range cases {
		evs := stragglerNotes(t, tc.ss)
		for _, e := range evs {
			t.Errorf("%s: %s named: %s", tc.name, e.Host, e.Message)
		}
		falseNotes += len(evs)
	}
	// And the stragglers among them: the same jobs, one rank slowed 2.5
	// times for 5 minutes.
	named := 0
	for i, secs := range []func(int) []int{jittered(30, 25), jittered(10, 9), jittered(60, 0)} {
		evs := stragglerNotes(t, job(secs, rankLine, only(3, slowedFor(2.5, 20, 25))))
		if len(evs) == 1 && evs[0].Host == "gpu04" {
			named++
		} else {
			t.Errorf("straggler %d: %+v", i, evs)
		}
	}
	t.Logf("healthy look-alikes: %d jobs, %d false notes; stragglers: %d of 3 named", len(cases), falseNotes, named)
}
