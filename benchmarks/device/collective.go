package device

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// CollectiveSettings are the settings every vendor's collective checks
// have; the vendor's settings type embeds them next to its own keys.
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

// DefaultCollectiveSettings are the shipped collective settings with the
// vendor's shipped thresholds th: 256 MiB per rank timed 20 times after 5
// untimed, verified on 4 MiB.
func DefaultCollectiveSettings(th Thresholds) CollectiveSettings {
	return CollectiveSettings{Bytes: 256 << 20, VerifyBytes: 4 << 20, Warmup: 5, Iters: 20, Thresholds: th.Merge(nil)}
}

// ValidateCollective reports out-of-range collective settings, naming the key.
func ValidateCollective(s *CollectiveSettings) error {
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

// Label is how messages name op ("all-reduce").
func Label(op CollOp) string {
	return map[CollOp]string{AllReduce: "all-reduce", AllGather: "all-gather", AllToAll: "all-to-all"}[op]
}

// CollectiveSpec is one vendor's check of one collective.
type CollectiveSpec[S any] struct {
	Common[S]
	// Op is the collective measured.
	Op CollOp
	// Collective returns the settings' collective part.
	Collective func(*S) *CollectiveSettings
	// Concurrent returns how many collectives run at once (nil: one).
	Concurrent func(*S) int
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

// collCheck measures one collective over the node's devices, verified.
type collCheck[S any, P settings[S]] struct {
	check[S, P]
	spec CollectiveSpec[S]
}

// NewCollective returns the collective check that spec describes.
func NewCollective[S any, P settings[S]](spec CollectiveSpec[S]) benchmarks.Check {
	th := func(s *S) *Thresholds { return &spec.Collective(s).Thresholds }
	return &collCheck[S, P]{check: newCheck[S, P](spec.Common, th, spec.WrongResult, spec.Slow, ReasonSingleDevice), spec: spec}
}

func (c *collCheck[S, P]) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s, node, res := c.start(ctx, env)
	if res != nil {
		return *res
	}
	defer node.Close()
	v, cs, op := c.Common.Vendor, c.spec.Collective(s), c.spec.Op
	concurrent := 1
	if c.spec.Concurrent != nil {
		concurrent = c.spec.Concurrent(s)
	}
	devs := node.Devices()
	n := len(devs)
	if n < 2 {
		return benchmarks.Result{Check: c.Common.Name, Status: benchmarks.StatusUnknown, Reason: ReasonSingleDevice,
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
func (c *collCheck[S, P]) count(bytes, n int) int {
	k := bytes / 4
	if c.spec.Op == AllToAll {
		k -= k % n // equal chunks to every peer
	}
	return max(k, n)
}

// verify runs the collective once on small buffers, reads them back and
// compares them exactly; it returns false when the check must stop.
func (c *collCheck[S, P]) verify(ctx context.Context, t *devcheck.Tally, node Node, idx []int, count int) bool {
	v, op := c.Common.Vendor, c.spec.Op
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
func (c *collCheck[S, P]) evaluate(t *devcheck.Tally, cs *CollectiveSettings, in CollectiveInput, out CollectiveOutput, devs []Info) float64 {
	n := len(devs)
	size := devcheck.SizeBytes(in.Op, in.Count, n) * float64(in.Concurrent)
	alg := devcheck.AlgBW(size, out.Seconds)
	bus := alg * devcheck.BusFactor(in.Op, n)
	t.Value("", "algbw_gbps", devcheck.Round(alg), "GB/s", nil, "", benchmarks.StatusPass)
	m := devcheck.Metric{Name: "busbw_gbps", Key: "busbw_gbps", Unit: "GB/s",
		Label: fmt.Sprintf("%s bus bandwidth over %s", Label(in.Op), c.Common.Vendor.Count(n))}
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
