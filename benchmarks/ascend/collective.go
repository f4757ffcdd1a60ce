package ascend

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/compute"
)

// ReasonCollectiveWrongResult: a collective delivered wrong data (fail).
const ReasonCollectiveWrongResult = "NPUCollectiveWrongResult"

// Bandwidths with the nccl-tests definitions (PERFORMANCE.md in
// NVIDIA/nccl-tests), which HCCL's hccl_test reports alike: S is the size
// of the operation, t the time of one operation.
//
//	algbw = S / t
//	all-reduce: busbw = algbw × 2(n−1)/n   (S: each rank's buffer)
//	all-gather: busbw = algbw × (n−1)/n    (S: the gathered buffer)

// busFactor is busbw/algbw for op over n ranks.
func busFactor(op compute.CollOp, n int) float64 {
	if n < 2 {
		return 0
	}
	f := float64(n-1) / float64(n)
	if op == compute.AllReduce {
		return 2 * f
	}
	return f
}

// sizeBytes is the size S of op for count float32 elements per rank over n ranks.
func sizeBytes(op compute.CollOp, count, n int) float64 {
	if op == compute.AllGather {
		return float64(count) * 4 * float64(n)
	}
	return float64(count) * 4
}

// collInputs makes the per-rank buffers of a verification run: small
// integers, so sums over up to 256 ranks are exact in float32.
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

// verifyCollective compares what each rank received with what op must
// deliver for inputs in.
func verifyCollective(op compute.CollOp, devs []int, in, got [][]float32) error {
	n, count := len(in), len(in[0])
	var want []float32
	switch op {
	case compute.AllReduce:
		want = make([]float32, count)
		for _, b := range in {
			for i, v := range b {
				want[i] += v
			}
		}
	case compute.AllGather:
		for _, b := range in {
			want = append(want, b...)
		}
	default:
		return fmt.Errorf("unsupported collective %s", op)
	}
	if len(got) != n {
		return fmt.Errorf("%d output buffers, want %d", len(got), n)
	}
	for r := range got {
		if len(got[r]) != len(want) {
			return fmt.Errorf("%s: %d elements received, want %d", devName(devs[r]), len(got[r]), len(want))
		}
		bad, first := 0, -1
		for i := range want {
			if got[r][i] != want[i] {
				if first < 0 {
					first = i
				}
				bad++
			}
		}
		if bad > 0 {
			return fmt.Errorf("%s: %d of %d elements wrong, first [%d] = %g, want %g", devName(devs[r]), bad, len(want), first, got[r][first], want[first])
		}
	}
	return nil
}

// CollectiveSettings are the settings of [checks.npu-allreduce] and
// [checks.npu-allgather].
type CollectiveSettings struct {
	Libraries
	// Bytes is each rank's buffer size (all-gather: each rank's contribution).
	Bytes int `toml:"bytes"`
	// VerifyBytes is the buffer size of the verification run.
	VerifyBytes int `toml:"verify_bytes"`
	// Warmup and Iters are untimed and timed operations.
	Warmup int `toml:"warmup"`
	Iters  int `toml:"iters"`
	// Thresholds: model → "busbw_gbps" → least bus bandwidth in GB/s.
	Thresholds compute.Thresholds `toml:"thresholds"`
}

// collThresholds: 8 × 910B in one Atlas 800T A2 server are fully meshed
// over HCCS (7 links of 56 GB/s per NPU, 392 GB/s). The floors are a
// conservative fraction of what hccl_test reports on healthy nodes for
// 256 MiB buffers; calibrate on the fleet, and lower them for nodes with
// fewer NPUs per job.
var (
	allReduceThresholds = compute.Thresholds{"Ascend910B": {"busbw_gbps": 100}}
	allGatherThresholds = compute.Thresholds{"Ascend910B": {"busbw_gbps": 100}}
)

// collCheck is one HCCL collective check.
type collCheck struct {
	name       string
	op         compute.CollOp
	thresholds compute.Thresholds
	open       Opener
}

func (c *collCheck) Name() string        { return c.name }
func (*collCheck) Kind() benchmarks.Kind { return benchmarks.KindPerf }
func (*collCheck) Isolated() bool        { return true }

