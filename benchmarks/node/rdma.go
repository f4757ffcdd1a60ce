package node

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// Reasons of the rdma check.
const (
	// ReasonRDMAPortDown: a port expected active is not (state DOWN, INIT
	// or ARMED, or the physical link Polling, Disabled ...).
	ReasonRDMAPortDown = "RDMAPortDown"
	// ReasonRDMADeviceMissing: an expected device or port is not there.
	ReasonRDMADeviceMissing = "RDMADeviceMissing"
	// ReasonRDMARateLow: an active port runs below its least rate.
	ReasonRDMARateLow = "RDMARateLow"
	// ReasonRDMAPortErrors: an error counter grew beyond its limit since the
	// last run.
	ReasonRDMAPortErrors = "RDMAPortErrors"
	// ReasonRDMAUnreadable: /sys/class/infiniband could not be read (unknown).
	ReasonRDMAUnreadable = "RDMAUnreadable"
)

// rdmaSettings are the settings of [checks.rdma].
type rdmaSettings struct {
	// Root is prefixed to /sys and /proc (tests point it at a fixture tree).
	Root string `toml:"root"`
	// StateDir holds the counters of the last run (rdma.json).
	StateDir string `toml:"state_dir"`
	// ExpectActive are the ports that must be ACTIVE and LinkUp: patterns
	// of "dev" (every port of it) or "dev/port" in path.Match syntax
	// ("mlx5_*", "mlx5_0/1"). Empty: no port is required up.
	ExpectActive []string `toml:"expect_active"`
	// MinRateGbps is the least rate in Gb/s of every checked active port
	// (0: not checked). Checked ports are those ExpectActive names, or
	// every active port when it is empty.
	MinRateGbps float64 `toml:"min_rate_gbps"`
	// HCAMinRateGbps are least rates in Gb/s by the device's hca_type
	// ("MT4129" for ConnectX-7); the larger of it and MinRateGbps applies.
	HCAMinRateGbps map[string]float64 `toml:"hca_min_rate_gbps"`
	// CounterLimits are the most each counter may grow between two runs
	// (counter file name → count); a larger growth fails the port.
	CounterLimits map[string]uint64 `toml:"counter_limits"`
	// RequireGDR fails a node with active RDMA ports but no GPUDirect RDMA
	// peer-memory module. Off by default: the job's nodes are compared
	// instead (OddOneOut), and GPU nodes without RDMA are legitimate.
	RequireGDR bool `toml:"require_gdr"`
}

// defaultCounterLimits: a link that went down more than once between two
// jobs, or a stream of symbol or receive errors (a bad cable or
// transceiver), makes the node unfit; a stray error or one flap does not.
var defaultCounterLimits = map[string]uint64{
	"link_downed":     1,
	"symbol_error":    1000,
	"port_rcv_errors": 1000,
}

// Validate reports malformed patterns and out-of-range rates.
func (s *rdmaSettings) Validate() error {
	if s.StateDir == "" {
		return benchmarks.BadSetting("state_dir", `"": want a directory`)
	}
	for _, p := range s.ExpectActive {
		if _, err := path.Match(p, ""); err != nil || p == "" || strings.Count(p, "/") > 1 {
			return benchmarks.BadSetting("expect_active", "%q: want \"dev\" or \"dev/port\" (glob patterns allowed)", p)
		}
	}
	if s.MinRateGbps < 0 {
		return benchmarks.BadSetting("min_rate_gbps", "%g: want 0 or more", s.MinRateGbps)
	}
	for hca, r := range s.HCAMinRateGbps {
		if r < 0 {
			return benchmarks.BadSetting("hca_min_rate_gbps", "%g for %q: want 0 or more", r, hca)
		}
	}
	return nil
}

// rdma reads the node's RDMA ports and GPUDirect RDMA from sysfs.
type rdma struct{}

func init() { benchmarks.Register(&rdma{}) }

