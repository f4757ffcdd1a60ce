package ascend

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/compute"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ReasonCopyWrongResult: bytes copied to a device and back changed (fail).
// Low bandwidth gives NPUCopyBandwidthBelowThreshold or …BelowPeers.
const ReasonCopyWrongResult = "NPUCopyWrongResult"

// CopySettings are the settings of [checks.npu-copy].
type CopySettings struct {
	Libraries
	compute.Peers
	// Bytes is the size of each copy.
	Bytes int `toml:"bytes"`
	// Iters is how many copies of each kind are timed.
	Iters int `toml:"iters"`
	// Thresholds: model → "h2d_gbps" / "d2h_gbps" / "d2d_gbps" → least GB/s (1e9 B/s).
	Thresholds compute.Thresholds `toml:"thresholds"`
}

// copyThresholds are shipped floors. 910B parts attach to the host over
// PCIe 4.0 x16 (about 25 GB/s achievable with page-locked memory; floor
// 60% of that). Device-to-device counts the bytes copied (each read and
// written once): about 35% of the HBM bandwidth (1.6 TB/s on 910B1–B3,
// 0.8 TB/s on the 32 GB 910B4). Estimates: calibrate on the fleet.
var copyThresholds = compute.Thresholds{
	"Ascend910B":  {"h2d_gbps": 15, "d2h_gbps": 15, "d2d_gbps": 560},
	"Ascend910B4": {"h2d_gbps": 15, "d2h_gbps": 15, "d2d_gbps": 280},
}

// DefaultCopySettings are the shipped settings.
func DefaultCopySettings() CopySettings {
	return CopySettings{
		Libraries:  DefaultLibraries(),
		Peers:      compute.Peers{Fraction: 0.75, Min: 3},
		Bytes:      256 << 20,
		Iters:      10,
		Thresholds: copyThresholds.Merge(nil),
	}
}

type copyCheck struct{ open Opener }

func init() { benchmarks.Register(&copyCheck{open: OpenACL}) }

func (*copyCheck) Name() string          { return "npu-copy" }
func (*copyCheck) Kind() benchmarks.Kind { return benchmarks.KindPerf }
func (*copyCheck) Isolated() bool        { return true }

// Vendor says which devices the check is about.
func (*copyCheck) Vendor() benchmarks.Vendor { return benchmarks.VendorAscend }

// Description says what the check does, for --list-checks.
func (*copyCheck) Description() string {
	return "host-device and device-device copy bandwidth per NPU, bytes verified (ACL)"
}

// Defaults returns the shipped settings.
func (*copyCheck) Defaults() any { s := DefaultCopySettings(); return &s }

func (c *copyCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := DefaultCopySettings()
	if err := devcheck.DecodeThresholds(env, &s, &s.Thresholds, copyThresholds); err != nil {
		return devcheck.BadSettings(c.Name(), err)
	}
	if err := s.Validate(); err != nil {
		return devcheck.BadSettings(c.Name(), err)
	}
	node, res := openNode(ctx, c.Name(), c.open, s.Libraries, devcheck.EnvDevices(env))
	if res != nil {
		return *res
	}
	defer node.Close()
	devs := node.Devices()
	t := newTally(c.Name())
	var h2d, d2h, d2d []devcheck.Reading
	// One device at a time: host copies would otherwise share PCIe root
	// ports and host memory bandwidth.
	for _, d := range devs {
		var out compute.CopyOutput
		err := devcheck.Run(ctx, func() (err error) { out, err = node.Copy(ctx, d.Index, s.Bytes, s.Iters); return err })
		if err != nil {
			classify(t, devName(d.Index), err)
			if errors.Is(err, devcheck.ErrHung) {
				break
			}
			continue
		}
		if !out.Verified {
			t.Fail(devName(d.Index), ReasonCopyWrongResult, "%s: data copied to the device and back differs", devName(d.Index))
		}
		h2d = append(h2d, devcheck.Reading{Device: devName(d.Index), Model: d.Name, Value: out.H2D})
		d2h = append(d2h, devcheck.Reading{Device: devName(d.Index), Model: d.Name, Value: out.D2H})
		d2d = append(d2d, devcheck.Reading{Device: devName(d.Index), Model: d.Name, Value: out.D2D})
	}
	for _, x := range []struct {
		m  devcheck.Metric
		rs []devcheck.Reading
	}{
		{devcheck.Metric{Name: "h2d_gbps", Key: "h2d_gbps", Unit: "GB/s", Label: "host-to-device"}, h2d},
		{devcheck.Metric{Name: "d2h_gbps", Key: "d2h_gbps", Unit: "GB/s", Label: "device-to-host"}, d2h},
		{devcheck.Metric{Name: "d2d_gbps", Key: "d2d_gbps", Unit: "GB/s", Label: "device-to-device"}, d2d},
	} {
		evaluate(t, x.m, "NPUCopyBandwidth", x.rs, s.Thresholds, s.Peers)
	}
	return t.Result(fmt.Sprintf("%d %s: copy bandwidth as expected", len(devs), devcheck.Plural(len(devs), "NPU")))
}

// Validate reports out-of-range settings, naming the key.
func (s *CopySettings) Validate() error {
	if s.Bytes < 1<<20 || s.Bytes%4 != 0 {
		return benchmarks.BadSetting("bytes", "%d: want a multiple of 4, at least 1 MiB (1048576)", s.Bytes)
	}
	if s.Iters < 1 {
		return benchmarks.BadSetting("iters", "%d: want 1 or more", s.Iters)
	}
	return devcheck.ValidatePeers(s.Peers)
}
