package health

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// Reasons of the leftover check.
const (
	// ReasonLeftoverProcess: processes still run on a device before the job starts.
	ReasonLeftoverProcess = "LeftoverProcess"
	// ReasonLeftoverMemory: more device memory is in use than an idle device uses.
	ReasonLeftoverMemory = "LeftoverMemory"
)

// leftoverSettings are the settings of [checks.leftover].
type leftoverSettings struct {
	// MaxUsedMiB is the device memory an idle device may report as used, in
	// MiB, for models without an entry in Models.
	MaxUsedMiB float64 `toml:"max_used_mib"`
	// Models is MaxUsedMiB per device model (MiB); an entry replaces the shipped one.
	Models map[string]float64 `toml:"models"`
}

// leftover looks for processes and memory that earlier jobs left on the
// devices. On a shared node it must only see the job's own devices
// (Env.Devices), or the other jobs' processes count as leftovers.
type leftover struct{ nvmlCheck }

func init() { benchmarks.Register(&leftover{nvmlCheck{shared}}) }

// Spec describes the check.
func (*leftover) Spec() benchmarks.Descriptor {
	return nvmlFact(benchmarks.Descriptor{Name: "leftover",
		Description: "processes and memory left on the job's GPUs (NVML)",
		Settings:    func() any { return defaultLeftoverSettings() },
		Reasons:     append([]string{ReasonLeftoverProcess, ReasonLeftoverMemory}, nvmlReasons()...)})
}

// defaultLeftoverSettings returns the shipped settings of [checks.leftover].
func defaultLeftoverSettings() *leftoverSettings {
	return &leftoverSettings{MaxUsedMiB: 1024, Models: copyMap(leftoverDefaults)}
}

// Validate reports out-of-range settings.
func (s *leftoverSettings) Validate() error {
	if s.MaxUsedMiB < 0 {
		return benchmarks.BadSetting("max_used_mib", "%g: want 0 or more", s.MaxUsedMiB)
	}
	for model, v := range s.Models {
		if v < 0 {
			return benchmarks.BadSetting("models", "%q = %g: want 0 or more", model, v)
		}
	}
	return nil
}

func (c *leftover) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultLeftoverSettings()
	return eachGPU(ctx, c.lib, c.Spec().Name, env, s, "%d GPUs free of earlier jobs", func(t *devcheck.Tally, g gpu) {
		procs, err := deviceProcs(g.dev)
		var ret nvml.Return
		switch {
		case errors.As(err, &ret):
			t.LibErr(g.id(), "running processes", ret)
		case err != nil:
			t.Unknown(g.id(), ReasonNVMLError, "%s %v", g.id(), err)
		default:
			st := benchmarks.StatusPass
			if len(procs) > 0 {
				st = benchmarks.StatusFail
				list := make([]string, 0, len(procs))
				for _, p := range procs {
					list = append(list, fmt.Sprintf("pid %d (%d MiB)", p.Pid, p.UsedGpuMemory>>20))
				}
				t.Fail(g.id(), ReasonLeftoverProcess, "%s %d %s left by an earlier job: %s",
					g.id(), len(procs), devcheck.Plural(len(procs), "process"), strings.Join(list, ", "))
			}
			t.Value(g.id(), "processes", float64(len(procs)), "count", devcheck.Ptr(0.0), "<=", st)
		}

		mem, ret := g.dev.GetMemoryInfo()
		if ret != nvml.SUCCESS {
			t.LibErr(g.id(), "memory info", ret)
			return
		}
		limit := s.MaxUsedMiB
		if v, ok := s.Models[g.name]; ok {
			limit = v
		}
		used := float64(mem.Used) / (1 << 20)
		st := benchmarks.StatusPass
		if used > limit {
			st = benchmarks.StatusFail
			t.Fail(g.id(), ReasonLeftoverMemory, "%s %.0f MiB of device memory in use > %.0f", g.id(), used, limit)
		}
		t.Value(g.id(), "memory_used", used, "MiB", devcheck.Ptr(limit), "<=", st)
	})
}