// Spec describes the check.
func (*rdma) Spec() benchmarks.Descriptor {
	return benchmarks.Descriptor{Name: "rdma", Kind: benchmarks.KindHealth, Vendor: benchmarks.VendorNone, Isolated: true, Default: true,
		Description: "RDMA ports (state, rate, error counters since the last run) and GPUDirect RDMA, from sysfs",
		Settings:    func() any { return defaultRdmaSettings() },
		Reasons: []string{ReasonRDMAPortDown, ReasonRDMADeviceMissing, ReasonRDMARateLow, ReasonRDMAPortErrors, ReasonRDMAUnreadable,
			ReasonGDRMissing, devcheck.ReasonStateLockBusy, devcheck.ReasonStateDirUnsafe, devcheck.ReasonStateDirUnusable}}
}

// defaultRdmaSettings returns the shipped settings of [checks.rdma].
func defaultRdmaSettings() *rdmaSettings {
	limits := map[string]uint64{}
	for k, v := range defaultCounterLimits {
		limits[k] = v
	}
	return &rdmaSettings{Root: "/", StateDir: "/var/lib/vigil", CounterLimits: limits, HCAMinRateGbps: map[string]float64{}}
}

func (c *rdma) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := defaultRdmaSettings()
	if err := loadSettings(env, s); err != nil {
		return devcheck.BadSettings(c.Spec().Name, err)
	}
	t := newTally(c.Spec().Name)
	ports, err := readRDMAPorts(s.Root)
	if err != nil {
		t.Unknown("", ReasonRDMAUnreadable, "%s: %v", ibClass, err)
		return t.Result("")
	}
	module := peerMemLoaded(s.Root)
	if len(ports) == 0 {
		if len(s.ExpectActive) > 0 {
			t.Fail("", ReasonRDMADeviceMissing, "no RDMA devices; expect_active names %s", strings.Join(s.ExpectActive, ", "))
		}
		return t.Result("no RDMA devices")
	}
	for _, p := range s.ExpectActive {
		if !anyMatch(ports, p) {
			t.Fail("", ReasonRDMADeviceMissing, "no RDMA port matches %q (ports: %s)", p, portNames(ports))
		}
	}
	var parts []benchmarks.Component
	for _, p := range ports {
		c.port(t, s, p)
		parts = append(parts, p.Component())
	}
	c.counters(ctx, t, s, ports, env != nil && env.DryRun)
	sum := summarise(ports, module)
	gdr := 0.0
	if sum.GDR {
		gdr = 1
	}
	t.Value("", "gdr", gdr, "", nil, "", benchmarks.StatusPass)
	switch {
	case !sum.GDR && s.RequireGDR && sum.ActivePorts > 0:
		t.Fail("", ReasonGDRMissing, "no GPUDirect RDMA: neither %s is loaded", strings.Join(peerMemModules, " nor "))
	case !sum.GDR:
		t.Note("no GPUDirect RDMA (%s not loaded)", peerMemModules[0])
	}
	msg := fmt.Sprintf("%d RDMA ports on %d devices, %d active", sum.Ports, sum.Devices, sum.ActivePorts)
	if sum.ActivePorts > 0 {
		msg += fmt.Sprintf(" (slowest %g Gb/s)", sum.MinRateGbps)
	}
	if sum.GDR {
		msg += ", GPUDirect RDMA (" + module + ")"
	}
	r := t.Result(msg)
	r.Components = parts
	return r
}

// port records one port's state and rate and judges them.
func (*rdma) port(t *devcheck.Tally, s *rdmaSettings, p rdmaPort) {
	name := p.Name()
	expected := expectedActive(s.ExpectActive, p)
	active, st := 0.0, benchmarks.StatusPass
	if p.Active() {
		active = 1
	} else if expected {
		st = benchmarks.StatusFail
		t.Fail(name, ReasonRDMAPortDown, "%s %s (%s), expected active", name, p.State, p.PhysState)
	}
	t.Value(name, "active", active, "", nil, "", st)
	if !p.Active() {
		return
	}
	limit := s.MinRateGbps
	if r := s.HCAMinRateGbps[p.HCA]; p.HCA != "" && r > limit {
		limit = r
	}
	if limit == 0 || !(expected || len(s.ExpectActive) == 0) {
		t.Value(name, "rate_gbps", p.RateGbps, "Gb/s", nil, "", benchmarks.StatusPass)
		return
	}
	st = benchmarks.StatusPass
	if p.RateGbps < limit {
		st = benchmarks.StatusFail
		t.Fail(name, ReasonRDMARateLow, "%s %s at %g Gb/s < %g", name, p.LinkLayer, p.RateGbps, limit)
	}
	t.Value(name, "rate_gbps", p.RateGbps, "Gb/s", &limit, ">=", st)
}

