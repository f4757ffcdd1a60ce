package straggler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// TestStragglersBalanced: noisy but balanced hosts, or too few samples,
// give no straggler.
func TestStragglersBalanced(t *testing.T) {
	c := testConfig()
	full := int(c.StragglerSpan()/c.Period) + 1
	loads := []HostLoad{
		{Host: "a", Util: 95, Samples: full, Epoch: -1, Step: -1},
		{Host: "b", Util: 55, Samples: full, Epoch: -1, Step: -1},
		{Host: "c", Util: 70, Samples: full, Epoch: -1, Step: -1},
	}
	if got := Stragglers(t0, loads, c); len(got) != 0 {
		t.Fatalf("balanced: %+v", got)
	}
	loads[1].Util, loads[2].Util = 20, 20
	if got := Stragglers(t0, loads, c); len(got) != 1 || got[0].Host != "a" {
		t.Fatalf("a pinned busy: %+v", got)
	}
	loads[0].Samples = full / 2
	if got := Stragglers(t0, loads, c); len(got) != 0 {
		t.Fatalf("short coverage: %+v", got)
	}
	two := []HostLoad{{Host: "a", Step: 100, Interval: 10, Epoch: 1}, {Host: "b", Step: 95, Interval: 10, Epoch: 1}}
	if got := Stragglers(t0, two, c); len(got) != 0 {
		t.Fatalf("half an interval behind: %+v", got)
	}
}

// TestStragglersBusyHosts: the rules for hosts that look as busy as their
// peers (clocks, slowdown reasons, power), on whole-window loads.
func TestStragglersBusyHosts(t *testing.T) {
	c := testConfig()
	full := int(c.StragglerSpan()/c.Period) + 1
	// host is a busy host with full coverage: SM clock at clockPct of a
	// 1980 MHz maximum, power watts per device.
	host := func(name string, clockPct, power float64) HostLoad {
		return HostLoad{Host: name, Util: 99, Samples: full, Epoch: -1, Step: -1,
			ClockSamples: full, ClockPct: clockPct, ClockMHz: 19.8 * clockPct, ClockMaxMHz: 1980,
			PowerSamples: full, PowerW: power, Reasons: trace.ThrottleSwPowerCap}
	}
	healthy := func() []HostLoad {
		return []HostLoad{host("a", 97, 640), host("b", 95, 610), host("c", 98, 655), host("d", 96, 600)}
	}
	with := func(f func(ls []HostLoad)) []HostLoad { ls := healthy(); f(ls); return ls }
	tests := []struct {
		name  string
		loads []HostLoad
		want  string
	}{
		{"healthy", healthy(), ""},
		{"clock held down", with(func(ls []HostLoad) { ls[3].ClockPct, ls[3].ClockMHz = 55, 1089 }), "d ThrottledWhilePeersNot"},
		{"clock a little lower", with(func(ls []HostLoad) { ls[3].ClockPct = 86 }), ""},
		{"clock held down, too few readings of it", with(func(ls []HostLoad) { ls[3].ClockPct, ls[3].ClockSamples = 55, full/2 }), ""},
		{"clock held down on an idle host", with(func(ls []HostLoad) { ls[3].ClockPct, ls[3].Util = 30, 4 }), ""},
		{"clocks of half the hosts held down", with(func(ls []HostLoad) { ls[2].ClockPct, ls[3].ClockPct = 55, 50 }), ""},
		{"slowdown over most of the window, no clocks", with(func(ls []HostLoad) {
			for i := range ls {
				ls[i].ClockSamples = 0
			}
			ls[1].Slowed, ls[1].Reasons = full-2, trace.ThrottleHwThermalSlowdown|trace.ThrottleSwPowerCap
		}), "b ThrottledWhilePeersNot"},
		{"slowdown in a few readings", with(func(ls []HostLoad) { ls[1].Slowed, ls[1].Reasons = 3, trace.ThrottleHwSlowdown }), ""},
		{"peers slowed down too", with(func(ls []HostLoad) {
			ls[0].Slowed, ls[1].Slowed, ls[2].Slowed = full/2, full, full/3
		}), ""},
		{"normal reasons over the whole window", with(func(ls []HostLoad) {
			ls[1].Slowed, ls[1].Reasons = 0, trace.ThrottleSwPowerCap|trace.ThrottleApplicationsClocksSetting|trace.ThrottleSyncBoost
		}), ""},
		{"low power while busy", with(func(ls []HostLoad) { ls[0].PowerW = 250 }), "a LowPowerWhileBusy"},
		{"power a little lower", with(func(ls []HostLoad) { ls[0].PowerW = 470 }), ""},
		{"low power, peers not busy", with(func(ls []HostLoad) {
			for i := range ls {
				ls[i].Util = 60
			}
			ls[0].PowerW = 250
		}), ""},
		{"power not read (0 W)", with(func(ls []HostLoad) { ls[0].PowerW, ls[0].PowerSamples = 0, 0 }), ""},
		{"throttled and low power: named once", with(func(ls []HostLoad) { ls[3].ClockPct, ls[3].PowerW = 50, 200 }), "d ThrottledWhilePeersNot"},
		{"one of two hosts throttled", []HostLoad{host("a", 97, 640), host("b", 52, 600)}, "b ThrottledWhilePeersNot"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range Stragglers(t0, tc.loads, c) {
				got = append(got, e.Host+" "+e.Reason)
				if e.Message == "" || len(e.Evidence) == 0 {
					t.Errorf("straggler without message or evidence: %+v", e)
				}
			}
			if g := strings.Join(got, ", "); g != tc.want {
				t.Fatalf("got %q, want %q", g, tc.want)
			}
		})
	}
}

