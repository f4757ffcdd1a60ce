package hang

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

var update = flag.Bool("update", false, "rewrite the generated traces and golden files under testdata/")

// dead: the host's processes are gone; its devices idle.
var dead = phase{Util: 0, Power: 58, PowerJitter: 1, IdleDev: -1}

// jobTrace interleaves the hosts' samples in time order.
func jobTrace(gens ...gen) []trace.Sample {
	var all []trace.Sample
	for _, g := range gens {
		all = append(all, g.samples()...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	return all
}

func goldenTraces() map[string][]trace.Sample {
	host := func(name string, seed int64, ph ...phase) gen {
		return gen{Host: name, Job: "4242", Seed: seed, Period: time.Minute, N: 60, Devs: 8, Phases: ph}
	}
	traces := map[string][]trace.Sample{
		// One node's processes exit at minute 30; the others wait in a collective.
		"rank-died": jobTrace(
			host("gpu01", 1, training, at(stuck, 30)),
			host("gpu02", 2, training, at(stuck, 30)),
			host("gpu03", 3, training, at(dead, 30)),
			host("gpu04", 4, training, at(stuck, 30)),
		),
		// One node's data loader deadlocks (processes still there, devices
		// idle); the others wait in a collective.
		"loader-deadlock": jobTrace(
			host("gpu01", 5, training, at(stuck, 25)),
			host("gpu02", 6, training, at(deadlocked, 25)),
			host("gpu03", 7, training, at(stuck, 25)),
		),
		// A long checkpoint save and a long evaluation: never hung.
		"checkpoint-and-eval": jobTrace(
			host("gpu01", 8, training, at(checkpoint, 20), at(training, 40), at(evaluation, 45)),
			host("gpu02", 9, training, at(checkpoint, 20), at(training, 40), at(evaluation, 45)),
		),
		// A hang that recovers.
		"recovery": jobTrace(host("gpu01", 10, training, at(stuck, 20), at(training, 45))),
	}
	for name, ss := range digestTraces() {
		traces[name] = ss
	}
	return traces
}

// TestReplayGolden replays generated traces (kept under testdata/ so that
// `vigil-watch replay` can be tried on them) and compares the per-host events
// with NAME.events.golden and the job's events (digests, stragglers) with
// NAME.digest.golden. Refresh them with: go test ./watcher/hang -update
func TestReplayGolden(t *testing.T) {
	cfg := testConfig()
	for name, ss := range goldenTraces() {
		t.Run(name, func(t *testing.T) {
			tracePath := filepath.Join("testdata", name+".trace")
			in := encode(t, ss)
			var out bytes.Buffer
			if err := Replay(bytes.NewReader(in), cfg, &out); err != nil {
				t.Fatal(err)
			}
			hosts, jobs := splitJobEvents(out.String())
			files := map[string]string{
				filepath.Join("testdata", name+".events.golden"): hosts,
				filepath.Join("testdata", name+".digest.golden"): jobs,
			}
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(tracePath, in, 0o644); err != nil {
					t.Fatal(err)
				}
				for p, b := range files {
					if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			stored, err := os.ReadFile(tracePath)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(stored, in) {
				t.Fatalf("%s differs from the generator's output (run with -update)", tracePath)
			}
			for goldenPath, got := range files {
				want, err := os.ReadFile(goldenPath)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got != string(want) {
					t.Fatalf("events differ from %s (run with -update if intended):\n got:\n%s\nwant:\n%s", goldenPath, got, want)
				}
			}
		})
	}
}

// splitJobEvents splits replay output into the per-host events and the
// job's events (digest, straggler), each in output order.
func splitJobEvents(out string) (hosts, jobs string) {
	var h, j strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		if strings.Contains(line, `"event":"digest"`) || strings.Contains(line, `"event":"straggler"`) {
			j.WriteString(line)
		} else {
			h.WriteString(line)
		}
	}
	return h.String(), j.String()
}

// TestReplayCulprits checks the golden scenarios' meaning, not just their bytes.
func TestReplayCulprits(t *testing.T) {
	tests := []struct {
		trace    string
		hung     map[string]string // host -> reason
		culprits string
	}{
		{"rank-died", map[string]string{"gpu01": ReasonFlatUsageStuckCollective, "gpu02": ReasonFlatUsageStuckCollective,
			"gpu03": ReasonFlatUsageIdle, "gpu04": ReasonFlatUsageStuckCollective}, "gpu03 ProcessesGone"},
		{"loader-deadlock", map[string]string{"gpu01": ReasonFlatUsageStuckCollective, "gpu02": ReasonFlatUsageIdle,
			"gpu03": ReasonFlatUsageStuckCollective}, "gpu02 IdleWhilePeersBusy"},
		{"checkpoint-and-eval", map[string]string{}, ""},
		{"recovery", map[string]string{"gpu01": ReasonFlatUsageStuckCollective}, ""},
	}
	traces := goldenTraces()
	for _, tc := range tests {
		t.Run(tc.trace, func(t *testing.T) {
			var out bytes.Buffer
			if err := Replay(bytes.NewReader(encode(t, traces[tc.trace])), testConfig(), &out); err != nil {
				t.Fatal(err)
			}
			hung := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if line == "" {
					continue
				}
				var e struct {
					Host, Event, Reason string
					Evidence            struct{ Culprits []digest.Culprit }
				}
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatal(err)
				}
				if e.Event != EventHung {
					continue
				}
				hung[e.Host] = e.Reason
				var cs []string
				for _, c := range e.Evidence.Culprits {
					cs = append(cs, c.Host+" "+c.Reason)
				}
				if len(tc.hung) > 1 && strings.Join(cs, ",") != tc.culprits {
					t.Errorf("%s hung: culprits %v, want %s", e.Host, cs, tc.culprits)
				}
			}
			if fmt.Sprint(hung) != fmt.Sprint(tc.hung) {
				t.Fatalf("hung %v, want %v\n%s", hung, tc.hung, out.String())
			}
		})
	}
}

