package device

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// CollectiveSettings are the settings of a collective check
// ([checks.npu-allreduce]); a check that can run several at once has
// ConcurrentCollectiveSettings.
type CollectiveSettings struct {
	// Bytes is each rank's buffer size (all-gather: each rank's contribution).
	Bytes int `toml:"bytes"`
	// VerifyBytes is the buffer size of the verification run.
	VerifyBytes int `toml:"verify_bytes"`
	// Warmup and Iters are untimed and timed operations.
	Warmup int `toml:"warmup"`
	Iters  int `toml:"iters"`
	// Thresholds: model → "busbw_gbps" → least bus bandwidth in GB/s.
	Thresholds Thresholds `toml:"thresholds"`
}

// ConcurrentCollectiveSettings are the settings of a collective check
// with the concurrent key ([checks.allreduce], [checks.multi-allreduce]).
type ConcurrentCollectiveSettings struct {
	CollectiveSettings
	// Concurrent is how many all-reduces run at once (where the check's
	// CollectiveSpec.Concurrent is above 1).
	Concurrent int `toml:"concurrent"`
}

// collSettings are a collective check's settings: CollectiveSettings or
// ConcurrentCollectiveSettings.
type collSettings interface {
	settings
	collective() *CollectiveSettings
	concurrent() int
}

func (s *CollectiveSettings) thresholds() *Thresholds         { return &s.Thresholds }
func (s *CollectiveSettings) collective() *CollectiveSettings { return s }
func (s *CollectiveSettings) concurrent() int                 { return 1 }
func (s *ConcurrentCollectiveSettings) concurrent() int       { return s.Concurrent }

// Validate reports out-of-range collective settings, naming the key.
func (s *CollectiveSettings) Validate() error {
	switch {
	case s.Bytes < 4096:
		return benchmarks.BadSetting("bytes", "%d: want 4096 or more", s.Bytes)
	case s.VerifyBytes < 4096:
		return benchmarks.BadSetting("verify_bytes", "%d: want 4096 or more", s.VerifyBytes)
	case s.Iters < 1:
		return benchmarks.BadSetting("iters", "%d: want 1 or more", s.Iters)
	case s.Warmup < 0:
		return benchmarks.BadSetting("warmup", "%d: want 0 or more", s.Warmup)
	}
	return nil
}

// Validate reports out-of-range settings, naming the key.
func (s *ConcurrentCollectiveSettings) Validate() error {
	if err := s.CollectiveSettings.Validate(); err != nil {
		return err
	}
	if s.Concurrent < 1 {
		return benchmarks.BadSetting("concurrent", "%d: want 1 or more", s.Concurrent)
	}
	return nil
}

// Label is how messages name op ("all-reduce").
func Label(op CollOp) string {
	return map[CollOp]string{AllReduce: "all-reduce", AllGather: "all-gather", AllToAll: "all-to-all"}[op]
}

// CollectiveSpec is one vendor's check of one collective.
type CollectiveSpec struct {
	Common
	// Op is the collective measured.
	Op CollOp
	// Concurrent is how many collectives run at once: 0 and 1 run one, and
	// above 1 the settings' concurrent key says how many, this number by
	// default. With 0 the settings have no concurrent key; with 1 it is
	// there, 1, and not read.
	Concurrent int
	// WrongResult is the reason token of wrong data.
	WrongResult string
	// Slow is the threshold reason ("AllReduceBelowThreshold"); the bus
	// bandwidth is not compared with peers.
	Slow string
	// LimitMessage, when true, words a bandwidth below the floor as
	// "LABEL X GB/s, limit >= Y" rather than devcheck.Evaluate's message.
	LimitMessage bool
	// LibraryNote formats the collective library file in the message.
	LibraryNote string
}

// DefaultCollectiveSettings are the shipped collective settings with the
// vendor's shipped thresholds th: 256 MiB per rank timed 20 times after 5
// untimed, verified on 4 MiB.
func DefaultCollectiveSettings(th Thresholds) CollectiveSettings {
	return CollectiveSettings{Bytes: 256 << 20, VerifyBytes: 4 << 20, Warmup: 5, Iters: 20, Thresholds: th.Merge(nil)}
}

// settings are the check's shipped settings (DefaultCollectiveSettings).
func (spec CollectiveSpec) settings() collSettings {
	c := DefaultCollectiveSettings(spec.Thresholds)
	if spec.Concurrent > 0 {
		return &ConcurrentCollectiveSettings{CollectiveSettings: c, Concurrent: spec.Concurrent}
	}
	return &c
}

// collCheck measures one collective over the node's devices, verified.
type collCheck struct {
	check
	spec CollectiveSpec
}

