package device

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// CopySettings are the settings of every vendor's copy check, whole: the
// vendor adds only its shipped thresholds.
type CopySettings struct {
	Peers
	// Bytes is the size of each copy.
	Bytes int `toml:"bytes"`
	// Iters is how many copies of each kind are timed.
	Iters int `toml:"iters"`
	// Thresholds: model → "h2d_gbps" / "d2h_gbps" / "d2d_gbps" → least GB/s (1e9 bytes/s).
	Thresholds Thresholds `toml:"thresholds"`
}

// defaultCopySettings are the shipped copy settings with the vendor's
// shipped thresholds th: 256 MiB copies, 10 of each kind, a device below
// 75% of the node's median fails (PCIe topology differs between sockets).
func defaultCopySettings(th Thresholds) *CopySettings {
	return &CopySettings{Peers: Peers{Fraction: 0.75, Min: 3}, Bytes: 256 << 20, Iters: 10, Thresholds: th.Merge(nil)}
}

// Validate reports out-of-range copy settings, naming the key.
func (s *CopySettings) Validate() error {
	if s.Bytes < 1<<20 || s.Bytes%4 != 0 {
		return benchmarks.BadSetting("bytes", "%d: want a multiple of 4, at least 1 MiB (1048576)", s.Bytes)
	}
	if s.Iters < 1 {
		return benchmarks.BadSetting("iters", "%d: want 1 or more", s.Iters)
	}
	return devcheck.ValidatePeers(s.Peers)
}

func (s *CopySettings) thresholds() *Thresholds { return &s.Thresholds }

// copyCheck measures copy bandwidth per device and verifies the bytes.
type copyCheck struct{ perDevice }

// NewCopy returns the copy check that spec describes.
func NewCopy(spec PerDeviceSpec) benchmarks.Check {
	return &copyCheck{newPerDevice(spec, func() settings { return defaultCopySettings(spec.Thresholds) })}
}

func (c *copyCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	cs := defaultCopySettings(c.Thresholds)
	node, res := c.start(ctx, env, cs)
	if res != nil {
		return *res
	}
	defer node.Close()
	v := c.Vendor
	devs := node.Devices()
	t := c.tally()
	var h2d, d2h, d2d []devcheck.Reading
	// One device at a time, so that host copies do not share PCIe root
	// ports and host memory bandwidth with each other.
	for _, d := range devs {
		name := v.DevName(d.Index)
		var out CopyOutput
		err := devcheck.Run(ctx, func() (err error) { out, err = node.Copy(ctx, d.Index, cs.Bytes, cs.Iters); return err })
		if err != nil {
			v.record(t, name, err)
			if errors.Is(err, ErrHung) {
				break
			}
			continue
		}
		if !out.Verified {
			t.Fail(name, c.spec.WrongResult, "%s: data copied to the device and back differs", name)
		}
		h2d = append(h2d, devcheck.Reading{Device: name, Model: d.Name, Value: out.H2D})
		d2h = append(d2h, devcheck.Reading{Device: name, Model: d.Name, Value: out.D2H})
		d2d = append(d2d, devcheck.Reading{Device: name, Model: d.Name, Value: out.D2D})
	}
	for _, x := range []struct {
		m  devcheck.Metric
		rs []devcheck.Reading
	}{
		{devcheck.Metric{Name: "h2d_gbps", Key: "h2d_gbps", Unit: "GB/s", Label: "host-to-device"}, h2d},
		{devcheck.Metric{Name: "d2h_gbps", Key: "d2h_gbps", Unit: "GB/s", Label: "device-to-host"}, d2h},
		{devcheck.Metric{Name: "d2d_gbps", Key: "d2d_gbps", Unit: "GB/s", Label: "device-to-device"}, d2d},
	} {
		evaluate(t, x.m, c.spec.Slow, x.rs, cs.Thresholds, cs.Peers)
	}
	if c.spec.RuntimeNote != "" {
		t.Note(c.spec.RuntimeNote, node.Runtime())
	}
	return t.Result(fmt.Sprintf("%s: copy bandwidth as expected", v.Count(len(devs))))
}