func TestReplayBadLine(t *testing.T) {
	in := `{"v":1,"time":"2026-11-29T10:00:00Z","host":"h"}` + "\n" + `{"v":1,"time":"2026-11-29T10:01:00Z","host":` + "\n"
	err := Replay(strings.NewReader(in), testConfig(), &bytes.Buffer{})
	var le *trace.LineError
	if !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("got %v", err)
	}
	c := testConfig()
	c.Period = 0
	if err := Replay(strings.NewReader(in), c, &bytes.Buffer{}); !errors.Is(err, watchcfg.ErrHang) {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkReplay replays 500 hosts with 8 devices each, training for an
// hour and then hanging for an hour (the detector computes usage statistics
// on every sample of a suspect host, so this is the costly case), and reports
// lines per second of wall time and of CPU time. 1.44 M lines (500 hosts, 2 days at
// 60 s) take 1.44e6 divided by the reported rate.
func BenchmarkReplay(b *testing.B) {
	var gens []gen
	for h := 0; h < 500; h++ {
		gens = append(gens, gen{Host: fmt.Sprintf("gpu%03d", h), Job: "1", Seed: int64(h), Period: time.Minute, N: 120, Devs: 8,
			Phases: []phase{training, at(stuck, 60)}})
	}
	data := encode(b, jobTrace(gens...))
	lines := bytes.Count(data, []byte{'\n'})
	c := watchcfg.DefaultHang()
	c.Window, c.Grace, c.Period = 30*time.Minute, 10*time.Minute, time.Minute // the trace's period
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		var out bytes.Buffer
		if err := Replay(bytes.NewReader(data), c, &out); err != nil {
			b.Fatal(err)
		}
		if i == 0 && bytes.Count(out.Bytes(), []byte(`"hung"`)) != 500 {
			b.Fatalf("want 500 hung events:\n%.2000s", out.String())
		}
	}
	cpu := cpuTime() - c0
	b.ReportMetric(float64(lines*b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(lines*b.N)/cpu.Seconds(), "lines/cpu-s")
}

// cpuTime is the process's CPU time (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// perHost splits samples into one trace per host, as --record %N writes them.
func perHost(t testing.TB, ss []trace.Sample) map[string][]byte {
	t.Helper()
	hosts := map[string][]trace.Sample{}
	for _, s := range ss {
		hosts[s.Host] = append(hosts[s.Host], s)
	}
	out := map[string][]byte{}
	for h, hs := range hosts {
		out[h] = encode(t, hs)
	}
	return out
}

// TestReplayInputsMerge replays one trace per host and checks that the
// events are those of the merged trace, whatever the order of the inputs.
func TestReplayInputsMerge(t *testing.T) {
	for name, ss := range goldenTraces() {
		t.Run(name, func(t *testing.T) {
			var want bytes.Buffer
			if err := Replay(bytes.NewReader(encode(t, ss)), testConfig(), &want); err != nil {
				t.Fatal(err)
			}
			files := perHost(t, ss)
			var hosts []string
			for h := range files {
				hosts = append(hosts, h)
			}
			sort.Strings(hosts)
			reversed := append([]string(nil), hosts...)
			for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
				reversed[i], reversed[j] = reversed[j], reversed[i]
			}
			for _, order := range [][]string{hosts, reversed} {
				var ins []Input
				for _, h := range order {
					ins = append(ins, Input{Name: h + ".jsonl", R: bytes.NewReader(files[h])})
				}
				var got bytes.Buffer
				sum, err := ReplayInputs(ins, testConfig(), &got)
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != want.String() {
					t.Fatalf("inputs %v: events differ from the merged trace's:\n got:\n%s\nwant:\n%s", order, got.String(), want.String())
				}
				readings, span := 0, time.Duration(0)
				for _, s := range ss {
					if !s.IsLog() {
						readings++
						span = max(span, s.Time.Sub(t0))
					}
				}
				if sum.Samples != readings || sum.Hosts != len(hosts) || sum.Span != span {
					t.Errorf("summary %+v, want %d samples, %d hosts, span %v", sum, readings, len(hosts), span)
				}
			}
		})
	}
}

