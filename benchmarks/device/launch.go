package device

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/internal/stats"
)

// LaunchOutput is what a launch-latency measurement found.
type LaunchOutput struct {
	// EventUs are per-launch durations timed by two device events around
	// the launch, in microseconds.
	EventUs []float64
	// WallUs are per-launch host wall times (launch + synchronize) in microseconds.
	WallUs []float64
	// FillOK is true when the kernel that writes known values wrote them.
	FillOK bool
}

// LaunchSettings are the settings of every vendor's launch-latency check,
// whole: the vendor adds only its shipped thresholds.
type LaunchSettings struct {
	Peers
	// Launches is how many kernels are timed per device.
	Launches int `toml:"launches"`
	// Thresholds: model → "event_us" / "wall_us" → most microseconds (median).
	Thresholds Thresholds `toml:"thresholds"`
}

// defaultLaunchSettings are the shipped launch settings with the vendor's
// shipped thresholds th: 1000 launches per device. The peer comparison is
// loose (fail above twice the median): devices on the far socket of a
// two-socket host legitimately launch slower.
func defaultLaunchSettings(th Thresholds) *LaunchSettings {
	return &LaunchSettings{Peers: Peers{Fraction: 0.5, Min: 3}, Launches: 1000, Thresholds: th.Merge(nil)}
}

// Validate reports out-of-range launch settings, naming the key.
func (s *LaunchSettings) Validate() error {
	if s.Launches < 10 {
		return benchmarks.BadSetting("launches", "%d: want 10 or more", s.Launches)
	}
	return devcheck.ValidatePeers(s.Peers)
}

func (s *LaunchSettings) thresholds() *Thresholds { return &s.Thresholds }

// launchCheck measures each device's launch latency and checks that a
// kernel computes.
type launchCheck struct{ perDevice }

// NewLaunch returns the launch-latency check that spec describes.
func NewLaunch(spec PerDeviceSpec) benchmarks.Check {
	return &launchCheck{newPerDevice(spec, func() settings { return defaultLaunchSettings(spec.Thresholds) })}
}

// launchReadings are the per-device figures of a launch check.
type launchReadings struct{ event, wall, p99 []devcheck.Reading }

func (c *launchCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	ls := defaultLaunchSettings(c.Thresholds)
	node, res := c.start(ctx, env, ls)
	if res != nil {
		return *res
	}
	defer node.Close()
	devs := node.Devices()
	t := c.tally()
	var rs launchReadings
	// One device at a time: launch latency is what the host thread sees,
	// and concurrent launches from other devices would disturb it.
	for _, d := range devs {
		if !c.measure(ctx, t, node, d, ls.Launches, &rs) {
			break
		}
	}
	for _, x := range []struct {
		m  devcheck.Metric
		rs []devcheck.Reading
		p  Peers
	}{
		{devcheck.Metric{Name: "event_us", Key: "event_us", Unit: "us", Lower: true, Label: "launch latency (event)"}, rs.event, ls.Peers},
		{devcheck.Metric{Name: "wall_us", Key: "wall_us", Unit: "us", Lower: true, Label: "launch latency (wall)"}, rs.wall, ls.Peers},
		{devcheck.Metric{Name: "wall_us_p99", Unit: "us", Lower: true, Label: "launch latency p99 (wall)"}, rs.p99, Peers{}},
	} {
		evaluate(t, x.m, c.spec.Slow, x.rs, ls.Thresholds, x.p)
	}
	if c.spec.RuntimeNote != "" {
		t.Note(c.spec.RuntimeNote, node.Runtime())
	}
	return t.Result(fmt.Sprintf("%s: launch latency as expected", c.Vendor.Count(len(devs))))
}

// measure times launches on device d and adds its readings to rs; it
// returns false when the check must stop (the device hung).
func (c *launchCheck) measure(ctx context.Context, t *devcheck.Tally, node Node, d Info, launches int, rs *launchReadings) bool {
	v := c.Vendor
	name := v.DevName(d.Index)
	var out LaunchOutput
	err := devcheck.Run(ctx, func() (err error) { out, err = node.Launch(ctx, d.Index, launches); return err })
	if err == nil && (len(out.EventUs) == 0 || len(out.WallUs) == 0) {
		err = errors.New("no launches were timed")
	}
	if err != nil {
		v.record(t, name, err)
		return !errors.Is(err, ErrHung)
	}
	if !out.FillOK {
		t.Fail(name, c.spec.WrongResult, "%s: the fill kernel wrote wrong values", name)
	}
	rs.event = append(rs.event, devcheck.Reading{Device: name, Model: d.Name, Value: stats.Median(out.EventUs)})
	rs.wall = append(rs.wall, devcheck.Reading{Device: name, Model: d.Name, Value: stats.Median(out.WallUs)})
	rs.p99 = append(rs.p99, devcheck.Reading{Device: name, Model: d.Name, Value: stats.Percentile(out.WallUs, 99)})
	return true
}
