package health

import (
	"context"
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ReasonNVLinkDown: a device has fewer active NVLink links than it should.
const ReasonNVLinkDown = "NVLinkDown"

// nvlinkSettings are the settings of [checks.nvlink].
type nvlinkSettings struct {
	// ExpectedLinks is the number of active links per device model (count);
	// an entry replaces the shipped one for that model.
	ExpectedLinks map[string]int `toml:"expected_links"`
}

// nvlink counts each device's active NVLink links.
type nvlink struct{ nvmlCheck }

func init() { benchmarks.Register(&nvlink{nvmlCheck{shared}}) }

// Spec describes the check.
func (*nvlink) Spec() benchmarks.Descriptor {
	return nvmlFact(benchmarks.Descriptor{Name: "nvlink",
		Description: "NVLink links that are down (NVML)",
		Settings:    func() any { return defaultNvlinkSettings() },
		Reasons:     append([]string{ReasonNVLinkDown}, nvmlReasons()...)})
}

// defaultNvlinkSettings returns the shipped settings of [checks.nvlink].
func defaultNvlinkSettings() *nvlinkSettings {
	return &nvlinkSettings{ExpectedLinks: copyMap(nvlinkDefaults)}
}

// Validate reports out-of-range settings.
func (s *nvlinkSettings) Validate() error {
	for model, n := range s.ExpectedLinks {
		if n < 0 || n > nvml.NVLINK_MAX_LINKS {
			return benchmarks.BadSetting("expected_links", "%q = %d: want 0 to %d", model, n, nvml.NVLINK_MAX_LINKS)
		}
	}
	return nil
}

func (c *nvlink) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultNvlinkSettings()
	// A node with one GPU has no NVLink peers: an SXM part alone in a host
	// (or passed through to a virtual machine) reports every link down, and
	// that is its normal state. Seen on a single H200: 0 of 18 links active.
	alone := false
	if lib, err := c.lib.get(); err == nil {
		if n, ret := lib.DeviceGetCount(); ret == nvml.SUCCESS && n == 1 {
			alone = true
		}
	}
	return eachGPU(ctx, c.lib, c.Spec().Name, env, s, "%d GPUs with all NVLink links active", func(t *devcheck.Tally, g gpu) {
		active := 0
		var down []string
		for link := 0; link < nvml.NVLINK_MAX_LINKS; link++ {
			state, ret := g.dev.GetNvLinkState(link)
			switch ret {
			case nvml.SUCCESS:
				if state == nvml.FEATURE_ENABLED {
					active++
				} else {
					down = append(down, fmt.Sprint(link))
				}
			case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_INVALID_ARGUMENT:
				// No such link on this device.
			default:
				t.LibErr(g.id(), fmt.Sprintf("NVLink %d state", link), ret)
				return
			}
		}
		want := s.ExpectedLinks[g.name]
		st := benchmarks.StatusPass
		var thr *float64
		switch {
		case alone && active == 0:
			t.Note("%s is the node's only GPU: NVLink has no peer to link to (%d active)", g.id(), active)
		case want > 0:
			thr = devcheck.Ptr(float64(want))
			if active < want {
				st = benchmarks.StatusFail
				t.Fail(g.id(), ReasonNVLinkDown, "%s NVLink %d of %d links active%s", g.id(), active, want, downList(down))
			}
		case active > 0 && len(down) > 0:
			// Unknown model: some links up and others down is a broken link.
			st = benchmarks.StatusFail
			t.Fail(g.id(), ReasonNVLinkDown, "%s NVLink %d links active%s", g.id(), active, downList(down))
		}
		t.Value(g.id(), "nvlink_active", float64(active), "count", thr, ">=", st)
	})
}

func downList(down []string) string {
	if len(down) == 0 {
		return ""
	}
	return ", down: " + strings.Join(down, ",")
}