// TestStragglersEvidence: the events say what was measured against what.
func TestStragglersEvidence(t *testing.T) {
	c := testConfig()
	full := int(c.StragglerSpan()/c.Period) + 1
	ls := []HostLoad{
		{Host: "a", Util: 99, Samples: full, ClockSamples: full, ClockPct: 97, ClockMHz: 1920, ClockMaxMHz: 1980, PowerSamples: full, PowerW: 640, Epoch: -1, Step: -1},
		{Host: "b", Util: 99, Samples: full, ClockSamples: full, ClockPct: 96, ClockMHz: 1900, ClockMaxMHz: 1980, PowerSamples: full, PowerW: 630, Epoch: -1, Step: -1},
		{Host: "c", Util: 98, Samples: full, ClockSamples: full, ClockPct: 56, ClockMHz: 1110, ClockMaxMHz: 1980, PowerSamples: full, PowerW: 300, Epoch: -1, Step: -1,
			Slowed: full, Reasons: trace.ThrottleGpuIdle | trace.ThrottleHwPowerBrakeSlowdown | trace.ThrottleSwPowerCap},
	}
	evs := Stragglers(t0, ls, c)
	if len(evs) != 1 {
		t.Fatalf("got %+v", evs)
	}
	e := evs[0]
	want := "map[peers_slowed_share_median:0 peers_sm_clock_pct_median:96.5 reasons:[SwPowerCap HwPowerBrakeSlowdown] slowed_share:1 sm_clock_max_mhz:1980 sm_clock_mhz:1110 sm_clock_pct:56 util:98 window_s:600]"
	if got := fmt.Sprint(e.Evidence); got != want {
		t.Errorf("evidence\n got %s\nwant %s", got, want)
	}
	const msg = "slowest device's SM clock at 56% of its maximum (1110 of 1980 MHz) over the window while its peers' run at 96% (median); devices slowed down (HwPowerBrakeSlowdown) in 11 of 11 readings while its peers' are not"
	if e.Message != msg {
		t.Errorf("message\n got %s\nwant %s", e.Message, msg)
	}
	ls[2].ClockSamples, ls[2].Slowed = 0, 0
	evs = Stragglers(t0, ls, c)
	if len(evs) != 1 || evs[0].Reason != StragglerLowPowerWhileBusy ||
		fmt.Sprint(evs[0].Evidence) != "map[peers_power_median_w:635 peers_util_median:99 power_w:300 util:98 window_s:600]" {
		t.Fatalf("low power: %+v", evs)
	}
}

// TestNewHostLoad: each device is judged on its own readings; idle
// readings and devices read in few readings are not judged.
func TestNewHostLoad(t *testing.T) {
	reading := func(k int, clocks ...int) trace.Sample {
		s := trace.Sample{Time: t0.Add(time.Duration(k) * time.Minute)}
		for d, mhz := range clocks {
			a := trace.Accel{ID: fmt.Sprint(d), Util: 100, PowerW: 600, SMClockMHz: mhz, SMClockMaxMHz: 2000}
			switch {
			case mhz == 0: // not read
			case mhz < 0:
				a.SMClockMHz, a.Throttle, a.Util = 300, trace.ThrottleGpuIdle, 0
			case mhz < 1500:
				a.Throttle = trace.ThrottleHwThermalSlowdown
			}
			s.Accel = append(s.Accel, a)
		}
		return s
	}
	load := func(ss ...trace.Sample) HostLoad {
		var ps []utilPoint
		for _, s := range ss {
			p, ok := newUtilPoint(s)
			if !ok {
				t.Fatalf("no point of %+v", s)
			}
			ps = append(ps, p)
		}
		return newHostLoad("a", ps)
	}
	// Dips of different devices in different readings: each device's
	// median is high.
	l := load(reading(0, 1000, 1900, 1900), reading(1, 1900, 1000, 1900), reading(2, 1900, 1900, 1000), reading(3, 1900, 1900, 1900))
	if l.ClockPct != 95 || l.ClockSamples != 4 || l.Slowed != 1 || l.Reasons != trace.ThrottleHwThermalSlowdown {
		t.Errorf("dips: %+v", l)
	}
	// One device held down: it sets the host's clock.
	l = load(reading(0, 1900, 1000, 1900), reading(1, 1900, 1000, 1900), reading(2, 1900, 1100, 1900), reading(3, 1900, 1900, 1900))
	if l.ClockPct != 52.5 || l.ClockMHz != 1050 || l.ClockMaxMHz != 2000 || l.Slowed != 3 {
		t.Errorf("held down: %+v", l)
	}
	// Idle readings (GpuIdle) are not judged; a device busy in fewer
	// than half the readings is not judged at all.
	l = load(reading(0, -1, 1900), reading(1, -1, 1800), reading(2, -1, 1900), reading(3, 900, 1900))
	if l.ClockPct != 95 || l.ClockSamples != 4 || l.Util != 62.5 || l.PowerW != 600 || l.PowerSamples != 4 {
		t.Errorf("idle: %+v", l)
	}
	// Without clocks.
	if l = load(reading(0, 0, 0), reading(1, 0, 0)); l.ClockSamples != 0 || l.ClockPct != 0 || l.Samples != 2 {
		t.Errorf("no devices' clocks: %+v", l)
	}
}
