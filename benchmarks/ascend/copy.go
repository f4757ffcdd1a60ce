package ascend

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ReasonCopyWrongResult: bytes copied to a device and back changed (fail).
// Low bandwidth gives NPUCopyBandwidthBelowThreshold or …BelowPeers.
const ReasonCopyWrongResult = "NPUCopyWrongResult"

// CopySettings are the settings of [checks.npu-copy]: bytes, iters, the peer
// comparison and thresholds (model → "h2d_gbps" / "d2h_gbps" /
// "d2d_gbps" → least GB/s), those of every copy check.
type CopySettings = device.CopySettings

// copyThresholds are shipped floors. 910B parts attach to the host over
// PCIe 4.0 x16 (about 25 GB/s achievable with page-locked memory; floor
// 60% of that). Device-to-device counts the bytes copied (each read and
// written once): about 35% of the HBM bandwidth (1.6 TB/s on 910B1–B3,
// 0.8 TB/s on the 32 GB 910B4). Estimates: calibrate on the fleet.
var copyThresholds = device.Thresholds{
	"Ascend910B":  {"h2d_gbps": 15, "d2h_gbps": 15, "d2d_gbps": 560},
	"Ascend910B4": {"h2d_gbps": 15, "d2h_gbps": 15, "d2d_gbps": 280},
}

// DefaultCopySettings are the shipped settings.
func DefaultCopySettings() CopySettings {
	return device.DefaultCopySettings(copyThresholds)
}

// newCopyCheck is the npu-copy check over the NPUs open opens.
func newCopyCheck(open Opener) benchmarks.Check {
	return device.NewCopy(device.CopySpec{
		Common:      spec[CopySettings]("npu-copy", "host-device and device-device copy bandwidth per NPU, bytes verified (ACL)", DefaultCopySettings, copyThresholds, open),
		WrongResult: ReasonCopyWrongResult,
		Slow:        devcheck.Tokens{Limit: "NPUCopyBandwidthBelowThreshold", Peers: "NPUCopyBandwidthBelowPeers"},
	})
}

func init() { benchmarks.Register(newCopyCheck(OpenACL)) }
