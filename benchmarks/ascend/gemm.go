package ascend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/compute"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/dl"
)

// ReasonGEMMWrongResult: a device computed a wrong product (fail). Low
// throughput gives NPUGEMMBelowThreshold or NPUGEMMBelowPeers.
const ReasonGEMMWrongResult = "NPUGEMMWrongResult"

const reasonGEMMPrefix = "NPUGEMM"

// GEMMSettings are the settings of [checks.npu-gemm].
type GEMMSettings struct {
	Libraries
	compute.Peers
	// DTypes are the input types measured: fp16, bf16.
	DTypes []string `toml:"dtypes"`
	// Sizes are the square sizes m = n = k measured; absolute thresholds
	// apply to the largest, every size is compared with peers.
	Sizes []int `toml:"sizes"`
	// Warmup is how many untimed matmuls run first.
	Warmup int `toml:"warmup"`
	// MinTime is how long the timed matmuls of one measurement run at least.
	MinTime time.Duration `toml:"min_time"`
	// MaxIters caps the timed matmuls of one measurement.
	MaxIters int `toml:"max_iters"`
	// VerifySamples is how many elements are compared with exact dot products.
	VerifySamples int `toml:"verify_samples"`
	// Thresholds: model → "tflops_fp16" / "tflops_bf16" → least dense TFLOPS.
	Thresholds compute.Thresholds `toml:"thresholds"`
}

// gemmThresholds are the shipped floors in dense TFLOPS at the largest
// size, keyed by the SoC name ACL reports. They are 60% of the peak FP16
// (= BF16) figures publicly reported for the 910B family (910B1 414,
// 910B2 376, 910B3 313, 910B4 280 TFLOPS; Huawei publishes per-product,
// not per-SKU, datasheets, so treat these as estimates). Calibrate them on
// a known-good fleet; [checks.npu-gemm.thresholds.MODEL] overrides.
var gemmThresholds = compute.Thresholds{
	"Ascend910B1": {"tflops_fp16": 248, "tflops_bf16": 248},
	"Ascend910B2": {"tflops_fp16": 225, "tflops_bf16": 225},
	"Ascend910B3": {"tflops_fp16": 188, "tflops_bf16": 188},
	"Ascend910B4": {"tflops_fp16": 168, "tflops_bf16": 168},
}

// DefaultGEMMSettings are the shipped settings.
func DefaultGEMMSettings() GEMMSettings {
	return GEMMSettings{
		Libraries:     DefaultLibraries(),
		Peers:         compute.DefaultPeers(),
		DTypes:        []string{"fp16", "bf16"},
		Sizes:         []int{8192},
		Warmup:        3,
		MinTime:       300 * time.Millisecond,
		MaxIters:      200,
		VerifySamples: 512,
		Thresholds:    gemmThresholds.Merge(nil),
	}
}

// Validate reports out-of-range settings, naming the key.
func (s *GEMMSettings) Validate() error {
	if len(s.DTypes) == 0 {
		return benchmarks.BadSetting("dtypes", "[]: want at least one of fp16, bf16")
	}
	if len(s.Sizes) == 0 {
		return benchmarks.BadSetting("sizes", "[]: want at least one size")
	}
	for _, d := range s.DTypes {
		if d != string(compute.FP16) && d != string(compute.BF16) {
			return benchmarks.BadSetting("dtypes", "%q: want fp16 or bf16", d)
		}
	}
	for _, n := range s.Sizes {
		if n < 16 || n%16 != 0 || n > 32768 {
			return benchmarks.BadSetting("sizes", "%d: want a multiple of 16 from 16 to 32768", n)
		}
	}
	if s.Warmup < 0 {
		return benchmarks.BadSetting("warmup", "%d: want 0 or more", s.Warmup)
	}
	if s.MaxIters < 1 {
		return benchmarks.BadSetting("max_iters", "%d: want 1 or more", s.MaxIters)
	}
	if s.VerifySamples < 0 {
		return benchmarks.BadSetting("verify_samples", "%d: want 0 or more", s.VerifySamples)
	}
	if s.MinTime <= 0 {
		return benchmarks.BadSetting("min_time", "%v: must be positive", s.MinTime)
	}
	return devcheck.ValidatePeers(s.Peers)
}

// gemmCheck measures aclnnMatmul throughput and verifies the products.
type gemmCheck struct{ open Opener }

func init() { benchmarks.Register(&gemmCheck{open: OpenACL}) }

