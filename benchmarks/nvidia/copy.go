package nvidia

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ReasonCopyWrongResult: bytes copied to a device and back changed (fail).
const ReasonCopyWrongResult = "CopyWrongResult"

// CopySettings are the settings of [checks.copy]: bytes, iters, the peer
// comparison and thresholds (model → "h2d_gbps" / "d2h_gbps" /
// "d2d_gbps" → least GB/s), those of every copy check.
type CopySettings = device.CopySettings

// copyThresholds are shipped floors. Host copies use pinned memory over
// PCIe (gen4 x16 on A100 reaches ~25 GB/s, gen5 x16 on H100/H200/B200
// ~50 GB/s); device-to-device counts the bytes copied (each is read and
// written once), about 40% of the HBM bandwidth.
var copyThresholds = Thresholds{
	"A100": {"h2d_gbps": 18, "d2h_gbps": 18, "d2d_gbps": 600},
	"H100": {"h2d_gbps": 35, "d2h_gbps": 35, "d2d_gbps": 1100},
	"H200": {"h2d_gbps": 35, "d2h_gbps": 35, "d2d_gbps": 1500},
	"B200": {"h2d_gbps": 35, "d2h_gbps": 35, "d2d_gbps": 2500},
}

// DefaultCopySettings are the shipped settings.
func DefaultCopySettings() CopySettings {
	return device.DefaultCopySettings(copyThresholds)
}

// newCopyCheck is the copy check over the GPUs open opens.
func newCopyCheck(open Opener) benchmarks.Check {
	return device.NewCopy(device.CopySpec{
		Common:      spec[CopySettings]("copy", "host-device and device-device copy bandwidth per GPU, bytes verified (CUDA)", DefaultCopySettings, copyThresholds, open),
		WrongResult: ReasonCopyWrongResult,
		Slow:        devcheck.Tokens{Limit: "CopyBandwidthBelowThreshold", Peers: "CopyBandwidthBelowPeers"},
		RuntimeNote: "libcuda %s",
	})
}

func init() { benchmarks.Register(newCopyCheck(OpenCUDA)) }
