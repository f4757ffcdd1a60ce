package health

import (
	"context"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// Reasons of the pcie check.
const (
	// ReasonPCIeWidthDegraded: the link runs (or can run) narrower than it should.
	ReasonPCIeWidthDegraded = "PCIeWidthDegraded"
	// ReasonPCIeGenDegraded: the link runs (or can run) at a lower generation than it should.
	ReasonPCIeGenDegraded = "PCIeGenDegraded"
)

// pcieModel is what one device model's PCIe link must be able to do.
type pcieModel struct {
	// MinGen is the lowest acceptable maximum link generation (0: not checked).
	MinGen int `toml:"min_gen"`
	// MinWidth is the lowest acceptable maximum link width in lanes (0: not checked).
	MinWidth int `toml:"min_width"`
}

// pcieSettings are the settings of [checks.pcie].
type pcieSettings struct {
	// Models holds per-model floors; an entry replaces the shipped one.
	Models map[string]pcieModel `toml:"models"`
	// IdleGenDownshift accepts a current generation below the maximum while
	// the device is idle (NVIDIA GPUs lower the link speed to save power).
	IdleGenDownshift bool `toml:"idle_gen_downshift"`
}

// pcie compares each device's PCIe link with its maximum and with the
// model's expected link.
type pcie struct{ nvmlCheck }

func init() { benchmarks.Register(&pcie{nvmlCheck{shared}}) }

// Spec describes the check.
func (*pcie) Spec() benchmarks.Descriptor {
	return nvmlFact(benchmarks.Descriptor{Name: "pcie",
		Description: "PCIe link generation and width below the GPU's maximum (NVML)",
		Settings:    func() any { return defaultPcieSettings() },
		Reasons:     append([]string{ReasonPCIeWidthDegraded, ReasonPCIeGenDegraded}, nvmlReasons()...)})
}

// defaultPcieSettings returns the shipped settings of [checks.pcie].
func defaultPcieSettings() *pcieSettings {
	return &pcieSettings{Models: copyMap(pcieDefaults), IdleGenDownshift: true}
}

// Validate reports out-of-range settings.
func (s *pcieSettings) Validate() error {
	for model, m := range s.Models {
		if m.MinGen < 0 || m.MinGen > 7 || m.MinWidth < 0 || m.MinWidth > 32 {
			return benchmarks.BadSetting("models", "%q: want min_gen 0 to 7 and min_width 0 to 32", model)
		}
	}
	return nil
}

func (c *pcie) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultPcieSettings()
	return eachGPU(ctx, c.lib, c.Spec().Name, env, s, "%d GPUs at full PCIe link", func(t *devcheck.Tally, g gpu) {
		c.device(t, g, *s)
	})
}

func (c *pcie) device(t *devcheck.Tally, g gpu, s pcieSettings) {
	read := func(what string, f func() (int, nvml.Return)) (int, bool) {
		v, ret := f()
		if ret != nvml.SUCCESS {
			t.LibErr(g.id(), what, ret)
			return 0, false
		}
		return v, true
	}
	curW, ok1 := read("PCIe link width", g.dev.GetCurrPcieLinkWidth)
	maxW, ok2 := read("PCIe max link width", g.dev.GetMaxPcieLinkWidth)
	curG, ok3 := read("PCIe link generation", g.dev.GetCurrPcieLinkGeneration)
	maxG, ok4 := read("PCIe max link generation", g.dev.GetMaxPcieLinkGeneration)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return
	}
	model := s.Models[g.name]

	// Width: the current width below the maximum is a degraded link;
	// GPUs keep their width when idle.
	wst := benchmarks.StatusPass
	if curW < maxW {
		wst = benchmarks.StatusFail
		t.Fail(g.id(), ReasonPCIeWidthDegraded, "%s PCIe link width x%d < max x%d", g.id(), curW, maxW)
	}
	t.Value(g.id(), "pcie_width", float64(curW), "lanes", devcheck.Ptr(float64(maxW)), ">=", wst)
	if model.MinWidth > 0 {
		st := benchmarks.StatusPass
		if maxW < model.MinWidth {
			st = benchmarks.StatusFail
			t.Fail(g.id(), ReasonPCIeWidthDegraded, "%s PCIe max link width x%d < x%d expected for %s", g.id(), maxW, model.MinWidth, g.name)
		}
		t.Value(g.id(), "pcie_max_width", float64(maxW), "lanes", devcheck.Ptr(float64(model.MinWidth)), ">=", st)
	}

	// Generation: maximum against the model's floor (max vs max), then
	// the current generation against the maximum, unless the device is
	// idle and may have lowered its link speed to save power.
	if model.MinGen > 0 {
		st := benchmarks.StatusPass
		if maxG < model.MinGen {
			st = benchmarks.StatusFail
			t.Fail(g.id(), ReasonPCIeGenDegraded, "%s PCIe max link generation %d < %d expected for %s", g.id(), maxG, model.MinGen, g.name)
		}
		t.Value(g.id(), "pcie_max_gen", float64(maxG), "gen", devcheck.Ptr(float64(model.MinGen)), ">=", st)
	}
	gst := benchmarks.StatusPass
	if curG < maxG {
		idle := false
		if s.IdleGenDownshift {
			reasons, ret := g.dev.GetCurrentClocksEventReasons()
			idle = ret == nvml.SUCCESS && reasons&nvml.ClocksEventReasonGpuIdle != 0
		}
		if idle {
			t.Note("%s PCIe generation %d < max %d while idle (power saving)", g.id(), curG, maxG)
		} else {
			gst = benchmarks.StatusFail
			t.Fail(g.id(), ReasonPCIeGenDegraded, "%s PCIe link generation %d < max %d", g.id(), curG, maxG)
		}
	}
	t.Value(g.id(), "pcie_gen", float64(curG), "gen", devcheck.Ptr(float64(maxG)), ">=", gst)
}
