package compute

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ReasonKernelWrongResult: the fill kernel did not write what it should (fail).
const ReasonKernelWrongResult = "KernelWrongResult"

// LaunchSettings are the settings of [checks.kernel-launch].
type LaunchSettings struct {
	Libraries
	Peers
	// Launches is how many empty kernels are timed per device.
	Launches int `toml:"launches"`
	// Thresholds: model → "event_us" / "wall_us" → most microseconds (median).
	Thresholds Thresholds `toml:"thresholds"`
}

// launchThresholds are the shipped limits on the median launch latency of
// an empty kernel: event time between two events around the launch, and
// host wall time of launch plus synchronize. The A100 figures are the
// published fleet baselines. A healthy H200 (driver 580, one GPU in a
// virtual machine) measured 5.5 us event and 9.3 us wall, right at the A100
// limits, so Hopper and newer parts get about 1.5 times that measurement:
// a limit must sit above the healthy spread, not on it.
var launchThresholds = Thresholds{
	"A100": {"event_us": 5.5, "wall_us": 9.4},
	"H100": {"event_us": 8, "wall_us": 14},
	"H200": {"event_us": 8, "wall_us": 14},
	"B200": {"event_us": 8, "wall_us": 14},
}

// DefaultLaunchSettings are the shipped settings. The peer comparison is
// loose (fail above twice the median): devices on the far socket of a
// two-socket host legitimately launch slower.
func DefaultLaunchSettings() LaunchSettings {
	return LaunchSettings{
		Libraries:  DefaultLibraries(),
		Peers:      Peers{Fraction: 0.5, Min: 3},
		Launches:   1000,
		Thresholds: launchThresholds.Merge(nil),
	}
}

type launchCheck struct{ open Opener }

func init() { benchmarks.Register(&launchCheck{open: OpenCUDA}) }

func (*launchCheck) Name() string          { return "kernel-launch" }
func (*launchCheck) Kind() benchmarks.Kind { return benchmarks.KindPerf }
func (*launchCheck) Isolated() bool        { return true }

// Vendor says which devices the check is about.
func (*launchCheck) Vendor() benchmarks.Vendor { return benchmarks.VendorNVIDIA }

// Description says what the check does, for --list-checks.
func (*launchCheck) Description() string {
	return "empty-kernel launch latency and a verified fill kernel (CUDA)"
}

// Defaults returns the shipped settings.
func (*launchCheck) Defaults() any { s := DefaultLaunchSettings(); return &s }

func (c *launchCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := DefaultLaunchSettings()
	if err := devcheck.DecodeThresholds(env, &s, &s.Thresholds, launchThresholds); err != nil {
		return unknown(c.Name(), ReasonInvalidSettings, "%v", err)
	}
	if err := s.Validate(); err != nil {
		return unknown(c.Name(), ReasonInvalidSettings, "%v", err)
	}
	node, err := openNode(ctx, c.open, s.Libraries, devcheck.EnvDevices(env))
	if err != nil {
		return classify(c.Name(), err)
	}
	defer node.Close()
	devs := node.Devices()
	r := &result{check: c.Name()}
	var ev, wall, p99 []devcheck.Reading
	// One device at a time: launch latency is what the host thread sees,
	// and concurrent launches from other devices would disturb it.
	for _, d := range devs {
		var out LaunchOutput
		err := devcheck.Run(ctx, func() (err error) { out, err = node.Launch(ctx, d.Index, s.Launches); return err })
		if err == nil && (len(out.EventUs) == 0 || len(out.WallUs) == 0) {
			err = errors.New("no launches were timed")
		}
		if err != nil {
			r.deviceError(devName(d.Index), err)
			if errors.Is(err, ErrHung) {
				break
			}
			continue
		}
		if !out.FillOK {
			r.fail(ReasonKernelWrongResult, devName(d.Index), "%s: the fill kernel wrote wrong values", devName(d.Index))
		}
		ev = append(ev, devcheck.Reading{Device: devName(d.Index), Model: d.Name, Value: devcheck.Median(out.EventUs)})
		wall = append(wall, devcheck.Reading{Device: devName(d.Index), Model: d.Name, Value: devcheck.Median(out.WallUs)})
		p99 = append(p99, devcheck.Reading{Device: devName(d.Index), Model: d.Name, Value: percentile(out.WallUs, 99)})
	}
	for _, x := range []struct {
		m  devcheck.Metric
		rs []devcheck.Reading
		p  Peers
	}{
		{devcheck.Metric{Name: "event_us", Key: "event_us", Unit: "us", Lower: true, Label: "launch latency (event)"}, ev, s.Peers},
		{devcheck.Metric{Name: "wall_us", Key: "wall_us", Unit: "us", Lower: true, Label: "launch latency (wall)"}, wall, s.Peers},
		{devcheck.Metric{Name: "wall_us_p99", Unit: "us", Lower: true, Label: "launch latency p99 (wall)"}, p99, Peers{}},
	} {
		vals, fs := devcheck.Evaluate(x.m, x.rs, s.Thresholds, x.p)
		r.add(x.m, "LaunchLatency", vals, fs)
	}
	r.note("libcuda %s", node.Runtime())
	return r.done(fmt.Sprintf("%d devices: launch latency as expected", len(devs)))
}

// Validate reports out-of-range settings, naming the key.
func (s *LaunchSettings) Validate() error {
	if s.Launches < 10 {
		return benchmarks.BadSetting("launches", "%d: want 10 or more", s.Launches)
	}
	return devcheck.ValidatePeers(s.Peers)
}
