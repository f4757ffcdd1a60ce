package ascend

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/compute"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ReasonCollectiveWrongResult: a collective delivered wrong data (fail).
const ReasonCollectiveWrongResult = "NPUCollectiveWrongResult"

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
	op         devcheck.CollOp
	thresholds compute.Thresholds
	open       Opener
}

func (c *collCheck) Name() string        { return c.name }
func (*collCheck) Kind() benchmarks.Kind { return benchmarks.KindPerf }
func (*collCheck) Isolated() bool        { return true }

// Vendor says which devices the check is about.
func (*collCheck) Vendor() benchmarks.Vendor { return benchmarks.VendorAscend }

// Description says what the check does, for --list-checks.
func (c *collCheck) Description() string {
	label := map[devcheck.CollOp]string{devcheck.AllReduce: "all-reduce", devcheck.AllGather: "all-gather"}[c.op]
	return "HCCL " + label + " bus bandwidth over the node's NPUs, result verified"
}

// Defaults returns the shipped settings.
func (c *collCheck) Defaults() any { s := c.defaults(); return &s }

func (c *collCheck) defaults() CollectiveSettings {
	return CollectiveSettings{
		Libraries:   DefaultLibraries(),
		Bytes:       256 << 20,
		VerifyBytes: 4 << 20,
		Warmup:      5,
		Iters:       20,
		Thresholds:  c.thresholds.Merge(nil),
	}
}

func (c *collCheck) prefix() string {
	if c.op == devcheck.AllGather {
		return "NPUAllGather"
	}
	return "NPUAllReduce"
}

func (c *collCheck) label() string {
	if c.op == devcheck.AllGather {
		return "all-gather"
	}
	return "all-reduce"
}

func (c *collCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := c.defaults()
	if err := devcheck.DecodeThresholds(env, &s, &s.Thresholds, c.thresholds); err != nil {
		return devcheck.BadSettings(c.Name(), err)
	}
	if err := s.Validate(); err != nil {
		return devcheck.BadSettings(c.Name(), err)
	}
	node, res := openNode(ctx, c.Name(), c.open, s.Libraries, devcheck.EnvDevices(env))
	if res != nil {
		return *res
	}
	defer node.Close()
	devs := node.Devices()
	if len(devs) < 2 {
		return benchmarks.Result{Check: c.Name(), Status: benchmarks.StatusUnknown, Reason: ReasonSingleDevice,
			Message: fmt.Sprintf("%d %s: a collective needs at least 2", len(devs), devcheck.Plural(len(devs), "NPU"))}
	}
	idx := make([]int, len(devs))
	for i, d := range devs {
		idx[i] = d.Index
	}
	n := len(devs)
	t := newTally(c.Name())

	// Verification run: small buffers, read back, compared exactly.
	vcount := max(s.VerifyBytes/4, n)
	vin := devcheck.CollInputs(n, vcount)
	var vout compute.CollectiveOutput
	err := devcheck.Run(ctx, func() (err error) {
		vout, err = node.Collective(ctx, compute.CollectiveInput{Op: c.op, Devices: idx, Count: vcount, Iters: 1, Concurrent: 1, Inputs: vin})
		return err
	})
	if err != nil {
		classify(t, "", err)
		return t.Result("")
	}
	if err := devcheck.VerifyCollective(c.op, devNames(idx), vin, vout.Outputs); err != nil {
		t.Fail("", ReasonCollectiveWrongResult, "%s delivered wrong data: %v", c.label(), err)
		return t.Result("")
	}

	in := compute.CollectiveInput{Op: c.op, Devices: idx, Count: max(s.Bytes/4, n), Warmup: s.Warmup, Iters: s.Iters, Concurrent: 1}
	var out compute.CollectiveOutput
	if err := devcheck.Run(ctx, func() (err error) { out, err = node.Collective(ctx, in); return err }); err != nil {
		classify(t, "", err)
		return t.Result("")
	}
	if out.Seconds <= 0 {
		classify(t, "", errors.New("collective reported no time"))
		return t.Result("")
	}
	alg := devcheck.SizeBytes(c.op, in.Count, n) / out.Seconds / 1e9
	bus := alg * devcheck.BusFactor(c.op, n)
	t.Value("", "algbw_gbps", devcheck.Round(alg), "GB/s", nil, "", benchmarks.StatusPass)
	m := devcheck.Metric{Name: "busbw_gbps", Key: "busbw_gbps", Unit: "GB/s", Label: fmt.Sprintf("%s bus bandwidth over %d NPUs", c.label(), n)}
	evaluate(t, m, c.prefix(), []devcheck.Reading{{Device: "", Model: devs[0].Name, Value: bus}}, s.Thresholds, compute.Peers{})
	if out.Library != "" {
		t.Note("HCCL %s", out.Library)
	}
	return t.Result(fmt.Sprintf("%s over %d NPUs: %.4g GB/s bus bandwidth, results verified", c.label(), n, bus))
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
	}
	return nil
}