// expectedActive reports whether a pattern of want names port p.
func expectedActive(want []string, p rdmaPort) bool {
	for _, w := range want {
		dev, port, hasPort := strings.Cut(w, "/")
		if ok, _ := path.Match(dev, p.Device); !ok {
			continue
		}
		if !hasPort {
			return true
		}
		if ok, _ := path.Match(port, fmt.Sprint(p.Port)); ok {
			return true
		}
	}
	return false
}

func anyMatch(ports []rdmaPort, pattern string) bool {
	for _, p := range ports {
		if expectedActive([]string{pattern}, p) {
			return true
		}
	}
	return false
}

func portNames(ports []rdmaPort) string {
	names := make([]string, len(ports))
	for i, p := range ports {
		names[i] = p.Name()
	}
	return strings.Join(names, ", ")
}

// rdmaState is what the rdma check remembers between runs: the counters
// it limits, per port, and the boot they belong to.
type rdmaState struct {
	BootID   string                       `json:"boot_id"`
	Counters map[string]map[string]uint64 `json:"counters"`
}

// counters compares the limited counters with the last run's and saves
// them (not in a dry run). The first run, a new boot or a counter that went
// down (driver reloaded) only sets the baseline.
func (*rdma) counters(ctx context.Context, t *devcheck.Tally, s *rdmaSettings, ports []rdmaPort, dryRun bool) {
	if len(s.CounterLimits) == 0 {
		return
	}
	bootID, _ := readTrim(filepath.Join(s.Root, "proc", "sys", "kernel", "random", "boot_id"))
	if !dryRun {
		unlock, err := devcheck.LockState(ctx, s.StateDir, "rdma.lock")
		if err != nil {
			// Without the lock the counters cannot be compared with the
			// last run's: another run is between its read and its write.
			t.Unknown("", devcheck.LockReason(err), "counter state lock: %v; counters not compared", err)
			return
		}
		defer unlock()
	}
	file := filepath.Join(s.StateDir, "rdma.json")
	prev, err := devcheck.LoadState[rdmaState](file)
	if err != nil {
		t.Note("counter state unreadable, baseline taken: %v", err)
	}
	if prev.BootID != bootID {
		prev.Counters = nil
	}
	next := rdmaState{BootID: bootID, Counters: map[string]map[string]uint64{}}
	names := make([]string, 0, len(s.CounterLimits))
	for n := range s.CounterLimits {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, p := range ports {
		next.Counters[p.Name()] = map[string]uint64{}
		for _, n := range names {
			cur, ok := p.Counters[n]
			if !ok {
				continue
			}
			next.Counters[p.Name()][n] = cur
			old, seen := prev.Counters[p.Name()][n]
			if !seen || cur < old {
				continue
			}
			limit, st := float64(s.CounterLimits[n]), benchmarks.StatusPass
			if cur-old > s.CounterLimits[n] {
				st = benchmarks.StatusFail
				t.Fail(p.Name(), ReasonRDMAPortErrors, "%s %s grew by %d since the last run (limit %d)", p.Name(), n, cur-old, s.CounterLimits[n])
			}
			t.Value(p.Name(), n+"_increase", float64(cur-old), "count", &limit, "<=", st)
		}
	}
	if dryRun {
		return
	}
	if err := devcheck.SaveState(file, next); err != nil {
		t.Note("counter state not saved: %v", err)
	}
}
