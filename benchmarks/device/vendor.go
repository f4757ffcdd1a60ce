package device

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/config"
)

// Vendor is what the checks need to know about one vendor's devices beyond
// the Node: how results name devices and count them, how errors classify,
// and the few ways the two families' results have always read differently.
type Vendor struct {
	// Vendor is the devices' maker, as each check declares it.
	Vendor benchmarks.Vendor
	// DevName is how results name device index i ("gpu3", "npu3").
	DevName func(i int) string
	// Noun is the word for one device in messages ("device", "NPU").
	Noun string
	// Count is how pass messages count n devices ("8 devices", "8 NPUs").
	Count func(n int) string
	// Classify says whether an error of the node or of a device's
	// measurement is a fault (StatusFail) or leaves the check unknown, and
	// with which reason token.
	Classify func(err error) (benchmarks.Status, string)
	// Reasons are the tokens Classify can give, for the checks' Reasons.
	Reasons []string
	// BadSettings is the result of a check whose settings are invalid.
	BadSettings func(check string, err error) benchmarks.Result
	// NodeDevice names the node in a node-wide error ("node", or "" for none).
	NodeDevice string
	// UnknownDevice, when true, lets an unknown result name its first
	// device; otherwise only failures name one.
	UnknownDevice bool
	// StopIsHang, when true, reports a deadline that passed between two
	// measurements as the node hung (ReasonDeviceHung); otherwise as
	// devcheck.ReasonCanceled.
	StopIsHang bool
	// MissingLibraryStops, when true, ends a GEMM check at the first
	// device whose operator library is missing, said once for the node.
	MissingLibraryStops bool
}

// record records err of device ("" for the node) in t as Classify says.
func (v *Vendor) record(t *devcheck.Tally, device string, err error) {
	st, reason := v.Classify(err)
	msg := err.Error()
	if device != "" {
		msg = device + ": " + msg
	}
	if st == benchmarks.StatusFail {
		t.Fail(device, reason, "%s", msg)
		return
	}
	if !v.UnknownDevice {
		device = ""
	}
	t.Unknown(device, reason, "%s", msg)
}

// stopped reports whether ctx has ended, and records it in t.
func (v *Vendor) stopped(ctx context.Context, t *devcheck.Tally) bool {
	if !v.StopIsHang {
		return t.Canceled(ctx)
	}
	if err := ctx.Err(); err != nil {
		v.record(t, v.NodeDevice, fmt.Errorf("%w: %v", ErrHung, err))
		return true
	}
	return false
}

// missingLibrary reports whether err says a library or symbol is missing.
func missingLibrary(err error) bool {
	return errors.Is(err, dl.ErrNotFound) || errors.Is(err, dl.ErrSymbol)
}

// names names each of the device indices.
func (v *Vendor) names(idx []int) []string {
	out := make([]string, len(idx))
	for i, d := range idx {
		out[i] = v.DevName(d)
	}
	return out
}

// settings are a neutral check's settings, as the loader decodes and
// validates them: one of this package's settings types.
type settings interface {
	Validate() error
	// thresholds returns the settings' thresholds table (nil for settings
	// without one).
	thresholds() *Thresholds
}

// Common is what every compute check declares and how it starts: its
// name and description, its shipped thresholds and the opening of the
// vendor's node.
type Common struct {
	// Name is the registered name ("gemm", "npu-gemm").
	Name string
	// Description says what the check does, for --list-checks.
	Description string
	// Vendor describes the vendor's devices.
	Vendor *Vendor
	// Thresholds are the shipped thresholds: the defaults' table, to which
	// the settings' thresholds table adds model by model (nil for a check
	// without thresholds).
	Thresholds Thresholds
	// Open opens the node's devices with the libraries of the vendor's
	// [vendor.NAME] table (env.Libraries): devices nil means all. A config
	// error it returns (a bad library key) makes the settings invalid.
	Open func(ctx context.Context, env *benchmarks.Env, devices []int) (Node, error)
}