// Defaults returns the shipped settings.
func (c *collCheck) Defaults() any { s := c.defaults(); return &s }

func (c *collCheck) defaults() CollectiveSettings {
	return CollectiveSettings{
		Libraries:   DefaultLibraries(),
		Bytes:       256 << 20,
		VerifyBytes: 4 << 20,
		Warmup:      5,
		Iters:       20,
		Thresholds:  mergeThresholds(c.thresholds, nil),
	}
}

func (c *collCheck) prefix() string {
	if c.op == compute.AllGather {
		return "NPUAllGather"
	}
	return "NPUAllReduce"
}

func (c *collCheck) label() string {
	if c.op == compute.AllGather {
		return "all-gather"
	}
	return "all-reduce"
}

func (c *collCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := c.defaults()
	s.Thresholds = nil
	if err := decodeSettings(env, &s); err != nil {
		return badSettings(c.Name(), err)
	}
	s.Thresholds = mergeThresholds(c.thresholds, s.Thresholds)
	if s.Bytes < 4096 || s.VerifyBytes < 4096 || s.Iters < 1 || s.Warmup < 0 {
		return badSettings(c.Name(), errors.New("need bytes and verify_bytes >= 4096, iters >= 1, warmup >= 0"))
	}
	node, res := openNode(ctx, c.Name(), c.open, s.Libraries, envDevices(env))
	if res != nil {
		return *res
	}
	defer node.Close()
	devs := node.Devices()
	if len(devs) < 2 {
		return benchmarks.Result{Check: c.Name(), Status: benchmarks.StatusUnknown, Reason: ReasonSingleDevice,
			Message: fmt.Sprintf("%d %s: a collective needs at least 2", len(devs), plural(len(devs), "NPU"))}
	}
	idx := make([]int, len(devs))
	for i, d := range devs {
		idx[i] = d.Index
	}
	n := len(devs)
	t := &tally{check: c.Name()}

	// Verification run: small buffers, read back, compared exactly.
	vcount := max(s.VerifyBytes/4, n)
	vin := collInputs(n, vcount)
	var vout compute.CollectiveOutput
	err := run(ctx, func() (err error) {
		vout, err = node.Collective(ctx, compute.CollectiveInput{Op: c.op, Devices: idx, Count: vcount, Iters: 1, Concurrent: 1, Inputs: vin})
		return err
	})
	if err != nil {
		classify(t, "", err)
		return t.result("")
	}
	if err := verifyCollective(c.op, idx, vin, vout.Outputs); err != nil {
		t.fail("", ReasonCollectiveWrongResult, "%s delivered wrong data: %v", c.label(), err)
		return t.result("")
	}

	in := compute.CollectiveInput{Op: c.op, Devices: idx, Count: max(s.Bytes/4, n), Warmup: s.Warmup, Iters: s.Iters, Concurrent: 1}
	var out compute.CollectiveOutput
	if err := run(ctx, func() (err error) { out, err = node.Collective(ctx, in); return err }); err != nil {
		classify(t, "", err)
		return t.result("")
	}
	if out.Seconds <= 0 {
		classify(t, "", errors.New("collective reported no time"))
		return t.result("")
	}
	alg := sizeBytes(c.op, in.Count, n) / out.Seconds / 1e9
	bus := alg * busFactor(c.op, n)
	t.value("", "algbw_gbps", round(alg), "GB/s", nil, "", benchmarks.StatusPass)
	m := metric{Name: "busbw_gbps", Key: "busbw_gbps", Unit: "GB/s", Label: fmt.Sprintf("%s bus bandwidth over %d NPUs", c.label(), n)}
	evaluate(t, m, c.prefix(), []reading{{Device: "", Model: devs[0].Name, Value: bus}}, s.Thresholds, compute.Peers{})
	if out.Library != "" {
		t.note("HCCL %s", out.Library)
	}
	return t.result(fmt.Sprintf("%s over %d NPUs: %.4g GB/s bus bandwidth, results verified", c.label(), n, bus))
}
