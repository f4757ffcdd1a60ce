package compute

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// Reasons of the gemm check.
const (
	// ReasonGEMMWrongResult: a device computed a wrong product (fail).
	ReasonGEMMWrongResult = "GEMMWrongResult"
	// GEMM throughput below the model's floor or the node's median gives
	// GEMMBelowThreshold or GEMMBelowPeers.
	reasonGEMMPrefix = "GEMM"
)

// GEMMSettings are the settings of [checks.gemm].
type GEMMSettings struct {
	Libraries
	Peers
	// DTypes are the input types measured: bf16, fp16, tf32, fp8 (fp8 only
	// on compute capability >= 8.9; skipped with a note elsewhere).
	DTypes []string `toml:"dtypes"`
	// Sizes are the square GEMM sizes m = n = k measured. Absolute
	// thresholds apply to the largest; every size is compared with peers.
	Sizes []int `toml:"sizes"`
	// Warmup is how many untimed GEMMs run first.
	Warmup int `toml:"warmup"`
	// MinTime is how long the timed GEMMs of one measurement run at least.
	MinTime time.Duration `toml:"min_time"`
	// MaxIters caps the timed GEMMs of one measurement.
	MaxIters int `toml:"max_iters"`
	// VerifySamples is how many elements are compared with exact dot products.
	VerifySamples int `toml:"verify_samples"`
	// CrossCheck compares every element with the product computed with
	// swapped operands (one more GEMM per measurement).
	CrossCheck bool `toml:"cross_check"`
	// Thresholds: model → "tflops_<dtype>" → least dense TFLOPS.
	Thresholds Thresholds `toml:"thresholds"`
}

// gemmThresholds are the shipped floors in dense TFLOPS at the largest
// size: roughly 70–75% of what cuBLAS reaches on healthy parts (datasheet
// peaks: A100 312 bf16/fp16, 156 tf32; H100/H200 SXM 989 bf16/fp16, 494
// tf32, 1979 fp8; B200 2250 bf16/fp16, 1100 tf32, 4500 fp8). Calibrate
// them on a known-good fleet; [checks.gemm.thresholds.MODEL] overrides.
var gemmThresholds = Thresholds{
	"A100":           {"tflops_bf16": 220, "tflops_fp16": 220, "tflops_tf32": 110},
	"A100-PCIE":      {"tflops_bf16": 190, "tflops_fp16": 190, "tflops_tf32": 95},
	"A100 80GB PCIe": {"tflops_bf16": 190, "tflops_fp16": 190, "tflops_tf32": 95},
	"H100":           {"tflops_bf16": 600, "tflops_fp16": 600, "tflops_tf32": 300, "tflops_fp8": 1100},
	"H100 PCIe":      {"tflops_bf16": 420, "tflops_fp16": 420, "tflops_tf32": 210, "tflops_fp8": 800},
	"H200":           {"tflops_bf16": 620, "tflops_fp16": 620, "tflops_tf32": 310, "tflops_fp8": 1150},
	"B200":           {"tflops_bf16": 1400, "tflops_fp16": 1400, "tflops_tf32": 650, "tflops_fp8": 2800},
}

// DefaultGEMMSettings are the shipped settings.
func DefaultGEMMSettings() GEMMSettings {
	return GEMMSettings{
		Libraries:     DefaultLibraries(),
		Peers:         DefaultPeers(),
		DTypes:        []string{"bf16", "fp16", "tf32", "fp8"},
		Sizes:         []int{8192},
		Warmup:        3,
		MinTime:       300 * time.Millisecond,
		MaxIters:      200,
		VerifySamples: 512,
		CrossCheck:    true,
		Thresholds:    gemmThresholds.Merge(nil),
	}
}

