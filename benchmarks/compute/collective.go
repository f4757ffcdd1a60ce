package compute

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ReasonCollectiveWrongResult: a collective delivered wrong data (fail).
const ReasonCollectiveWrongResult = "CollectiveWrongResult"

// CollectiveSettings are the settings of [checks.allreduce], [checks.allgather],
// [checks.alltoall] and [checks.multi-allreduce].
type CollectiveSettings struct {
	Libraries
	// Bytes is each rank's buffer size (all-gather: each rank's contribution).
	Bytes int `toml:"bytes"`
	// VerifyBytes is the buffer size of the verification run.
	VerifyBytes int `toml:"verify_bytes"`
	// Warmup and Iters are untimed and timed operations.
	Warmup int `toml:"warmup"`
	Iters  int `toml:"iters"`
	// Concurrent is how many all-reduces run at once (multi-allreduce only).
	Concurrent int `toml:"concurrent"`
	// Thresholds: model → "busbw_gbps" → least bus bandwidth in GB/s.
	Thresholds Thresholds `toml:"thresholds"`
}

// collCheck is one collective check.
type collCheck struct {
	name       string
	op         CollOp
	concurrent int
	thresholds Thresholds
	open       Opener
}

func (c *collCheck) Name() string        { return c.name }
func (*collCheck) Kind() benchmarks.Kind { return benchmarks.KindPerf }
func (*collCheck) Isolated() bool        { return true }

// Vendor says which devices the check is about.
func (*collCheck) Vendor() benchmarks.Vendor { return benchmarks.VendorNVIDIA }

// Description says what the check does, for --list-checks.
func (c *collCheck) Description() string {
	if c.multi() {
		return fmt.Sprintf("%d NCCL all-reduces at once, each on its own communicator: aggregate bus bandwidth", c.concurrent)
	}
	return "NCCL " + c.label() + " bus bandwidth over the node's GPUs, result verified"
}

func (c *collCheck) Defaults() any { s := c.defaults(); return &s }
func (c *collCheck) reasonPrefix() string {
	return map[CollOp]string{AllReduce: "AllReduce", AllGather: "AllGather", AllToAll: "AllToAll"}[c.op]
}
func (c *collCheck) label() string {
	return map[CollOp]string{AllReduce: "all-reduce", AllGather: "all-gather", AllToAll: "all-to-all"}[c.op]
}
func (c *collCheck) multi() bool { return c.concurrent > 1 }

func (c *collCheck) defaults() CollectiveSettings {
	return CollectiveSettings{
		Libraries:   DefaultLibraries(),
		Bytes:       256 << 20,
		VerifyBytes: 4 << 20,
		Warmup:      5,
		Iters:       20,
		Concurrent:  c.concurrent,
		Thresholds:  c.thresholds.Merge(nil),
	}
}

func (c *collCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := c.defaults()
	if err := devcheck.DecodeThresholds(env, &s, &s.Thresholds, c.thresholds); err != nil {
		return unknown(c.Name(), ReasonBadSettings, "%v", err)
	}
	if err := s.Validate(); err != nil {
		return unknown(c.Name(), ReasonBadSettings, "%v", err)
	}
	if !c.multi() {
		s.Concurrent = 1
	}
	node, err := openNode(ctx, c.open, s.Libraries, envDevices(env))
	if err != nil {
		return classify(c.Name(), err)
	}
	defer node.Close()
	devs := node.Devices()
	if len(devs) < 2 {
		return unknown(c.Name(), ReasonSingleDevice, "%d device: a collective needs at least 2", len(devs))
	}
	idx := make([]int, len(devs))
	for i, d := range devs {
		idx[i] = d.Index
	}
	n := len(devs)
	count := func(bytes int) int {
		k := bytes / 4
		if c.op == AllToAll {
			k -= k % n // equal chunks to every peer
		}
		return max(k, n)
	}
	r := &result{check: c.Name()}

	// Verification run: small buffers, read back, compared exactly.
	vin := devcheck.CollInputs(n, count(s.VerifyBytes))
	var vout CollectiveOutput
	err = devcheck.Run(ctx, func() (err error) {
		vout, err = node.Collective(ctx, CollectiveInput{Op: c.op, Devices: idx, Count: count(s.VerifyBytes), Iters: 1, Concurrent: 1, Inputs: vin})
		return err
	})
	if err != nil {
		r.deviceError("node", err)
		return r.done("")
	}
	if err := devcheck.VerifyCollective(c.op, devNames(idx), vin, vout.Outputs); err != nil {
		r.fail(ReasonCollectiveWrongResult, "", "%s delivered wrong data: %v", c.label(), err)
		return r.done("")
	}

	// Timed run.
	in := CollectiveInput{Op: c.op, Devices: idx, Count: count(s.Bytes), Warmup: s.Warmup, Iters: s.Iters, Concurrent: s.Concurrent}
	var out CollectiveOutput
	if err := devcheck.Run(ctx, func() (err error) { out, err = node.Collective(ctx, in); return err }); err != nil {
		r.deviceError("node", err)
		return r.done("")
	}
	if out.Seconds <= 0 {
		r.deviceError("node", errors.New("collective reported no time"))
		return r.done("")
	}
	size := devcheck.SizeBytes(c.op, in.Count, n) * float64(s.Concurrent)
	alg := devcheck.AlgBW(size, out.Seconds)
	bus := alg * devcheck.BusFactor(c.op, n)
	model := devs[0].Name
	r.values = append(r.values, benchmarks.Value{Name: "algbw_gbps", Value: devcheck.Round(alg), Unit: "GB/s", Status: benchmarks.StatusPass})
	m := devcheck.Metric{Name: "busbw_gbps", Key: "busbw_gbps", Unit: "GB/s", Label: fmt.Sprintf("%s bus bandwidth over %d devices", c.label(), n)}
	vals, fs := devcheck.Evaluate(m, []devcheck.Reading{{Device: "", Model: model, Value: bus}}, s.Thresholds, Peers{})
	for i := range fs {
		fs[i].Message = fmt.Sprintf("%s %.4g GB/s, limit >= %.4g", m.Label, bus, *vals[0].Threshold)
	}
	r.add(m, c.reasonPrefix(), vals, fs)
	if out.Library != "" {
		r.note("NCCL %s", out.Library)
	}
	what := c.label()
	if s.Concurrent > 1 {
		what = fmt.Sprintf("%d concurrent %ss", s.Concurrent, c.label())
	}
	return r.done(fmt.Sprintf("%s over %d devices: %.4g GB/s bus bandwidth, results verified", what, n, bus))
}

// Validate reports out-of-range settings, naming the key.
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
	case s.Concurrent < 1:
		return benchmarks.BadSetting("concurrent", "%d: want 1 or more", s.Concurrent)
	}
	return nil
}
