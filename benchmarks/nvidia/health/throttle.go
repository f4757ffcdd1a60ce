package health

import (
	"context"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// throttleReason is one clocks-event reason bit that can count as a fault.
type throttleReason struct {
	bit    uint64
	name   string // settings name
	reason string // Reason token
}

// throttleReasons are the clocks-event reasons that say the hardware is
// holding the clocks down. The software power cap, idle, application
// clocks and sync boost reasons are normal operation and never listed.
var throttleReasons = []throttleReason{
	{nvml.ClocksThrottleReasonHwSlowdown, "hw_slowdown", "HWSlowdown"},
	{nvml.ClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown", "HWThermalSlowdown"},
	{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown", "HWPowerBrakeSlowdown"},
	{nvml.ClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown", "SWThermalSlowdown"},
}

// throttleSettings are the settings of [checks.throttle].
type throttleSettings struct {
	// Reasons are the clocks-event reasons that fail the check, by name:
	// hw_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown, sw_thermal_slowdown.
	Reasons []string `toml:"reasons"`
}

// throttle reads each device's current clocks-event reasons.
type throttle struct{ nvmlCheck }

func init() { benchmarks.Register(&throttle{nvmlCheck{shared}}) }

// Spec describes the check.
func (*throttle) Spec() benchmarks.Descriptor {
	return nvmlFact(benchmarks.Descriptor{Name: "throttle",
		Description: "hardware, power-brake and thermal slowdowns (NVML clocks-event reasons)",
		Settings:    func() any { return defaultThrottleSettings() },
		Reasons: func() []string {
			var out []string
			for _, r := range throttleReasons {
				out = append(out, r.reason)
			}
			return append(out, nvmlReasons()...)
		}()})
}

// defaultThrottleSettings returns the shipped settings of [checks.throttle].
func defaultThrottleSettings() *throttleSettings {
	s := &throttleSettings{}
	for _, r := range throttleReasons {
		s.Reasons = append(s.Reasons, r.name)
	}
	return s
}

// Validate reports unknown reason names.
func (s *throttleSettings) Validate() error {
	_, err := s.watched()
	return err
}

// watched returns the reasons named in the settings.
func (s *throttleSettings) watched() ([]throttleReason, error) {
	var watch []throttleReason
	for _, name := range s.Reasons {
		found := false
		for _, r := range throttleReasons {
			if r.name == name {
				watch = append(watch, r)
				found = true
			}
		}
		if !found {
			var known []string
			for _, r := range throttleReasons {
				known = append(known, r.name)
			}
			return nil, benchmarks.BadSetting("reasons", "unknown reason %q (known: %s)", name, strings.Join(known, ", "))
		}
	}
	return watch, nil
}

func (c *throttle) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultThrottleSettings()
	return eachGPU(ctx, c.lib, c.Spec().Name, env, s, "%d GPUs without hardware slowdown", func(t *devcheck.Tally, g gpu) {
		watch, _ := s.watched()
		bits, ret := g.dev.GetCurrentClocksEventReasons()
		if ret != nvml.SUCCESS {
			t.LibErr(g.id(), "clocks event reasons", ret)
			return
		}
		var names []string
		first := ""
		for _, r := range watch {
			if bits&r.bit != 0 {
				names = append(names, r.name)
				if first == "" {
					first = r.reason
				}
			}
		}
		st := benchmarks.StatusPass
		if len(names) > 0 {
			st = benchmarks.StatusFail
			t.Fail(g.id(), first, "%s clocks slowed down: %s", g.id(), strings.Join(names, ", "))
		}
		t.Value(g.id(), "clocks_event_reasons", float64(bits), "bitmask", nil, "", st)
	})
}