// Validate reports out-of-range settings, naming the key.
func (s *GEMMSettings) Validate() error {
	if len(s.DTypes) == 0 {
		return benchmarks.BadSetting("dtypes", "[]: want at least one of bf16, fp16, tf32, fp8")
	}
	if len(s.Sizes) == 0 {
		return benchmarks.BadSetting("sizes", "[]: want at least one size")
	}
	for _, d := range s.DTypes {
		switch DType(d) {
		case BF16, FP16, TF32, FP8:
		default:
			return benchmarks.BadSetting("dtypes", "%q: want bf16, fp16, tf32 or fp8", d)
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
	if err := positive("min_time", s.MinTime); err != nil {
		return err
	}
	return devcheck.ValidatePeers(s.Peers)
}

// gemmCheck measures dense GEMM throughput and verifies the products.
type gemmCheck struct{ open Opener }

func init() { benchmarks.Register(&gemmCheck{open: OpenCUDA}) }

func (*gemmCheck) Name() string          { return "gemm" }
func (*gemmCheck) Kind() benchmarks.Kind { return benchmarks.KindPerf }
func (*gemmCheck) Isolated() bool        { return true }

// Vendor says which devices the check is about.
func (*gemmCheck) Vendor() benchmarks.Vendor { return benchmarks.VendorNVIDIA }

// Description says what the check does, for --list-checks.
func (*gemmCheck) Description() string {
	return "dense GEMM TFLOPS per GPU and dtype (cuBLASLt), products verified"
}

// Defaults returns the shipped settings.
func (*gemmCheck) Defaults() any { s := DefaultGEMMSettings(); return &s }

func (c *gemmCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := DefaultGEMMSettings()
	if err := devcheck.DecodeThresholds(env, &s, &s.Thresholds, gemmThresholds); err != nil {
		return unknown(c.Name(), ReasonBadSettings, "%v", err)
	}
	if err := s.Validate(); err != nil {
		return unknown(c.Name(), ReasonBadSettings, "%v", err)
	}
	node, err := openNode(ctx, c.open, s.Libraries, envDevices(env))
	if err != nil {
		return classify(c.Name(), err)
	}
	defer node.Close()
	devs := node.Devices()
	r := &result{check: c.Name()}
	largest := 0
	for _, n := range s.Sizes {
		largest = max(largest, n)
	}
	var mu sync.Mutex // guards r and lib while devices measure
	lib := ""
	for _, size := range s.Sizes {
		a := devcheck.GenMatrix(size, size, defaultSeed+uint64(size))
		bt := devcheck.GenMatrix(size, size, defaultSeed+uint64(size)*7+1)
		st := devcheck.NewGEMM(size, size, size, a, bt, 0) // Eps is set per dtype
		for _, dts := range s.DTypes {
			dt := DType(dts)
			if ctx.Err() != nil {
				r.deviceError("node", fmt.Errorf("%w: %v", ErrHung, ctx.Err()))
				return r.done("")
			}
			in := GEMMInput{DType: dt, M: size, N: size, K: size, A: a, Bt: bt,
				Warmup: s.Warmup, MinTime: s.MinTime, MaxIters: s.MaxIters, Readback: true}
			var rs []devcheck.Reading
			var wg sync.WaitGroup
			var tooOld []string
			cc := ""
			for _, d := range devs {
				if dt == FP8 && d.Major*10+d.Minor < 89 {
					tooOld = append(tooOld, devName(d.Index))
					cc = fmt.Sprintf("%d.%d", d.Major, d.Minor)
				}
			}
			if len(tooOld) > 0 {
				r.note("fp8 skipped on %s (compute capability %s < 8.9)", strings.Join(tooOld, ", "), cc)
			}
			for _, d := range devs {
				if dt == FP8 && d.Major*10+d.Minor < 89 {
					continue
				}
				wg.Add(1)
				go func(d DeviceInfo) {
					defer wg.Done()
					tflops, path, err := c.measure(ctx, node, d.Index, in, st, s)
					mu.Lock()
					defer mu.Unlock()
					if path != "" {
						lib = path
					}
					var wr *devcheck.WrongResult
					switch {
					case errors.As(err, &wr):
						r.fail(ReasonGEMMWrongResult, devName(d.Index), "%s %s %d: %v", devName(d.Index), dt, size, err)
					case errors.Is(err, ErrUnsupported):
						r.note("%s: %s skipped: %v", devName(d.Index), dt, err)
					case err != nil:
						r.deviceError(devName(d.Index), err)
					default:
						rs = append(rs, devcheck.Reading{Device: devName(d.Index), Model: d.Name, Value: tflops})
					}
				}(d)
			}
			wg.Wait()
			sortReadings(rs)
			m := devcheck.Metric{Name: fmt.Sprintf("tflops_%s_%d", dt, size), Unit: "TFLOPS", Label: fmt.Sprintf("%s GEMM %d", dt, size)}
			if size == largest {
				m.Key = "tflops_" + string(dt)
			}
			vals, fs := devcheck.Evaluate(m, rs, s.Thresholds, s.Peers)
			r.add(m, reasonGEMMPrefix, vals, fs)
		}
	}
	r.note("libcuda %s", node.Driver())
	if lib != "" {
		r.note("cuBLASLt %s", lib)
	}
	return r.done(fmt.Sprintf("%d devices: GEMM throughput and results as expected", len(devs)))
}

// measure times one GEMM on a device and verifies its result. It returns
// TFLOPS and the cuBLASLt file used.
func (c *gemmCheck) measure(ctx context.Context, node Node, dev int, in GEMMInput, st devcheck.GEMM, s GEMMSettings) (float64, string, error) {
	var out GEMMOutput
	if err := devcheck.Run(ctx, func() (err error) { out, err = node.GEMM(ctx, dev, in); return err }); err != nil {
		return 0, "", err
	}
	tflops, err := c.verify(ctx, node, dev, in, out, st, s)
	return tflops, out.Library, err
}

// verify checks out against the inputs and returns TFLOPS.
func (c *gemmCheck) verify(ctx context.Context, node Node, dev int, in GEMMInput, out GEMMOutput, st devcheck.GEMM, s GEMMSettings) (float64, error) {
	if out.Seconds <= 0 {
		return 0, fmt.Errorf("GEMM reported %v s per iteration", out.Seconds)
	}
	st.Eps = outEps(in.DType)
	if err := st.Verify(out.D, s.VerifySamples, defaultSeed^uint64(dev)); err != nil {
		return 0, err
	}
	if s.CrossCheck {
		sw := GEMMInput{DType: in.DType, M: in.N, N: in.M, K: in.K, A: in.Bt, Bt: in.A, MinTime: time.Nanosecond, MaxIters: 1, Readback: true}
		var out2 GEMMOutput
		if err := devcheck.Run(ctx, func() (err error) { out2, err = node.GEMM(ctx, dev, sw); return err }); err != nil {
			return 0, err
		}
		if len(out2.D) != in.M*in.N {
			return 0, fmt.Errorf("swapped GEMM returned %d elements, want %d", len(out2.D), in.M*in.N)
		}
		if err := st.CheckCross(out.D, out2.D); err != nil {
			return 0, err
		}
	}
	return 2 * float64(in.M) * float64(in.N) * float64(in.K) / out.Seconds / 1e12, nil
}

// envDevices is the job's devices, nil for all.
func envDevices(env *benchmarks.Env) []int {
	if env == nil {
		return nil
	}
	return env.Devices
}