// check holds what the checks share: the descriptor and the start of Run
// (settings, then the node).
type check struct {
	Common
	desc benchmarks.Descriptor
}

// newCheck returns the shared part of a check over co whose shipped
// settings defaults returns: a performance probe of co's vendor,
// isolated, in the default suite, whose reason tokens are its own (those
// that are set), then its vendor's error classification.
func newCheck(co Common, defaults func() settings, own ...string) check {
	d := benchmarks.Descriptor{Name: co.Name, Kind: benchmarks.KindPerf, Vendor: co.Vendor.Vendor, Isolated: true,
		Default: true, Description: co.Description, Settings: func() any { return defaults() }}
	for _, r := range own {
		if r != "" {
			d.Reasons = append(d.Reasons, r)
		}
	}
	d.Reasons = append(d.Reasons, co.Vendor.Reasons...)
	return check{Common: co, desc: d}
}

// Spec describes the check.
func (c *check) Spec() benchmarks.Descriptor { return c.desc }

// PerDeviceSpec is one vendor's check of a measurement made on one device
// at a time and verified (copy, launch).
type PerDeviceSpec struct {
	Common
	// WrongResult is the reason token of a device whose work came back
	// wrong (bytes copied changed, a kernel that wrote wrong values).
	WrongResult string
	// Slow are the limit and peer reasons ("CopyBandwidthBelowThreshold", ...).
	Slow devcheck.Tokens
	// RuntimeNote formats Node.Runtime in the message ("" for none).
	RuntimeNote string
}

// perDevice is what the per-device checks share: the check and its spec.
type perDevice struct {
	check
	spec PerDeviceSpec
}

// newPerDevice returns the shared part of the check spec describes, whose
// shipped settings defaults returns.
func newPerDevice(spec PerDeviceSpec, defaults func() settings) perDevice {
	own := append([]string{spec.WrongResult}, spec.Slow.List()...)
	return perDevice{check: newCheck(spec.Common, defaults, own...), spec: spec}
}

// start decodes the settings into s, which holds the shipped ones,
// validates them and opens the node under ctx's deadline. When that fails
// it returns the result to report instead.
func (c *check) start(ctx context.Context, env *benchmarks.Env, s settings) (Node, *benchmarks.Result) {
	var err error
	if th := s.thresholds(); th != nil {
		err = devcheck.DecodeThresholds(env, s, th, c.Thresholds)
	} else {
		err = devcheck.Decode(env, s)
	}
	if err == nil {
		err = s.Validate()
	}
	if err != nil {
		r := c.Vendor.BadSettings(c.Name, err)
		return nil, &r
	}
	var n Node
	err = devcheck.Run(ctx, func() (err error) {
		n, err = c.Open(ctx, env, devcheck.EnvDevices(env))
		return err
	})
	var ke *config.KeyError
	if errors.As(err, &ke) {
		r := c.Vendor.BadSettings(c.Name, err)
		return nil, &r
	}
	if err != nil {
		t := c.tally()
		c.Vendor.record(t, "", err)
		r := t.Result("")
		return nil, &r
	}
	return n, nil
}

func (c *check) tally() *devcheck.Tally { return &devcheck.Tally{Check: c.Name} }

// evaluate records in t each reading's value and its comparison with its
// model's limit and the node's median (devcheck.Evaluate): tok names
// the reasons.
func evaluate(t *devcheck.Tally, m devcheck.Metric, tok devcheck.Tokens, rs []devcheck.Reading, th Thresholds, p Peers) {
	vals, fs := devcheck.Evaluate(m, rs, th, p)
	t.Values = append(t.Values, vals...)
	for _, f := range fs {
		t.Fail(f.Device, f.Reason(tok), "%s", f.Message)
	}
}

// sortReadings orders readings by device name, numbers in natural order
// ("gpu2" before "gpu10").
func sortReadings(rs []devcheck.Reading) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i].Device, rs[j].Device
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		return a < b
	})
}
