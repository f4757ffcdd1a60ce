package compute

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// ReasonCollectiveWrongResult: a collective delivered wrong data (fail).
const ReasonCollectiveWrongResult = "CollectiveWrongResult"

// Bandwidths with the nccl-tests definitions (PERFORMANCE.md in
// NVIDIA/nccl-tests): S is the size nccl-tests prints for the operation,
// t the time of one operation.
//
//	algbw = S / t
//	all-reduce:             busbw = algbw × 2(n−1)/n   (S: each rank's buffer)
//	all-gather, all-to-all: busbw = algbw × (n−1)/n    (S: the gathered buffer;
//	                                                    each rank's send buffer)

// algBW returns algbw in GB/s (1e9 B/s) for size bytes moved in seconds.
func algBW(bytes float64, seconds float64) float64 { return bytes / seconds / 1e9 }

// busFactor is busbw/algbw for op over n ranks.
func busFactor(op CollOp, n int) float64 {
	if n < 2 {
		return 0
	}
	f := float64(n-1) / float64(n)
	if op == AllReduce {
		return 2 * f
	}
	return f
}

// sizeBytes is the nccl-tests size S of op for count float32 elements per
// rank (CollectiveInput.Count) over n ranks.
func sizeBytes(op CollOp, count, n int) float64 {
	if op == AllGather {
		return float64(count) * 4 * float64(n)
	}
	return float64(count) * 4
}

// collInputs makes the per-rank send buffers of a verification run: small
// integers so that sums over up to 256 ranks are exact in float32.
func collInputs(n, count int) [][]float32 {
	in := make([][]float32, n)
	for r := range in {
		in[r] = make([]float32, count)
		for i := range in[r] {
			in[r][i] = float32((i*7 + r*13 + 1) % 61)
		}
	}
	return in
}

// collExpected is what each rank must receive for inputs in.
func collExpected(op CollOp, in [][]float32) [][]float32 {
	n := len(in)
	count := len(in[0])
	out := make([][]float32, n)
	switch op {
	case AllReduce:
		sum := make([]float32, count)
		for _, b := range in {
			for i, v := range b {
				sum[i] += v
			}
		}
		for r := range out {
			out[r] = sum
		}
	case AllGather:
		all := make([]float32, 0, n*count)
		for _, b := range in {
			all = append(all, b...)
		}
		for r := range out {
			out[r] = all
		}
	case AllToAll:
		c := count / n
		for r := range out {
			out[r] = make([]float32, 0, count)
			for j := 0; j < n; j++ {
				out[r] = append(out[r], in[j][r*c:(r+1)*c]...)
			}
		}
	}
	return out
}

// verifyCollective compares the outputs with collExpected.
func verifyCollective(op CollOp, devs []int, in, got [][]float32) error {
	want := collExpected(op, in)
	if len(got) != len(want) {
		return fmt.Errorf("%d output buffers, want %d", len(got), len(want))
	}
	for r := range want {
		if len(got[r]) != len(want[r]) {
			return fmt.Errorf("%s: %d elements received, want %d", devName(devs[r]), len(got[r]), len(want[r]))
		}
		bad, first := 0, -1
		for i := range want[r] {
			if got[r][i] != want[r][i] {
				if first < 0 {
					first = i
				}
				bad++
			}
		}
		if bad > 0 {
			return fmt.Errorf("%s: %d of %d elements wrong, first [%d] = %g, want %g", devName(devs[r]), bad, len(want[r]), first, got[r][first], want[r][first])
		}
	}
	return nil
}

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
func (c *collCheck) Defaults() any       { s := c.defaults(); return &s }
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
		Thresholds:  c.thresholds.merge(nil),
	}
}

func (c *collCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := c.defaults()
	s.Thresholds = nil
	if err := decode(env, &s); err != nil {
		return unknown(c.Name(), ReasonBadSettings, "%v", err)
	}
	s.Thresholds = c.thresholds.merge(s.Thresholds)
	if s.Bytes < 4096 || s.VerifyBytes < 4096 || s.Iters < 1 || s.Warmup < 0 || s.Concurrent < 1 {
		return unknown(c.Name(), ReasonBadSettings, "need bytes and verify_bytes >= 4096, iters >= 1, warmup >= 0, concurrent >= 1")
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
	vin := collInputs(n, count(s.VerifyBytes))
	var vout CollectiveOutput
	err = run(ctx, func() (err error) {
		vout, err = node.Collective(ctx, CollectiveInput{Op: c.op, Devices: idx, Count: count(s.VerifyBytes), Iters: 1, Concurrent: 1, Inputs: vin})
		return err
	})
	if err != nil {
		r.deviceError("node", err)
		return r.done("")
	}
	if err := verifyCollective(c.op, idx, vin, vout.Outputs); err != nil {
		r.fail(ReasonCollectiveWrongResult, "", "%s delivered wrong data: %v", c.label(), err)
		return r.done("")
	}

	// Timed run.
	in := CollectiveInput{Op: c.op, Devices: idx, Count: count(s.Bytes), Warmup: s.Warmup, Iters: s.Iters, Concurrent: s.Concurrent}
	var out CollectiveOutput
	if err := run(ctx, func() (err error) { out, err = node.Collective(ctx, in); return err }); err != nil {
		r.deviceError("node", err)
		return r.done("")
	}
	if out.Seconds <= 0 {
		r.deviceError("node", errors.New("collective reported no time"))
		return r.done("")
	}
	size := sizeBytes(c.op, in.Count, n) * float64(s.Concurrent)
	alg := algBW(size, out.Seconds)
	bus := alg * busFactor(c.op, n)
	model := devs[0].Name
	r.values = append(r.values, benchmarks.Value{Name: "algbw_gbps", Value: round(alg), Unit: "GB/s", Status: benchmarks.StatusPass})
	m := metric{Name: "busbw_gbps", Key: "busbw_gbps", Unit: "GB/s", Label: fmt.Sprintf("%s bus bandwidth over %d devices", c.label(), n)}
	vals, fs := evaluate(m, []reading{{Device: "", Model: model, Value: bus}}, s.Thresholds, Peers{})
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
