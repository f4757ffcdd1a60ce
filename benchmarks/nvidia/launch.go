package nvidia

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ReasonKernelWrongResult: the fill kernel did not write what it should (fail).
const ReasonKernelWrongResult = "KernelWrongResult"

// LaunchSettings are the settings of [checks.kernel-launch]: launches, the peer
// comparison and thresholds (model → "event_us" / "wall_us" → most
// microseconds, median), those of every launch-latency check.
type LaunchSettings = device.LaunchSettings

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

// DefaultLaunchSettings are the shipped settings.
func DefaultLaunchSettings() LaunchSettings {
	return device.DefaultLaunchSettings(launchThresholds)
}

// newLaunchCheck is the kernel-launch check over the GPUs open opens:
// an empty kernel's launch latency per device and a verified fill kernel.
func newLaunchCheck(open Opener) benchmarks.Check {
	return device.NewLaunch(device.LaunchSpec{
		Common: spec[LaunchSettings]("kernel-launch", "empty-kernel launch latency and a verified fill kernel (CUDA)",
			DefaultLaunchSettings, launchThresholds, open),
		WrongResult: ReasonKernelWrongResult,
		Slow:        devcheck.Tokens{Limit: "LaunchLatencyAboveThreshold", Peers: "LaunchLatencyAbovePeers"},
		RuntimeNote: "libcuda %s",
	})
}

func init() { benchmarks.Register(newLaunchCheck(OpenCUDA)) }