// NewCollective returns the collective check that spec describes.
func NewCollective(spec CollectiveSpec) benchmarks.Check {
	defaults := func() settings { return spec.settings() }
	return &collCheck{check: newCheck(spec.Common, defaults, spec.WrongResult, spec.Slow, ReasonSingleDevice), spec: spec}
}

func (c *collCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := c.spec.settings()
	node, res := c.start(ctx, env, s)
	if res != nil {
		return *res
	}
	defer node.Close()
	v, cs, op := c.Vendor, s.collective(), c.spec.Op
	concurrent := 1
	if c.spec.Concurrent > 1 {
		concurrent = s.concurrent()
	}
	devs := node.Devices()
	n := len(devs)
	if n < 2 {
		return benchmarks.Result{Check: c.Name, Status: benchmarks.StatusUnknown, Reason: ReasonSingleDevice,
			Message: fmt.Sprintf("%d %s: a collective needs at least 2", n, devcheck.Plural(n, v.Noun))}
	}
	idx := make([]int, n)
	for i, d := range devs {
		idx[i] = d.Index
	}
	t := c.tally()
	if !c.verify(ctx, t, node, idx, c.count(cs.VerifyBytes, n)) {
		return t.Result("")
	}
	in := CollectiveInput{Op: op, Devices: idx, Count: c.count(cs.Bytes, n), Warmup: cs.Warmup, Iters: cs.Iters, Concurrent: concurrent}
	var out CollectiveOutput
	err := devcheck.Run(ctx, func() (err error) { out, err = node.Collective(ctx, in); return err })
	if err == nil && out.Seconds <= 0 {
		err = errors.New("collective reported no time")
	}
	if err != nil {
		v.record(t, v.NodeDevice, err)
		return t.Result("")
	}
	bus := c.evaluate(t, cs, in, out, devs)
	if out.Library != "" {
		t.Note(c.spec.LibraryNote, out.Library)
	}
	what := Label(op)
	if concurrent > 1 {
		what = fmt.Sprintf("%d concurrent %ss", concurrent, Label(op))
	}
	return t.Result(fmt.Sprintf("%s over %s: %.4g GB/s bus bandwidth, results verified", what, v.Count(n), bus))
}

// count is the float32 elements of each rank's buffer of bytes over n ranks.
func (c *collCheck) count(bytes, n int) int {
	k := bytes / 4
	if c.spec.Op == AllToAll {
		k -= k % n // equal chunks to every peer
	}
	return max(k, n)
}

// verify runs the collective once on small buffers, reads them back and
// compares them exactly; it returns false when the check must stop.
func (c *collCheck) verify(ctx context.Context, t *devcheck.Tally, node Node, idx []int, count int) bool {
	v, op := c.Vendor, c.spec.Op
	vin := devcheck.CollInputs(len(idx), count)
	var vout CollectiveOutput
	err := devcheck.Run(ctx, func() (err error) {
		vout, err = node.Collective(ctx, CollectiveInput{Op: op, Devices: idx, Count: count, Iters: 1, Concurrent: 1, Inputs: vin})
		return err
	})
	if err != nil {
		v.record(t, v.NodeDevice, err)
		return false
	}
	if err := devcheck.VerifyCollective(op, v.names(idx), vin, vout.Outputs); err != nil {
		t.Fail("", c.spec.WrongResult, "%s delivered wrong data: %v", Label(op), err)
		return false
	}
	return true
}

// evaluate records algbw and busbw (nccl-tests definitions) of the timed
// run and compares busbw with the model's floor; it returns busbw.
func (c *collCheck) evaluate(t *devcheck.Tally, cs *CollectiveSettings, in CollectiveInput, out CollectiveOutput, devs []Info) float64 {
	n := len(devs)
	size := devcheck.SizeBytes(in.Op, in.Count, n) * float64(in.Concurrent)
	alg := devcheck.AlgBW(size, out.Seconds)
	bus := alg * devcheck.BusFactor(in.Op, n)
	t.Value("", "algbw_gbps", devcheck.Round(alg), "GB/s", nil, "", benchmarks.StatusPass)
	m := devcheck.Metric{Name: "busbw_gbps", Key: "busbw_gbps", Unit: "GB/s",
		Label: fmt.Sprintf("%s bus bandwidth over %s", Label(in.Op), c.Vendor.Count(n))}
	vals, fs := devcheck.Evaluate(m, []devcheck.Reading{{Device: "", Model: devs[0].Name, Value: bus}}, cs.Thresholds, Peers{})
	t.Values = append(t.Values, vals...)
	for _, f := range fs {
		msg := f.Message
		if c.spec.LimitMessage {
			msg = fmt.Sprintf("%s %.4g GB/s, limit >= %.4g", m.Label, bus, *vals[0].Threshold)
		}
		t.Fail(f.Device, f.Reason(devcheck.Tokens{Limit: c.spec.Slow}), "%s", msg)
	}
	return bus
}
