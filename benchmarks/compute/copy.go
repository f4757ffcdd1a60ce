package compute

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ReasonCopyWrongResult: bytes copied to a device and back changed (fail).
const ReasonCopyWrongResult = "CopyWrongResult"

// CopySettings are the settings of [checks.copy].
type CopySettings struct {
	Libraries
	Peers
	// Bytes is the size of each copy.
	Bytes int `toml:"bytes"`
	// Iters is how many copies of each kind are timed.
	Iters int `toml:"iters"`
	// Thresholds: model → "h2d_gbps" / "d2h_gbps" / "d2d_gbps" → least GB/s (1e9 bytes/s).
	Thresholds Thresholds `toml:"thresholds"`
}

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
	return CopySettings{
		Libraries:  DefaultLibraries(),
		Peers:      Peers{Fraction: 0.75, Min: 3},
		Bytes:      256 << 20,
		Iters:      10,
		Thresholds: copyThresholds.Merge(nil),
	}
}

type copyCheck struct{ open Opener }

func init() { benchmarks.Register(&copyCheck{open: OpenCUDA}) }

func (*copyCheck) Name() string          { return "copy" }
func (*copyCheck) Kind() benchmarks.Kind { return benchmarks.KindPerf }
func (*copyCheck) Isolated() bool        { return true }

// Vendor says which devices the check is about.
func (*copyCheck) Vendor() benchmarks.Vendor { return benchmarks.VendorNVIDIA }

// Description says what the check does, for --list-checks.
func (*copyCheck) Description() string {
	return "host-device and device-device copy bandwidth per GPU, bytes verified (CUDA)"
}

// Defaults returns the shipped settings.
func (*copyCheck) Defaults() any { s := DefaultCopySettings(); return &s }

func (c *copyCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := DefaultCopySettings()
	if err := devcheck.DecodeThresholds(env, &s, &s.Thresholds, copyThresholds); err != nil {
		return unknown(c.Name(), ReasonBadSettings, "%v", err)
	}
	if err := s.Validate(); err != nil {
		return unknown(c.Name(), ReasonBadSettings, "%v", err)
	}
	node, err := openNode(ctx, c.open, s.Libraries, envDevices(env))
	if err != nil {
		return classify(c.Name(), err)
	}
	defer node.Close()
	devs := node.Devices()
	r := &result{check: c.Name()}
	var h2d, d2h, d2d []devcheck.Reading
	// One device at a time, so that host copies do not share PCIe root
	// ports and host memory bandwidth with each other.
	for _, d := range devs {
		var out CopyOutput
		err := devcheck.Run(ctx, func() (err error) { out, err = node.Copy(ctx, d.Index, s.Bytes, s.Iters); return err })
		if err != nil {
			r.deviceError(devName(d.Index), err)
			if errors.Is(err, ErrHung) {
				break
			}
			continue
		}
		if !out.Verified {
			r.fail(ReasonCopyWrongResult, devName(d.Index), "%s: data copied to the device and back differs", devName(d.Index))
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
		vals, fs := devcheck.Evaluate(x.m, x.rs, s.Thresholds, s.Peers)
		r.add(x.m, "CopyBandwidth", vals, fs)
	}
	r.note("libcuda %s", node.Driver())
	return r.done(fmt.Sprintf("%d devices: copy bandwidth as expected", len(devs)))
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
