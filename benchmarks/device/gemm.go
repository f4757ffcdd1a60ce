package device

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// GEMMSettings are the settings of a GEMM check ([checks.npu-gemm]); a
// check that also cross-checks its products has CrossCheckedGEMMSettings.
type GEMMSettings struct {
	Peers
	// DTypes are the input types measured.
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
	// Thresholds: model → "tflops_<dtype>" → least dense TFLOPS.
	Thresholds Thresholds `toml:"thresholds"`
	// accept are the input types the vendor measures, which DTypes may
	// name (GEMMSpec.DTypes): set with the defaults, not a key.
	accept []DType
}

// CrossCheckedGEMMSettings are the settings of a GEMM check that can also
// compare every element with the product computed with swapped operands
// ([checks.gemm]).
type CrossCheckedGEMMSettings struct {
	GEMMSettings
	// CrossCheck compares every element with the product computed with
	// swapped operands (one more GEMM per measurement).
	CrossCheck bool `toml:"cross_check"`
}

// gemmSettings are a GEMM check's settings: GEMMSettings or
// CrossCheckedGEMMSettings.
type gemmSettings interface {
	settings
	gemm() *GEMMSettings
	crossCheck() bool
}

func (s *GEMMSettings) thresholds() *Thresholds { return &s.Thresholds }
func (s *GEMMSettings) gemm() *GEMMSettings     { return s }
func (s *GEMMSettings) crossCheck() bool        { return false }

func (s *CrossCheckedGEMMSettings) crossCheck() bool { return s.CrossCheck }

