package ascend

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ReasonKernelWrongResult: the zero kernel did not clear what it should
// (fail). Slow launches give NPULaunchLatencyAboveThreshold or …AbovePeers.
const ReasonKernelWrongResult = "NPUKernelWrongResult"

// LaunchSettings are the settings of [checks.npu-kernel-launch]: launches, the peer
// comparison and thresholds (model → "event_us" / "wall_us" → most
// microseconds, median), those of every launch-latency check.
type LaunchSettings = device.LaunchSettings

// launchThresholds are the shipped limits on the median latency of one
// aclnnInplaceZero on one element: its two-phase call and kernel between
// two ACL events, and the host's time from the call to
// aclrtSynchronizeStream. Estimates, not measurements: the operator API's
// host path (executor built per call) and the task scheduler's dispatch
// make an operator launch on a 910B cost tens of microseconds, several
// times a CUDA kernel launch; the limits sit well above that to catch a
// node that is far off (a busy or throttled host CPU, a sick device), and
// must be calibrated on known-good nodes.
var launchThresholds = device.Thresholds{"Ascend910B": {"event_us": 100, "wall_us": 200}}

// DefaultLaunchSettings are the shipped settings.
func DefaultLaunchSettings() LaunchSettings {
	return device.DefaultLaunchSettings(launchThresholds)
}

// newLaunchCheck is the npu-kernel-launch check over the NPUs open opens.
func newLaunchCheck(open Opener) benchmarks.Check {
	return device.NewLaunch(device.LaunchSpec{
		Common: spec[LaunchSettings]("npu-kernel-launch", "aclnnInplaceZero launch latency per NPU and a verified zero kernel (ACL)",
			DefaultLaunchSettings, launchThresholds, open),
		WrongResult: ReasonKernelWrongResult,
		Slow:        devcheck.Tokens{Limit: "NPULaunchLatencyAboveThreshold", Peers: "NPULaunchLatencyAbovePeers"},
		RuntimeNote: "ACL %s",
	})
}

func init() { benchmarks.Register(newLaunchCheck(OpenACL)) }
