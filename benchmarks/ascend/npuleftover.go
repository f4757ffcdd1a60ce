package ascend

import (
	"context"
	"fmt"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/dcmi"
)

// Reasons of the npu-leftover check.
const (
	// ReasonNPUProcessLeftover: processes still hold a device (fail).
	ReasonNPUProcessLeftover = "NPUProcessLeftover"
	// ReasonNPUMemoryLeftover: more HBM is in use than an idle device
	// reports (fail).
	ReasonNPUMemoryLeftover = "NPUMemoryLeftover"
)

// npuLeftoverSettings are the settings of [checks.npu-leftover].
type npuLeftoverSettings struct {
	// Thresholds: model → "hbm_used_mib" → the most HBM (MiB) an idle
	// device may report in use.
	Thresholds device.Thresholds `toml:"thresholds"`
}

// leftoverThresholds: Huawei's "Ascend 910B DCMI API" reference
// (dcmi_get_device_hbm_info, constraints) says the system holds 3 GB of a
// 32 GB part's HBM and 4 GB of a 64 GB part's with no work running. The
// limits add 1.5 GiB to that. The 32 GB parts are 910B4s; calibrate on the
// fleet and override per model where that does not hold.
var leftoverThresholds = device.Thresholds{
	"Ascend910B":  {"hbm_used_mib": 4096 + 1536},
	"Ascend910B4": {"hbm_used_mib": 3072 + 1536},
}

type npuLeftover struct{ dcmiCheck }

func init() { benchmarks.Register(&npuLeftover{dcmiCheck{sharedDCMI}}) }

// Spec describes the check.
func (*npuLeftover) Spec() benchmarks.Descriptor {
	return npuFact(benchmarks.Descriptor{Name: "npu-leftover",
		Description: "processes and HBM left on the job's NPUs (DCMI)",
		Settings:    func() any { return defaultNpuLeftoverSettings() },
		Reasons:     append([]string{ReasonNPUProcessLeftover, ReasonNPUMemoryLeftover}, dcmiReasons()...)})
}

// defaultNpuLeftoverSettings returns the shipped settings of [checks.npu-leftover].
func defaultNpuLeftoverSettings() *npuLeftoverSettings {
	return &npuLeftoverSettings{Thresholds: leftoverThresholds.Merge(nil)}
}

func (c *npuLeftover) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultNpuLeftoverSettings()
	if err := devcheck.DecodeThresholds(env, s, &s.Thresholds, leftoverThresholds); err != nil {
		return devcheck.BadSettings(c.Spec().Name, err)
	}
	return eachNPU(ctx, c.lib, c.Spec().Name, env, "%d %s: nothing left by earlier jobs", func(t *devcheck.Tally, lib dcmi.Interface, n npu) {
		ps, err := lib.Processes(n.dev)
		if err != nil {
			t.LibErr(n.id(), "processes", err)
		} else {
			st := benchmarks.StatusPass
			if len(ps) > 0 {
				st = benchmarks.StatusFail
				pids := make([]string, len(ps))
				for i, p := range ps {
					pids[i] = fmt.Sprintf("%d (%.0f MiB)", p.PID, float64(p.MemBytes)/(1<<20))
				}
				t.Fail(n.id(), ReasonNPUProcessLeftover, "%s held by %d %s: pid %s", n.id(), len(ps), devcheck.Plural(len(ps), "process"), strings.Join(pids, ", "))
			}
			t.Value(n.id(), "processes", float64(len(ps)), "count", devcheck.Ptr(0.0), "<=", st)
		}
		h, err := lib.HBM(n.dev)
		if err != nil {
			t.LibErr(n.id(), "HBM", err)
			return
		}
		st := benchmarks.StatusPass
		var thr *float64
		if lim, _, ok := s.Thresholds.Lookup(n.model, "hbm_used_mib"); ok {
			thr = devcheck.Ptr(lim)
			if float64(h.UsedMiB) > lim {
				st = benchmarks.StatusFail
				t.Fail(n.id(), ReasonNPUMemoryLeftover, "%s: %d MiB of HBM in use, an idle %s reports at most %.0f", n.id(), h.UsedMiB, n.model, lim)
			}
		}
		t.Value(n.id(), "hbm_used_mib", float64(h.UsedMiB), "MiB", thr, "<=", st)
	})
}