// Validate reports out-of-range GEMM settings, naming the key; the
// messages list the input types the vendor measures.
func (s *GEMMSettings) Validate() error {
	names := make([]string, len(s.accept))
	for i, d := range s.accept {
		names[i] = string(d)
	}
	if len(s.DTypes) == 0 {
		return benchmarks.BadSetting("dtypes", "[]: want at least one of %s", strings.Join(names, ", "))
	}
	if len(s.Sizes) == 0 {
		return benchmarks.BadSetting("sizes", "[]: want at least one size")
	}
	for _, d := range s.DTypes {
		if !slices.Contains(s.accept, DType(d)) {
			return benchmarks.BadSetting("dtypes", "%q: want %s", d, either(s.accept))
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

// either words the choice of ds ("bf16, fp16, tf32 or fp8").
func either(ds []DType) string {
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = string(d)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// GEMMSpec is one vendor's GEMM check.
type GEMMSpec struct {
	Common
	// DTypes are the input types the vendor measures: the shipped dtypes,
	// in order, and all that the settings may name.
	DTypes []DType
	// CrossCheck gives the check the cross_check key, on by default: every
	// element is also compared with the product computed with swapped
	// operands.
	CrossCheck bool
	// Op is how labels name the operation ("GEMM", "matmul").
	Op string
	// WrongResult is the reason token of a wrong product.
	WrongResult string
	// Slow are the threshold and peer reasons ("GEMMBelowThreshold", "GEMMBelowPeers").
	Slow devcheck.Tokens
	// Seed seeds the inputs and the sampled elements.
	Seed uint64
	// Eps is the relative rounding allowed on an element of D.
	Eps func(DType) float64
	// SizesFirst runs every dtype of a size before the next size; otherwise
	// every size of a dtype before the next dtype.
	SizesFirst bool
	// Skip, when set, names the devices that cannot run dt (by index) and
	// the note that says so.
	Skip func(dt DType, devs []Info) (map[int]bool, string)
	// LibraryNote formats the GEMM library file in the message ("" for none).
	LibraryNote string
	// RuntimeNote formats Node.Runtime in the message ("" for none).
	RuntimeNote string
}

// settings are the check's shipped settings: 8192³ GEMMs of every dtype
// the vendor measures, timed for at least 300 ms after 3 untimed, 512
// elements verified, a device below 85% of the node's median fails.
func (spec GEMMSpec) settings() gemmSettings {
	g := GEMMSettings{
		Peers:         Peers{Fraction: 0.85, Min: 3},
		Sizes:         []int{8192},
		Warmup:        3,
		MinTime:       300 * time.Millisecond,
		MaxIters:      200,
		VerifySamples: 512,
		Thresholds:    spec.Thresholds.Merge(nil),
		accept:        spec.DTypes,
	}
	for _, d := range spec.DTypes {
		g.DTypes = append(g.DTypes, string(d))
	}
	if spec.CrossCheck {
		return &CrossCheckedGEMMSettings{GEMMSettings: g, CrossCheck: true}
	}
	return &g
}

// gemmCheck measures dense GEMM throughput per device and verifies the products.
type gemmCheck struct {
	check
	spec GEMMSpec
}

// NewGEMM returns the GEMM check that spec describes.
func NewGEMM(spec GEMMSpec) benchmarks.Check {
	own := append([]string{spec.WrongResult}, spec.Slow.List()...)
	return &gemmCheck{check: newCheck(spec.Common, func() settings { return spec.settings() }, own...), spec: spec}
}

// gemmCase is one measurement: a dtype at a size.
type gemmCase struct {
	dt   DType
	size int
}

// cases lists the measurements in the vendor's order.
func (c *gemmCheck) cases(g *GEMMSettings) []gemmCase {
	var out []gemmCase
	for _, a := range g.DTypes {
		for _, n := range g.Sizes {
			out = append(out, gemmCase{DType(a), n})
		}
	}
	if c.spec.SizesFirst {
		out = out[:0]
		for _, n := range g.Sizes {
			for _, a := range g.DTypes {
				out = append(out, gemmCase{DType(a), n})
			}
		}
	}
	return out
}

// gemmRun is one run of the check.
type gemmRun struct {
	node  Node
	devs  []Info
	g     *GEMMSettings
	cross bool
	t     *devcheck.Tally
	lib   string // the GEMM library file, once known
}

func (c *gemmCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := c.spec.settings()
	node, res := c.start(ctx, env, s)
	if res != nil {
		return *res
	}
	defer node.Close()
	r := &gemmRun{node: node, devs: node.Devices(), g: s.gemm(), t: c.tally(), cross: s.crossCheck()}
	largest := 0
	for _, n := range r.g.Sizes {
		largest = max(largest, n)
	}
	var a, bt []float32
	size := 0
	for _, k := range c.cases(r.g) {
		if k.size != size {
			size = k.size
			a = devcheck.GenMatrix(size, size, c.spec.Seed+uint64(size))
			bt = devcheck.GenMatrix(size, size, c.spec.Seed+uint64(size)*7+1)
		}
		if c.Vendor.stopped(ctx, r.t) {
			return r.t.Result("")
		}
		if !c.measureAll(ctx, r, k, a, bt, size == largest) {
			return r.t.Result("")
		}
	}
	v := c.Vendor
	if c.spec.RuntimeNote != "" {
		r.t.Note(c.spec.RuntimeNote, node.Runtime())
	}
	if c.spec.LibraryNote != "" && r.lib != "" {
		r.t.Note(c.spec.LibraryNote, r.lib)
	}
	return r.t.Result(fmt.Sprintf("%s: %s throughput and results as expected", v.Count(len(r.devs)), c.spec.Op))
}

// measureAll measures one case on every device at once and evaluates the
// readings; it returns false when the check must stop.
func (c *gemmCheck) measureAll(ctx context.Context, r *gemmRun, k gemmCase, a, bt []float32, largest bool) bool {
	v := c.Vendor
	in := GEMMInput{DType: k.dt, M: k.size, N: k.size, K: k.size, A: a, Bt: bt,
		Warmup: r.g.Warmup, MinTime: r.g.MinTime, MaxIters: r.g.MaxIters, Readback: true}
	ref := devcheck.NewGEMM(k.size, k.size, k.size, a, bt, c.spec.Eps(k.dt))
	var skip map[int]bool
	if c.spec.Skip != nil {
		var note string
		if skip, note = c.spec.Skip(k.dt, r.devs); note != "" {
			r.t.Note("%s", note)
		}
	}
	tflops := make([]float64, len(r.devs))
	errs := make([]error, len(r.devs))
	libs := make([]string, len(r.devs))
	var wg sync.WaitGroup
	for i, d := range r.devs {
		if skip[d.Index] {
			continue
		}
		wg.Add(1)
		go func(i int, d Info) {
			defer wg.Done()
			tflops[i], libs[i], errs[i] = c.measure(ctx, r, d.Index, in, ref)
		}(i, d)
	}
	wg.Wait()
	var rs []devcheck.Reading
	for i, d := range r.devs {
		if skip[d.Index] {
			continue
		}
		if libs[i] != "" {
			r.lib = libs[i]
		}
		name := v.DevName(d.Index)
		var wr *devcheck.WrongResult
		switch err := errs[i]; {
		case err != nil && v.MissingLibraryStops && missingLibrary(err):
			// The operator library is missing: the node's fact, said once.
			v.record(r.t, "", err)
			return false
		case errors.As(err, &wr):
			r.t.Fail(name, c.spec.WrongResult, "%s %s %d: %v", name, k.dt, k.size, err)
		case errors.Is(err, ErrUnsupported):
			r.t.Note("%s: %s skipped: %v", name, k.dt, err)
		case err != nil:
			v.record(r.t, name, err)
		default:
			rs = append(rs, devcheck.Reading{Device: name, Model: d.Name, Value: tflops[i]})
		}
	}
	sortReadings(rs)
	m := devcheck.Metric{Name: fmt.Sprintf("tflops_%s_%d", k.dt, k.size), Unit: "TFLOPS", Label: fmt.Sprintf("%s %s %d", k.dt, c.spec.Op, k.size)}
	if largest {
		m.Key = "tflops_" + string(k.dt)
	}
	evaluate(r.t, m, c.spec.Slow, rs, r.g.Thresholds, r.g.Peers)
	return true
}

// measure times one GEMM on a device and verifies its result. It returns
// TFLOPS and the GEMM library file used.
func (c *gemmCheck) measure(ctx context.Context, r *gemmRun, dev int, in GEMMInput, ref devcheck.GEMM) (float64, string, error) {
	var out GEMMOutput
	if err := devcheck.Run(ctx, func() (err error) { out, err = r.node.GEMM(ctx, dev, in); return err }); err != nil {
		return 0, "", err
	}
	if out.Seconds <= 0 {
		return 0, out.Library, fmt.Errorf("%s reported %v s per iteration", c.spec.Op, out.Seconds)
	}
	if err := ref.Verify(out.D, r.g.VerifySamples, c.spec.Seed^uint64(dev)); err != nil {
		return 0, out.Library, err
	}
	if r.cross {
		if err := crossCheck(ctx, r.node, dev, in, out, ref); err != nil {
			return 0, out.Library, err
		}
	}
	return 2 * float64(in.M) * float64(in.N) * float64(in.K) / out.Seconds / 1e12, out.Library, nil
}

// crossCheck compares every element of out with the product computed with
// the operands swapped (D₂ = B·Aᵀ: another kernel, another tiling).
func crossCheck(ctx context.Context, node Node, dev int, in GEMMInput, out GEMMOutput, ref devcheck.GEMM) error {
	sw := GEMMInput{DType: in.DType, M: in.N, N: in.M, K: in.K, A: in.Bt, Bt: in.A, MinTime: time.Nanosecond, MaxIters: 1, Readback: true}
	var out2 GEMMOutput
	if err := devcheck.Run(ctx, func() (err error) { out2, err = node.GEMM(ctx, dev, sw); return err }); err != nil {
		return err
	}
	if len(out2.D) != in.M*in.N {
		return fmt.Errorf("swapped GEMM returned %d elements, want %d", len(out2.D), in.M*in.N)
	}
	return ref.CheckCross(out.D, out2.D)
}