func TestReplayInputsBadLineNamesTheInput(t *testing.T) {
	good := `{"v":1,"time":"2026-11-29T10:00:00Z","host":"a"}` + "\n" + `{"v":1,"time":"2026-11-29T10:01:00Z","host":"a"}` + "\n"
	bad := `{"v":1,"time":"2026-11-29T10:00:00Z","host":"b"}` + "\n" + `{"v":1,"time":` + "\n"
	_, err := ReplayInputs([]Input{{Name: "a.jsonl", R: strings.NewReader(good)}, {Name: "b.jsonl", R: strings.NewReader(bad)}}, testConfig(), &bytes.Buffer{})
	var le *trace.LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "b.jsonl: trace: line 2") {
		t.Fatalf("got %v, want an error naming b.jsonl line 2", err)
	}
}

func TestSummaryTooShort(t *testing.T) {
	cfg := func(grace, window time.Duration) Config {
		c := watchcfg.DefaultHang()
		c.Grace, c.Window, c.Period = grace, window, time.Minute
		return c
	}
	tests := []struct {
		name string
		c    Config
		n    int // samples, one a minute
		want string
	}{
		{"a minute short of the window", cfg(10*time.Minute, 30*time.Minute), 30,
			"trace covers 29m; first verdict needs 30m of one host's samples (the longer of grace 10m and window 30m): no window verdict was possible"},
		{"exactly long enough", cfg(10*time.Minute, 30*time.Minute), 31, ""},
		{"grace longer than the window", cfg(time.Hour, 30*time.Minute), 60,
			"trace covers 59m; first verdict needs 1h of one host's samples (the longer of grace 1h and window 30m): no window verdict was possible"},
		{"empty", cfg(10*time.Minute, 30*time.Minute), 0, "the trace holds no samples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gen{Host: "gpu01", Job: "1", Seed: 1, Period: time.Minute, N: tc.n, Devs: 1, Phases: []phase{loading}}
			var out bytes.Buffer
			sum, err := ReplayInputs([]Input{{Name: "x", R: bytes.NewReader(encode(t, g.samples()))}}, tc.c, &out)
			if err != nil {
				t.Fatal(err)
			}
			if got := sum.TooShort(tc.c); got != tc.want {
				t.Errorf("TooShort = %q, want %q", got, tc.want)
			}
			// The message and the events agree: a verdict came exactly when
			// the trace was long enough for one (the job never progresses).
			if verdicts := out.Len() > 0; verdicts != (tc.want == "") {
				t.Errorf("events %q with TooShort %q", out.String(), tc.want)
			}
		})
	}
}

// Replay runs a Detector with configuration c over the trace read from r and
// writes one JSON line per event to w: ReplayInputs with one input. The
// tests' shorthand (also for package hang_test's).
func Replay(r io.Reader, c Config, w io.Writer) error {
	_, err := ReplayInputs([]Input{{R: r}}, c, w)
	return err
}
