// Package crossnet holds the checks that span a job's nodes over the
// frontend network, net-connect and net-bandwidth, and the one cross-node
// phase that measures them. The checks are registered like every other
// (so that selection, --vigil-checks, skip, timing and --list-checks treat
// them alike), but their Run cannot do the work alone: the prolog runs the
// local checks first, then, when a cross-node check is selected and the
// job has two nodes or more, one Phase for all of them. The job's nodes
// meet (package rendezvous, MUNGE-sealed), each serves a small measurement
// endpoint on its node address, measures its links of the plan (package
// judge), the coordinator judges them (judge.Decide) and tells each
// node its own outcome, and each node acts on itself only.
// docs/prolog.md ("Across nodes") describes it.
package crossnet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/crossnet/judge"
	"github.com/vigil-hpc/vigil/rendezvous"
)

// Check names (the same as judge's).
const (
	// Connect is net-connect: every node reaches its peers (TCP connect
	// and round-trip time).
	Connect = judge.CheckConnect
	// Bandwidth is net-bandwidth: point-to-point TCP throughput.
	Bandwidth = judge.CheckBandwidth
)

// The unknown outcomes of the phase are the scope's own
// (benchmarks.CrossNodeReasons); the fail reasons are judge's
// (NetUnreachable, NetLatencyHigh, NetBandwidthLow).

// Defaults of [checks.net-connect] and [checks.net-bandwidth].
const (
	// DefaultPort is the rendezvous port: below 1024, so that only root
	// (the prologs) can bind it, never a user's process first.
	DefaultPort = 742
	// DefaultMungeSocket is Slurm's (and MUNGE's) default socket.
	DefaultMungeSocket = "/var/run/munge/munge.socket.2"
)

// PortWarning says why a rendezvous or data port of 1024 or more is a
// risk ("" when both are below 1024): any user's process can bind it
// before the prolog does, and the job's meeting then ends unknown (a
// squatter's answers carry no valid seal), on every job until it lets go.
// Each warning names its key ([checks.net-connect] port or data_port).
func (s ConnectSettings) PortWarning() string {
	ws := s.ConfigWarnings()
	for i, w := range ws {
		ws[i] = "[checks.net-connect] " + w
	}
	return strings.Join(ws, "; ")
}

// ConfigWarnings are the port warnings of PortWarning, one for each of
// port and data_port that is 1024 or more (benchmarks.ConfigWarner:
// vigil-prolog --check-config prints them).
func (s ConnectSettings) ConfigWarnings() []string {
	var ws []string
	if s.Port >= 1024 {
		ws = append(ws, fmt.Sprintf("port = %d is 1024 or above: any user's process can bind it before the prolog, which leaves the cross-node checks unknown; use a port below 1024, which only root can bind (default %d)", s.Port, DefaultPort))
	}
	if s.DataPort >= 1024 {
		ws = append(ws, fmt.Sprintf("data_port = %d is 1024 or above: any user's process can bind it before the prolog, which leaves the cross-node checks unknown; use 0 (any free port, announced in the sealed roster) or a port below 1024", s.DataPort))
	}
	return ws
}

// ConnectSettings are [checks.net-connect]; they also shape the phase as a
// whole (ports, MUNGE, join deadline, plan), whichever checks it runs.
type ConnectSettings struct {
	// Port is the rendezvous' TCP port, the same on every node.
	Port int `toml:"port"`
	// DataPort is the measurement endpoint's TCP port; 0 means any free
	// port, announced to the others in the (sealed) roster.
	DataPort int `toml:"data_port"`
	// MungeSocket is munged's socket; "" means the socket= of slurm.conf's
	// AuthInfo, else DefaultMungeSocket.
	MungeSocket string `toml:"munge_socket"`
	// Join is how long the coordinator waits for the others' prologs.
	Join time.Duration `toml:"join"`
	// ConnectTimeout bounds one TCP connect.
	ConnectTimeout time.Duration `toml:"connect_timeout"`
	// Tries is how many connects a direction of a link gets before it
	// counts as failed.
	Tries int `toml:"tries"`
	// Pings is how many round trips are timed per link (the best counts).
	Pings int `toml:"pings"`
	// Partners is how many random peers each node is paired with beyond
	// its ring neighbours.
	Partners int `toml:"partners"`
	// Fallbacks is how many fallback coordinators (the next nodes in
	// sorted order) a node tries when it cannot meet the one before, so
	// that a dead coordinator blinds nobody; each waits Join/2.
	Fallbacks int `toml:"fallbacks"`
}

