package ascend

import (
	"context"
	"errors"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/dcmi"
)

// Reasons of the npu-link check.
const (
	// ReasonNPULinkDown: the device's RoCE network detection fails
	// (socket failure, timeout, unreachable peer, fault) (fail).
	ReasonNPULinkDown = "NPULinkDown"
)

// npuLinkSettings are the settings of [checks.npu-link].
type npuLinkSettings struct {
	// RequireDetection makes a device whose RoCE detection has not been
	// started (no detect IP configured with hccn_tool) unknown instead of
	// passing with a note.
	RequireDetection bool `toml:"require_detection"`
}

type npuLink struct{ dcmiCheck }

func init() { benchmarks.Register(&npuLink{dcmiCheck{sharedDCMI}}) }

// Spec describes the check.
func (*npuLink) Spec() benchmarks.Descriptor {
	return npuFact(benchmarks.Descriptor{Name: "npu-link",
		Description: "RoCE network health per NPU (DCMI)",
		Settings:    func() any { return defaultNpuLinkSettings() },
		Reasons:     append([]string{ReasonNPULinkDown}, dcmiReasons()...)})
}

// defaultNpuLinkSettings returns the shipped settings of [checks.npu-link].
func defaultNpuLinkSettings() *npuLinkSettings {
	return &npuLinkSettings{}
}

func (c *npuLink) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultNpuLinkSettings()
	if err := devcheck.Decode(env, s); err != nil {
		return devcheck.BadSettings(c.Spec().Name, err)
	}
	return eachNPU(ctx, c.lib, c.Spec().Name, env, "%d %s: RoCE links healthy", func(t *devcheck.Tally, lib dcmi.Interface, n npu) {
		h, err := lib.NetworkHealth(n.dev)
		if err != nil {
			if errors.Is(err, dcmi.ErrNotSupported) {
				t.Unknown(n.id(), ReasonNotSupported, "%s: no RoCE network health (%v)", n.id(), err)
				return
			}
			t.LibErr(n.id(), "RoCE network health", err)
			return
		}
		st := benchmarks.StatusPass
		switch h {
		case dcmi.NetOK:
		case dcmi.NetInit:
			if s.RequireDetection {
				t.Unknown(n.id(), ReasonNotSupported, "%s: RoCE detection not started (set a detect IP with hccn_tool)", n.id())
			} else {
				t.Note("%s: RoCE detection not started", n.id())
			}
		case dcmi.NetSockFail, dcmi.NetRecvTimeout, dcmi.NetUnreachable, dcmi.NetTimeExceeded, dcmi.NetFault:
			st = benchmarks.StatusFail
			t.Fail(n.id(), ReasonNPULinkDown, "%s: RoCE link %s", n.id(), h)
		default:
			t.Unknown(n.id(), ReasonDCMIError, "%s: RoCE detection reports %s", n.id(), h)
		}
		t.Value(n.id(), "roce_health", float64(h), "", devcheck.Ptr(0.0), "<=", st)
	})
}
