package ascend

import (
	"context"
	"errors"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/dcmi"
)

// Reasons of the npu-ecc check.
const (
	// ReasonNPUECCUncorrectable: the HBM reports uncorrectable (double-bit)
	// errors (fail).
	ReasonNPUECCUncorrectable = "NPUECCUncorrectable"
	// ReasonNPUIsolatedPages: more HBM pages were isolated after
	// uncorrectable errors than allowed (fail).
	ReasonNPUIsolatedPages = "NPUIsolatedPages"
)

// npuECCSettings are the settings of [checks.npu-ecc].
type npuECCSettings struct {
	// MaxUncorrectable is the most current double-bit HBM errors a device may report.
	MaxUncorrectable int `toml:"max_uncorrectable"`
	// MaxIsolatedPages is the most HBM pages a device may have isolated
	// after double-bit errors; negative disables the limit.
	MaxIsolatedPages int `toml:"max_isolated_pages"`
}

type npuECC struct{ dcmiCheck }

func init() { benchmarks.Register(&npuECC{dcmiCheck{sharedDCMI}}) }

// Spec describes the check.
func (*npuECC) Spec() benchmarks.Descriptor {
	return npuFact(benchmarks.Descriptor{Name: "npu-ecc",
		Description: "uncorrectable HBM ECC errors and isolated pages per NPU (DCMI)",
		Settings:    func() any { return defaultNpuECCSettings() },
		Reasons:     append([]string{ReasonNPUECCUncorrectable, ReasonNPUIsolatedPages}, dcmiReasons()...)})
}

// defaultNpuECCSettings returns the shipped settings of [checks.npu-ecc].
func defaultNpuECCSettings() *npuECCSettings {
	return &npuECCSettings{MaxUncorrectable: 0, MaxIsolatedPages: 64}
}

func (c *npuECC) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultNpuECCSettings()
	if err := devcheck.Decode(env, s); err != nil {
		return devcheck.BadSettings(c.Spec().Name, err)
	}
	if err := s.Validate(); err != nil {
		return devcheck.BadSettings(c.Spec().Name, err)
	}
	return eachNPU(ctx, c.lib, c.Spec().Name, env, "%d %s: no uncorrectable HBM ECC errors", func(t *devcheck.Tally, lib dcmi.Interface, n npu) {
		e, err := lib.ECC(n.dev, dcmi.MemoryHBM)
		if err != nil {
			if errors.Is(err, dcmi.ErrNotSupported) {
				t.Note("%s: HBM ECC not reported", n.id())
				return
			}
			t.LibErr(n.id(), "HBM ECC", err)
			return
		}
		if !e.Enabled {
			t.Note("%s: HBM ECC disabled", n.id())
		}
		st := benchmarks.StatusPass
		if int64(e.DoubleBit) > int64(s.MaxUncorrectable) {
			st = benchmarks.StatusFail
			t.Fail(n.id(), ReasonNPUECCUncorrectable, "%s: %d uncorrectable HBM ECC errors (limit %d)", n.id(), e.DoubleBit, s.MaxUncorrectable)
		}
		t.Value(n.id(), "hbm_ecc_uncorrectable", float64(e.DoubleBit), "count", devcheck.Ptr(float64(s.MaxUncorrectable)), "<=", st)
		t.Value(n.id(), "hbm_ecc_correctable", float64(e.SingleBit), "count", nil, "", benchmarks.StatusPass)
		t.Value(n.id(), "hbm_ecc_uncorrectable_total", float64(e.TotalDoubleBit), "count", nil, "", benchmarks.StatusPass)
		st = benchmarks.StatusPass
		var thr *float64
		if s.MaxIsolatedPages >= 0 {
			thr = devcheck.Ptr(float64(s.MaxIsolatedPages))
			if int64(e.DoubleBitIsolatedPages) > int64(s.MaxIsolatedPages) {
				st = benchmarks.StatusFail
				t.Fail(n.id(), ReasonNPUIsolatedPages, "%s: %d HBM pages isolated after uncorrectable errors (limit %d)", n.id(), e.DoubleBitIsolatedPages, s.MaxIsolatedPages)
			}
		}
		t.Value(n.id(), "hbm_isolated_pages", float64(e.DoubleBitIsolatedPages), "count", thr, "<=", st)
	})
}

// Validate reports out-of-range settings, naming the key.
func (s *npuECCSettings) Validate() error {
	if s.MaxUncorrectable < 0 {
		return benchmarks.BadSetting("max_uncorrectable", "%d: want 0 or more", s.MaxUncorrectable)
	}
	return nil
}
