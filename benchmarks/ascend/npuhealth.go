package ascend

import (
	"context"
	"fmt"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/dcmi"
)

// Reasons of the npu-health check.
const (
	// ReasonNPUUnhealthy: DCMI reports an alarm on the device (fail).
	ReasonNPUUnhealthy = "NPUUnhealthy"
	// ReasonNPUAbsent: DCMI reports the device as not present (fail).
	ReasonNPUAbsent = "NPUAbsent"
)

// npuHealthSettings are the settings of [checks.npu-health].
type npuHealthSettings struct {
	// FailOnMinor makes a minor alarm (health 1) a fault; major (2) and
	// critical (3) alarms always are.
	FailOnMinor bool `toml:"fail_on_minor"`
}

type npuHealth struct{ dcmiCheck }

func init() { benchmarks.Register(&npuHealth{dcmiCheck{sharedDCMI}}) }

// Spec describes the check.
func (*npuHealth) Spec() benchmarks.Descriptor {
	return npuFact(benchmarks.Descriptor{Name: "npu-health",
		Description: "health alarms per NPU (DCMI)",
		Settings:    func() any { return defaultNpuHealthSettings() },
		Reasons:     append([]string{ReasonNPUUnhealthy, ReasonNPUAbsent}, dcmiReasons()...)})
}

// defaultNpuHealthSettings returns the shipped settings of [checks.npu-health].
func defaultNpuHealthSettings() *npuHealthSettings {
	return &npuHealthSettings{FailOnMinor: true}
}

func (c *npuHealth) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultNpuHealthSettings()
	if err := devcheck.Decode(env, s); err != nil {
		return devcheck.BadSettings(c.Spec().Name, err)
	}
	return eachNPU(ctx, c.lib, c.Spec().Name, env, "%d %s healthy", func(t *devcheck.Tally, lib dcmi.Interface, n npu) {
		h, err := lib.Health(n.dev)
		if err != nil {
			t.LibErr(n.id(), "health", err)
			return
		}
		bad := h != dcmi.HealthOK && (h != dcmi.HealthMinor || s.FailOnMinor)
		st := benchmarks.StatusPass
		if bad {
			st = benchmarks.StatusFail
		}
		t.Value(n.id(), "health", float64(h), "", devcheck.Ptr(0.0), "<=", st)
		if h == dcmi.HealthOK {
			return
		}
		codes := errorCodes(lib, n)
		switch {
		case h == dcmi.HealthAbsent:
			t.Fail(n.id(), ReasonNPUAbsent, "%s: DCMI reports the device absent%s", n.id(), codes)
		case bad:
			t.Fail(n.id(), ReasonNPUUnhealthy, "%s: %s%s", n.id(), dcmi.HealthName(h), codes)
		default:
			t.Note("%s: %s%s (minor alarms tolerated)", n.id(), dcmi.HealthName(h), codes)
		}
	})
}

// errorCodes describes a device's current DCMI error codes for a message
// (" (error codes 0x80e01801, 0x80cb8009)"), or why they could not be read.
func errorCodes(lib dcmi.Interface, n npu) string {
	codes, err := lib.ErrorCodes(n.dev)
	if err != nil {
		return fmt.Sprintf(" (error codes unreadable: %v)", err)
	}
	if len(codes) == 0 {
		return ""
	}
	hex := make([]string, len(codes))
	for i, c := range codes {
		hex[i] = fmt.Sprintf("0x%08x", c)
	}
	return fmt.Sprintf(" (error %s %s)", devcheck.Plural(len(codes), "code"), strings.Join(hex, ", "))
}
