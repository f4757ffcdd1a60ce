package hang

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// testConfig: 10-minute window, 1-minute period, 5-minute grace, so the first
// verdict can come at minute 10 (one whole window).
func testConfig() Config {
	c := watchcfg.DefaultHang()
	c.Window = 10 * time.Minute
	c.Period = time.Minute
	c.Grace = 5 * time.Minute
	return c
}

// got is an event in short form: "minute event reason".
func short(e Event) string {
	return fmt.Sprintf("%d %s %s", int(e.Time.Sub(t0)/time.Minute), e.Event, e.Reason)
}

func run(t *testing.T, c Config, ss []trace.Sample) []Event {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	d := New(c)
	var out []Event
	for _, s := range ss {
		out = append(out, d.Observe(s)...)
	}
	return out
}

func TestScenarios(t *testing.T) {
	every := func(n int) func(int) bool { return func(i int) bool { return i%n == 0 } }
	tests := []struct {
		name string
		g    gen
		cfg  func(*Config)
		want []string
	}{
		{
			name: "hang at 100% with low power",
			g:    gen{N: 60, Devs: 8, Phases: []phase{training, at(stuck, 30)}},
			// Last write at minute 29: suspect at 39, all-stuck window at 40.
			want: []string{"39 suspect NoIOProgress", "40 hung FlatUsageStuckCollective"},
		},
		{
			name: "hang at 0%",
			g:    gen{N: 60, Devs: 4, Phases: []phase{training, at(deadlocked, 30)}},
			want: []string{"39 suspect NoIOProgress", "40 hung FlatUsageIdle"},
		},
		{
			name: "one rank deadlocked, the others in the collective",
			g:    gen{N: 60, Devs: 4, Phases: []phase{training, func() phase { p := at(stuck, 30); p.IdleDev = 2; return p }()}},
			want: []string{"39 suspect NoIOProgress", "40 hung FlatUsageMixed"},
		},
		{
			name: "long checkpoint save: heavy writes, idle devices",
			g:    gen{N: 90, Devs: 8, Phases: []phase{training, at(checkpoint, 20)}},
			want: nil,
		},
		{
			name: "long evaluation without logging: busy devices",
			g:    gen{N: 90, Devs: 8, Phases: []phase{training, at(evaluation, 20)}},
			// No I/O, so suspect, but never hung.
			want: []string{"29 suspect NoIOProgress"},
		},
		{
			name: "steady high power: real work, not a spin",
			g: gen{N: 60, Devs: 2, Phases: []phase{training,
				{From: 20, Util: 100, Power: 650, PowerJitter: 4, CPU: 4, CPUJitter: 0.05, IdleDev: -1}}},
			want: []string{"29 suspect NoIOProgress"},
		},
		{
			name: "a trickle of log bytes during a hang",
			g: gen{N: 60, Devs: 8, Phases: []phase{training,
				func() phase { p := at(stuck, 30); p.IOPerPeriod = 2 << 10; p.ReadPerPeriod = 1 << 10; return p }()}},
			// 3 KiB per minute counts from minute 30 on; it stays below 1 MiB.
			want: []string{"39 suspect NoIOProgress", "40 hung FlatUsageStuckCollective"},
		},
		{
			name: "log bytes above the threshold are progress",
			g: gen{N: 60, Devs: 8, Phases: []phase{training,
				func() phase { p := at(stuck, 30); p.IOPerPeriod = 200 << 10; return p }()}},
			want: nil,
		},
		{
			name: "processes restarting: counters drop, training goes on",
			g:    gen{N: 90, Devs: 8, Phases: []phase{training}, Restart: every(7)},
			want: nil,
		},
		{
			name: "processes restarting into a hang: a drop is not progress",
			g: gen{N: 60, Devs: 8, Phases: []phase{training, at(stuck, 30)},
				Restart: func(i int) bool { return i == 35 }},
			want: []string{"39 suspect NoIOProgress", "40 hung FlatUsageStuckCollective"},
		},
		{
			name: "sample gaps: every other sample missing during a hang",
			g:    gen{N: 60, Devs: 8, Phases: []phase{training, at(stuck, 30)}, Skip: every(2)},
			want: nil,
		},
		{
			name: "sample gaps: one in five missing still judges",
			g:    gen{N: 60, Devs: 8, Phases: []phase{training, at(stuck, 30)}, Skip: func(i int) bool { return i%5 == 3 }},
			want: []string{"39 suspect NoIOProgress", "40 hung FlatUsageStuckCollective"},
		},
		{
			name: "sample gaps: a long gap, then no data to judge yet",
			g:    gen{N: 45, Devs: 8, Phases: []phase{training, at(stuck, 30)}, Skip: func(i int) bool { return i >= 25 && i < 38 }},
			// After the gap the window holds too few samples until minute 45.
			want: nil,
		},
		{
			name: "unreadable I/O never makes a hang",
			g: gen{N: 60, Devs: 8, Phases: []phase{training, at(stuck, 30)},
				Missing: func(i int) []string {
					if i >= 25 {
						return []string{"io", "io:17"}
					}
					return nil
				}},
			want: nil,
		},
		{
			name: "missing accelerator readings: suspect but not hung",
			g: gen{N: 60, Devs: 8, Phases: []phase{training, at(stuck, 30)},
				Missing: func(i int) []string {
					if i%3 == 0 {
						return []string{"accel"}
					}
					return nil
				}},
			want: []string{"39 suspect NoIOProgress"},
		},
		{
			name: "recovered when I/O comes back",
			g:    gen{N: 60, Devs: 8, Phases: []phase{training, at(stuck, 20), at(training, 45)}},
			want: []string{"29 suspect NoIOProgress", "30 hung FlatUsageStuckCollective", "45 recovered IOProgress"},
		},
		{
			name: "hung goes back to suspect when usage varies again",
			g:    gen{N: 60, Devs: 8, Phases: []phase{training, at(stuck, 20), at(evaluation, 45)}},
			want: []string{"29 suspect NoIOProgress", "30 hung FlatUsageStuckCollective", "45 suspect UsageNotFlat"},
		},
		{
			name: "no accelerators, CPU idle",
			g:    gen{N: 60, Phases: []phase{{IOPerPeriod: 5 << 20, CPU: 4, CPUJitter: 1, Procs: 4, IdleDev: -1}, at(cpuIdle, 30)}},
			// The CPU rate of the interval ending at minute 30 is already idle.
			want: []string{"39 suspect NoIOProgress", "39 hung FlatCPUIdle"},
		},
		{
			name: "no accelerators, CPU spinning: not judged by default",
			g:    gen{N: 60, Phases: []phase{{IOPerPeriod: 5 << 20, CPU: 4, CPUJitter: 1, Procs: 4, IdleDev: -1}, at(cpuSpinning, 30)}},
			want: []string{"39 suspect NoIOProgress"},
		},
		{
			name: "no accelerators, CPU spinning, CPUSpinIsHang",
			g:    gen{N: 60, Phases: []phase{{IOPerPeriod: 5 << 20, CPU: 4, CPUJitter: 1, Procs: 4, IdleDev: -1}, at(cpuSpinning, 30)}},
			cfg:  func(c *Config) { c.CPUSpinIsHang = true },
			want: []string{"39 suspect NoIOProgress", "39 hung FlatCPUSpin"},
		},
		{
			name: "devices flat but CPU varies",
			g: gen{N: 60, Devs: 2, Phases: []phase{training,
				func() phase { p := at(stuck, 30); p.CPUJitter = 3; return p }()}},
			want: []string{"39 suspect NoIOProgress"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig()
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			tc.g.Host, tc.g.Job, tc.g.Seed, tc.g.Period = "gpu01", "77", 1, time.Minute
			evs := run(t, c, tc.g.samples())
			var got []string
			for _, e := range evs {
				got = append(got, short(e))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				for _, e := range evs {
					t.Logf("%s %s %v", short(e), e.Message, e.Evidence)
				}
				t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestEvidence(t *testing.T) {
	g := gen{Host: "gpu01", Job: "77", Seed: 1, Period: time.Minute, N: 41, Devs: 2,
		Phases: []phase{training, func() phase { p := at(stuck, 30); p.IOPerPeriod = 1000; return p }()}}
	evs := run(t, testConfig(), g.samples())
	if len(evs) != 2 {
		t.Fatalf("got %d events", len(evs))
	}
	sus, hung := evs[0], evs[1]
	if sus.Evidence["since"] != "2026-11-29T10:29:00Z" || sus.Evidence["io_bytes"] != uint64(10*2000) || sus.Host != "gpu01" || sus.Job != "77" {
		t.Fatalf("suspect evidence %v", sus.Evidence)
	}
	if _, ok := sus.Evidence["devices"]; ok {
		t.Fatalf("suspect carries device evidence: %v", sus.Evidence)
	}
	devs, ok := hung.Evidence["devices"].([]DeviceStats)
	if !ok || len(devs) != 2 {
		t.Fatalf("hung evidence %v", hung.Evidence)
	}
	for _, d := range devs {
		if !d.Flat || d.UtilMedian != 100 || d.UtilStddev != 0 || d.PowerMedianW > 145 || d.PowerMedianW < 135 || d.Samples != 11 {
			t.Errorf("device %+v", d)
		}
	}
	if hung.Evidence["grace_s"] != float64(300) || hung.Evidence["first_verdict"] != "2026-11-29T10:10:00Z" {
		t.Errorf("grace_s %v first_verdict %v, want 300 and 10:10", hung.Evidence["grace_s"], hung.Evidence["first_verdict"])
	}
	if m := hung.Evidence["cpu_cores_median"].(float64); m < 7.9 || m > 8.1 {
		t.Errorf("cpu median %v", m)
	}
	if !strings.Contains(hung.Message, "stuck collective") || !strings.Contains(hung.Message, "since 2026-11-29T10:29:00Z") {
		t.Errorf("message %q", hung.Message)
	}
}

func TestNewJobOnHostStartsAfresh(t *testing.T) {
	c := testConfig()
	g := gen{Host: "gpu01", Job: "1", Seed: 1, Period: time.Minute, N: 30, Devs: 2, Phases: []phase{loading}}
	d := New(c)
	n := 0
	for _, s := range g.samples() {
		n += len(d.Observe(s))
	}
	if n == 0 {
		t.Fatal("job 1: want events")
	}
	// Job 2 on the same host, right after: its own first verdict again,
	// one window after its first sample (samples 0 to 9 span 9 minutes).
	g.Job, g.N = "2", 10
	for _, s := range g.samples() {
		s.Time = s.Time.Add(30 * time.Minute)
		if evs := d.Observe(s); len(evs) > 0 {
			t.Fatalf("job 2: %v", evs)
		}
	}
}

// TestGraceAndWindow checks when the first verdict can come: never before a
// host's samples span the longer of grace and window; after that, one window
// after the last progress, whatever the grace.
func TestGraceAndWindow(t *testing.T) {
	// Window 10m, period 1m throughout.
	tests := []struct {
		name  string
		grace time.Duration
		g     gen
		want  []string
	}{
		{
			name:  "never any progress, grace shorter than the window: one window",
			grace: 5 * time.Minute,
			g:     gen{N: 30, Devs: 8, Phases: []phase{loading}},
			want:  []string{"10 suspect NoIOProgress", "10 hung FlatUsageIdle"},
		},
		{
			name:  "never any progress, no grace: still one whole window",
			grace: 0,
			g:     gen{N: 30, Devs: 8, Phases: []phase{loading}},
			want:  []string{"10 suspect NoIOProgress", "10 hung FlatUsageIdle"},
		},
		{
			name:  "never any progress, no grace: nothing one sample short of a window",
			grace: 0,
			g:     gen{N: 10, Devs: 8, Phases: []phase{loading}},
			want:  nil,
		},
		{
			name:  "never any progress, grace longer than the window: at the grace",
			grace: 20 * time.Minute,
			g:     gen{N: 30, Devs: 8, Phases: []phase{loading}},
			want:  []string{"20 suspect NoIOProgress", "20 hung FlatUsageIdle"},
		},
		{
			name:  "nothing before the grace, however flat",
			grace: 20 * time.Minute,
			g:     gen{N: 20, Devs: 8, Phases: []phase{loading}},
			want:  nil,
		},
		{
			name:  "slow start within the grace: never reported",
			grace: 20 * time.Minute,
			g:     gen{N: 60, Devs: 8, Phases: []phase{loading, at(training, 15)}},
			want:  nil,
		},
		{
			name:  "stalls within the grace: reported at the grace, not grace + window",
			grace: 20 * time.Minute,
			g:     gen{N: 30, Devs: 8, Phases: []phase{training, at(stuck, 5)}},
			want:  []string{"20 suspect NoIOProgress", "20 hung FlatUsageStuckCollective"},
		},
		{
			name:  "slow start, then a late stall: one window after the last progress",
			grace: 20 * time.Minute,
			g:     gen{N: 60, Devs: 8, Phases: []phase{loading, at(training, 15), at(stuck, 40)}},
			// Last write at minute 39: suspect at 49, hung at 50.
			want: []string{"49 suspect NoIOProgress", "50 hung FlatUsageStuckCollective"},
		},
		{
			name:  "late stall with a grace far longer than the window: the grace adds nothing",
			grace: 45 * time.Minute,
			g:     gen{N: 120, Devs: 8, Phases: []phase{training, at(stuck, 90)}},
			want:  []string{"99 suspect NoIOProgress", "100 hung FlatUsageStuckCollective"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig()
			c.Grace = tc.grace
			tc.g.Host, tc.g.Job, tc.g.Seed, tc.g.Period = "gpu01", "77", 1, time.Minute
			d := New(c)
			var got []string
			for _, s := range tc.g.samples() {
				evs := d.Observe(s)
				if age := s.Time.Sub(t0); len(evs) > 0 && age < c.FirstVerdict() {
					t.Errorf("events at +%v, before the first verdict at +%v: %v", age, c.FirstVerdict(), evs)
				}
				for _, e := range evs {
					got = append(got, short(e))
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			at, ok := d.FirstVerdictAt("gpu01")
			if want := t0.Add(max(tc.grace, c.Window)); !ok || !at.Equal(want) {
				t.Errorf("FirstVerdictAt = %v, %v; want %v", at, ok, want)
			}
			if want := time.Duration(tc.g.N-1) * time.Minute; d.Span() != want {
				t.Errorf("Span = %v, want %v", d.Span(), want)
			}
		})
	}
	if _, ok := New(testConfig()).FirstVerdictAt("gpu01"); ok {
		t.Error("FirstVerdictAt of an unseen host: ok")
	}
}

func TestFirstVerdict(t *testing.T) {
	for _, tc := range []struct{ grace, window, want time.Duration }{
		{10 * time.Minute, 30 * time.Minute, 30 * time.Minute},
		{time.Hour, 30 * time.Minute, time.Hour},
		{0, 5 * time.Minute, 5 * time.Minute},
	} {
		c := watchcfg.DefaultHang()
		c.Grace, c.Window = tc.grace, tc.window
		if got := c.FirstVerdict(); got != tc.want {
			t.Errorf("grace %v window %v: FirstVerdict %v, want %v", tc.grace, tc.window, got, tc.want)
		}
	}
	// The shipped defaults: "hung after 30 minutes" means 30 minutes, also
	// for a job that never starts.
	if c := watchcfg.DefaultHang(); c.Grace != 10*time.Minute || c.Window != 30*time.Minute || c.FirstVerdict() != 30*time.Minute {
		t.Errorf("defaults: grace %v window %v first verdict %v", c.Grace, c.Window, c.FirstVerdict())
	}
}

func TestOutOfOrderSamplesIgnored(t *testing.T) {
	d := New(testConfig())
	g := gen{Host: "gpu01", Job: "1", Seed: 1, Period: time.Minute, N: 30, Devs: 2, Phases: []phase{loading}}
	ss := g.samples()
	d.Observe(ss[10])
	for _, s := range ss[:11] {
		if evs := d.Observe(s); evs != nil {
			t.Fatal(evs)
		}
	}
	if got := d.Latest()["gpu01"].Time; !got.Equal(ss[10].Time) {
		t.Fatalf("latest %v", got)
	}
}

func TestRingIsBounded(t *testing.T) {
	c := testConfig()
	d := New(c)
	g := gen{Host: "gpu01", Job: "1", Seed: 1, Period: time.Minute, N: 2000, Devs: 8, Phases: []phase{training}}
	for _, s := range g.samples() {
		d.Observe(s)
	}
	if n := len(d.hosts["gpu01"].ring); n != 4*10+8 {
		t.Fatalf("ring holds %d", n)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		key string
		mod func(*Config)
	}{
		{"period", func(c *Config) { c.Period = 0 }},
		{"window", func(c *Config) { c.Window = c.Period / 2 }},
		{"grace", func(c *Config) { c.Grace = -1 }},
		{"min_coverage", func(c *Config) { c.MinCoverage = 1.5 }},
		{"util_stddev", func(c *Config) { c.UtilStddev = -1 }},
		{"high_util", func(c *Config) { c.HighUtil = 5 }},
		{"idle_util", func(c *Config) { c.IdleUtil = 101 }},
		{"busy_power_w", func(c *Config) { c.BusyPowerW = -3 }},
	}
	if err := watchcfg.DefaultHang().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			c := watchcfg.DefaultHang()
			tc.mod(&c)
			err := c.Validate()
			if !errors.Is(err, watchcfg.ErrHang) || !strings.Contains(err.Error(), tc.key+":") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestMedianMatchesSort(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 5000; i++ {
		n := 1 + r.Intn(40)
		v := make([]float64, n)
		for j := range v {
			switch i % 3 {
			case 0:
				v[j] = float64(r.Intn(3)) // many duplicates
			case 1:
				v[j] = r.NormFloat64()
			default:
				v[j] = 100
			}
		}
		s := slices.Clone(v)
		slices.Sort(s)
		want := s[n/2]
		if n%2 == 0 {
			want = (s[n/2-1] + s[n/2]) / 2
		}
		if got := new(Detector).median(v); got != want {
			t.Fatalf("median(%v) = %v, want %v", v, got, want)
		}
	}
}