func (*gemmCheck) Name() string          { return "npu-gemm" }
func (*gemmCheck) Kind() benchmarks.Kind { return benchmarks.KindPerf }
func (*gemmCheck) Isolated() bool        { return true }

// Vendor says which devices the check is about.
func (*gemmCheck) Vendor() benchmarks.Vendor { return benchmarks.VendorAscend }

// Description says what the check does, for --list-checks.
func (*gemmCheck) Description() string {
	return "aclnnMatmul TFLOPS per NPU in fp16 and bf16, products verified"
}

// Defaults returns the shipped settings.
func (*gemmCheck) Defaults() any { s := DefaultGEMMSettings(); return &s }

func (c *gemmCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := DefaultGEMMSettings()
	if err := devcheck.DecodeThresholds(env, &s, &s.Thresholds, gemmThresholds); err != nil {
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
	t := newTally(c.Name())
	largest := 0
	for _, n := range s.Sizes {
		largest = max(largest, n)
	}
	for _, dts := range s.DTypes {
		dt := compute.DType(dts)
		for _, size := range s.Sizes {
			if t.Canceled(ctx) {
				return t.Result("")
			}
			a := devcheck.GenMatrix(size, size, defaultSeed+uint64(size))
			bt := devcheck.GenMatrix(size, size, defaultSeed+uint64(size)*7+1)
			ref := devcheck.NewGEMM(size, size, size, a, bt, outEps(dt))
			in := compute.GEMMInput{DType: dt, M: size, N: size, K: size, A: a, Bt: bt,
				Warmup: s.Warmup, MinTime: s.MinTime, MaxIters: s.MaxIters, Readback: true}
			tflops := make([]float64, len(devs))
			errs := make([]error, len(devs))
			var wg sync.WaitGroup
			for i, d := range devs {
				wg.Add(1)
				go func(i int, d compute.DeviceInfo) {
					defer wg.Done()
					tflops[i], errs[i] = measureGEMM(ctx, node, d.Index, in, ref, s.VerifySamples)
				}(i, d)
			}
			wg.Wait()
			var rs []devcheck.Reading
			for i, d := range devs {
				var wr *devcheck.WrongResult
				switch err := errs[i]; {
				case errors.Is(err, dl.ErrNotFound), errors.Is(err, dl.ErrSymbol):
					// The operator library is missing: the node's fact, said once.
					classify(t, "", err)
					return t.Result("")
				case errors.As(err, &wr):
					t.Fail(devName(d.Index), ReasonGEMMWrongResult, "%s %s %d: %v", devName(d.Index), dt, size, err)
				case err != nil:
					classify(t, devName(d.Index), err)
				default:
					rs = append(rs, devcheck.Reading{Device: devName(d.Index), Model: d.Name, Value: tflops[i]})
				}
			}
			sortReadings(rs)
			m := devcheck.Metric{Name: fmt.Sprintf("tflops_%s_%d", dt, size), Unit: "TFLOPS", Label: fmt.Sprintf("%s matmul %d", dt, size)}
			if size == largest {
				m.Key = "tflops_" + string(dt)
			}
			evaluate(t, m, reasonGEMMPrefix, rs, s.Thresholds, s.Peers)
		}
	}
	t.Note("ACL %s", node.Runtime())
	return t.Result(fmt.Sprintf("%d %s: matmul throughput and results as expected", len(devs), devcheck.Plural(len(devs), "NPU")))
}

// measureGEMM times one matmul on a device and verifies its result; it
// returns TFLOPS.
func measureGEMM(ctx context.Context, node Node, dev int, in compute.GEMMInput, ref devcheck.GEMM, samples int) (float64, error) {
	var out compute.GEMMOutput
	if err := devcheck.Run(ctx, func() (err error) { out, err = node.GEMM(ctx, dev, in); return err }); err != nil {
		return 0, err
	}
	if out.Seconds <= 0 {
		return 0, fmt.Errorf("matmul reported %v s per iteration", out.Seconds)
	}
	if err := ref.Verify(out.D, samples, defaultSeed^uint64(dev)); err != nil {
		return 0, err
	}
	return 2 * float64(in.M) * float64(in.N) * float64(in.K) / out.Seconds / 1e12, nil
}

// sortReadings orders readings by device name in natural order.
func sortReadings(rs []devcheck.Reading) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && less(rs[j].Device, rs[j-1].Device); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

func less(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