// Validate reports out-of-range settings.
func (s *ConnectSettings) Validate() error {
	switch {
	case s.Port < 1 || s.Port > 65535:
		return benchmarks.BadSetting("port", "%d: want 1 to 65535", s.Port)
	case s.DataPort < 0 || s.DataPort > 65535 || s.DataPort == s.Port:
		return benchmarks.BadSetting("data_port", "%d: want 0 (any free port) or 1 to 65535, not port", s.DataPort)
	case s.Join < time.Second || s.Join > 10*time.Minute:
		return benchmarks.BadSetting("join", "%v: want 1s to 10m", s.Join)
	case s.ConnectTimeout < 10*time.Millisecond || s.ConnectTimeout > time.Minute:
		return benchmarks.BadSetting("connect_timeout", "%v: want 10ms to 1m", s.ConnectTimeout)
	case s.Tries < 1 || s.Tries > 10:
		return benchmarks.BadSetting("tries", "%d: want 1 to 10", s.Tries)
	case s.Pings < 1 || s.Pings > 1000:
		return benchmarks.BadSetting("pings", "%d: want 1 to 1000", s.Pings)
	case s.Partners < 0 || s.Partners > 16:
		return benchmarks.BadSetting("partners", "%d: want 0 to 16", s.Partners)
	case s.Fallbacks < 0 || s.Fallbacks > rendezvous.MaxFallbacks:
		return benchmarks.BadSetting("fallbacks", "%d: want 0 to %d", s.Fallbacks, rendezvous.MaxFallbacks)
	}
	return nil
}

// BandwidthSettings are [checks.net-bandwidth].
type BandwidthSettings struct {
	// SizeMiB is the most each direction of a link sends, in MiB.
	SizeMiB int `toml:"size_mib"`
	// Duration bounds one direction's transfer: it stops after this long
	// and counts what arrived.
	Duration time.Duration `toml:"duration"`
	// SlowFraction: a node is slow when its median throughput is below
	// this fraction of the job's (and most of its links are below it).
	SlowFraction float64 `toml:"slow_fraction"`
}

// Validate reports out-of-range settings.
func (s *BandwidthSettings) Validate() error {
	switch {
	case s.SizeMiB < 1 || s.SizeMiB > 4096:
		return benchmarks.BadSetting("size_mib", "%d: want 1 to 4096", s.SizeMiB)
	case s.Duration < 100*time.Millisecond || s.Duration > time.Minute:
		return benchmarks.BadSetting("duration", "%v: want 100ms to 1m", s.Duration)
	case !(s.SlowFraction > 0 && s.SlowFraction < 1):
		return benchmarks.BadSetting("slow_fraction", "%v: want more than 0 and less than 1", s.SlowFraction)
	}
	return nil
}

// check is one cross-node check's registration: its descriptor, whose
// reasons are its own fail tokens (judge's culprits) and the phase's.
type check struct{ desc benchmarks.Descriptor }

// newCheck returns the cross-node check d describes: vendor neutral, in
// the default suite, run by the phase in the prolog itself.
func newCheck(d benchmarks.Descriptor) *check {
	d.Vendor, d.Scope, d.Default = benchmarks.VendorNone, benchmarks.ScopeCrossNode, true
	d.Reasons = append(d.Reasons, benchmarks.CrossNodeReasons()...)
	return &check{desc: d}
}

func init() {
	benchmarks.Register(newCheck(benchmarks.Descriptor{Name: Connect, Kind: benchmarks.KindHealth,
		Description: "TCP connect and round-trip time between the job's nodes (prolog, across nodes)",
		Settings:    func() any { return DefaultConnect() },
		Reasons: []string{judge.ReasonUnreachable, judge.ReasonLatencyHigh, judge.ReasonIsolated,
			judge.ReasonPairCutOff}}))
	benchmarks.Register(newCheck(benchmarks.Descriptor{Name: Bandwidth, Kind: benchmarks.KindPerf,
		Description: "TCP throughput between the job's nodes against the job's median (prolog, across nodes)",
		Settings:    func() any { return DefaultBandwidth() },
		Reasons:     []string{judge.ReasonBandwidthLow}}))
}

// DefaultConnect returns the shipped [checks.net-connect].
func DefaultConnect() *ConnectSettings {
	return &ConnectSettings{Port: DefaultPort, Join: 10 * time.Second, ConnectTimeout: 2 * time.Second,
		Tries: 2, Pings: 5, Partners: judge.DefaultPartners, Fallbacks: 1}
}

// DefaultBandwidth returns the shipped [checks.net-bandwidth].
func DefaultBandwidth() *BandwidthSettings {
	return &BandwidthSettings{SizeMiB: 64, Duration: 2 * time.Second, SlowFraction: 0.5}
}

// Spec describes the check.
func (c *check) Spec() benchmarks.Descriptor { return c.desc }

// Run is what the check does when run on its own (vigil-prolog --checks
// net-connect outside a job's prolog): nothing, unknown. The prolog runs
// the cross-node checks in its Phase instead.
func (c *check) Run(context.Context, *benchmarks.Env) benchmarks.Result {
	return benchmarks.Result{Check: c.desc.Name, Status: benchmarks.StatusUnknown, Reason: benchmarks.ReasonOutsideProlog,
		Message: c.desc.Name + " runs only in the prolog's cross-node phase, with the job's other nodes", Attempts: 1}
}
