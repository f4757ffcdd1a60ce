package health

import (
	"context"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// Reasons of the row-remap check.
const (
	// ReasonRowRemapFailed: the device ran out of spare rows (remapping failed).
	ReasonRowRemapFailed = "RowRemapFailed"
	// ReasonRowRemapPending: a row remap waits for a GPU reset.
	ReasonRowRemapPending = "RowRemapPending"
	// ReasonRetiredPagesPending: (pre-Ampere) a page retirement waits for a GPU reset.
	ReasonRetiredPagesPending = "RetiredPagesPending"
	// ReasonRetiredPagesExceeded: (pre-Ampere) more pages retired than allowed.
	ReasonRetiredPagesExceeded = "RetiredPagesExceeded"
)

// rowRemapSettings are the settings of [checks.row-remap].
type rowRemapSettings struct {
	// MaxRetiredPages is the most retired pages (both causes) a pre-Ampere
	// device may have (count).
	MaxRetiredPages int `toml:"max_retired_pages"`
}

// rowRemap reads row remapping state (Ampere and later) or retired pages
// (earlier devices).
type rowRemap struct{ nvmlCheck }

func init() { benchmarks.Register(&rowRemap{nvmlCheck{shared}}) }

// Spec describes the check.
func (*rowRemap) Spec() benchmarks.Descriptor {
	return nvmlFact(benchmarks.Descriptor{Name: "row-remap",
		Description: "failed and pending HBM row remaps; retired pages before Ampere (NVML)",
		Settings:    func() any { return defaultRowRemapSettings() },
		Reasons: append([]string{ReasonRowRemapFailed, ReasonRowRemapPending, ReasonRetiredPagesPending, ReasonRetiredPagesExceeded},
			nvmlReasons()...)})
}

// defaultRowRemapSettings returns the shipped settings of [checks.row-remap].
func defaultRowRemapSettings() *rowRemapSettings {
	return &rowRemapSettings{MaxRetiredPages: 60}
}

// Validate reports out-of-range settings.
func (s *rowRemapSettings) Validate() error {
	if s.MaxRetiredPages < 0 {
		return benchmarks.BadSetting("max_retired_pages", "%d: want 0 or more", s.MaxRetiredPages)
	}
	return nil
}

func (c *rowRemap) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultRowRemapSettings()
	return eachGPU(ctx, c.lib, c.Spec().Name, env, s, "%d GPUs without row remap failures", func(t *devcheck.Tally, g gpu) {
		_, unc, pending, failed, ret := g.dev.GetRemappedRows()
		switch ret {
		case nvml.SUCCESS:
			st := benchmarks.StatusPass
			if failed {
				st = benchmarks.StatusFail
				t.Fail(g.id(), ReasonRowRemapFailed, "%s row remapping failed (%d uncorrectable rows remapped)", g.id(), unc)
			}
			if pending {
				st = benchmarks.StatusFail
				t.Fail(g.id(), ReasonRowRemapPending, "%s row remapping pending: GPU reset needed", g.id())
			}
			t.Value(g.id(), "remapped_rows_uncorrectable", float64(unc), "count", nil, "", st)
		case nvml.ERROR_NOT_SUPPORTED:
			c.retiredPages(t, g, s.MaxRetiredPages)
		default:
			t.LibErr(g.id(), "remapped rows", ret)
		}
	})
}

// retiredPages checks a device that predates row remapping.
func (c *rowRemap) retiredPages(t *devcheck.Tally, g gpu, max int) {
	total := 0
	for _, cause := range []nvml.PageRetirementCause{
		nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
		nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
	} {
		pages, ret := g.dev.GetRetiredPages(cause)
		if ret != nvml.SUCCESS {
			t.LibErr(g.id(), "row remapping and retired pages", ret)
			return
		}
		total += len(pages)
	}
	st := benchmarks.StatusPass
	if total > max {
		st = benchmarks.StatusFail
		t.Fail(g.id(), ReasonRetiredPagesExceeded, "%s retired pages %d > %d", g.id(), total, max)
	}
	pending, ret := g.dev.GetRetiredPagesPendingStatus()
	switch {
	case ret != nvml.SUCCESS:
		t.LibErr(g.id(), "retired pages pending status", ret)
	case pending == nvml.FEATURE_ENABLED:
		st = benchmarks.StatusFail
		t.Fail(g.id(), ReasonRetiredPagesPending, "%s page retirement pending: GPU reset needed", g.id())
	}
	t.Value(g.id(), "retired_pages", float64(total), "count", devcheck.Ptr(float64(max)), "<=", st)
}
