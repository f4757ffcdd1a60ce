package health

import (
	"context"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ReasonECCUncorrectable: a device counted more uncorrectable (volatile)
// ECC errors than allowed since the driver last loaded.
const ReasonECCUncorrectable = "ECCUncorrectable"

// eccSettings are the settings of [checks.ecc].
type eccSettings struct {
	// MaxUncorrected is the most uncorrectable volatile ECC errors a device
	// may have (count).
	MaxUncorrected int `toml:"max_uncorrected"`
}

// ecc reads each device's uncorrectable volatile ECC error count.
type ecc struct{ nvmlCheck }

func init() { benchmarks.Register(&ecc{nvmlCheck{shared}}) }

// Spec describes the check.
func (*ecc) Spec() benchmarks.Descriptor {
	return nvmlFact(benchmarks.Descriptor{Name: "ecc",
		Description: "uncorrectable volatile ECC errors per GPU (NVML)",
		Settings:    func() any { return defaultEccSettings() },
		Reasons:     append([]string{ReasonECCUncorrectable}, nvmlReasons()...)})
}

// defaultEccSettings returns the shipped settings of [checks.ecc].
func defaultEccSettings() *eccSettings {
	return &eccSettings{}
}

// Validate reports out-of-range settings.
func (s *eccSettings) Validate() error {
	if s.MaxUncorrected < 0 {
		return benchmarks.BadSetting("max_uncorrected", "%d: want 0 or more", s.MaxUncorrected)
	}
	return nil
}

func (c *ecc) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultEccSettings()
	return eachGPU(ctx, c.lib, c.Spec().Name, env, s, "%d GPUs without uncorrectable ECC errors", func(t *devcheck.Tally, g gpu) {
		limit := float64(s.MaxUncorrected)
		n, ret := g.dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
		if ret != nvml.SUCCESS {
			t.LibErr(g.id(), "ECC error count", ret)
			return
		}
		st := benchmarks.StatusPass
		if float64(n) > limit {
			st = benchmarks.StatusFail
			t.Fail(g.id(), ReasonECCUncorrectable, "%s uncorrectable ECC errors %d > %d", g.id(), n, s.MaxUncorrected)
		}
		t.Value(g.id(), "ecc_uncorrected_volatile", float64(n), "count", devcheck.Ptr(limit), "<=", st)
	})
}
