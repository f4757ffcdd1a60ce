package device

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// OverlapInput measures GEMMs and all-reduces on every device, alone and at
// the same time (each device's GEMMs on a stream of their own, the
// all-reduces on the collective's streams).
type OverlapInput struct {
	Devices []int
	GEMM    GEMMInput // DType and sizes; A and Bt are not needed
	// GEMMs and AllReduces are how many of each one round runs per device.
	GEMMs, AllReduces int
	// Count is the all-reduce size in float32 elements.
	Count int
}

// OverlapOutput holds the three timings in seconds.
type OverlapOutput struct {
	GEMMAlone, AllReduceAlone, Together float64
}

// OverlapSettings are the settings of an overlap check.
type OverlapSettings struct {
	// DType and Size are the GEMMs' input type and m = n = k.
	DType string `toml:"dtype"`
	Size  int    `toml:"size"`
	// GEMMs and AllReduces are how many of each run per device in a round.
	GEMMs      int `toml:"gemms"`
	AllReduces int `toml:"allreduces"`
	// Bytes is each all-reduce's buffer size.
	Bytes int `toml:"bytes"`
	// MinEfficiency is the least (GEMM alone + all-reduce alone) / together:
	// 2 is perfect overlap, 1 is none, below 1 running both at once is
	// slower than one after the other.
	MinEfficiency float64 `toml:"min_efficiency"`
	// accept are the input types the vendor's GEMM supports, which DType
	// may name (OverlapSpec.DTypes): set with the defaults, not a key.
	accept []DType
}

// Validate reports out-of-range overlap settings, naming the key; the
// dtype message lists the input types the vendor's GEMM supports.
func (s *OverlapSettings) Validate() error {
	if !slices.Contains(s.accept, DType(s.DType)) {
		return benchmarks.BadSetting("dtype", "%q: want %s", s.DType, either(s.accept))
	}
	switch {
	case s.Size < 16 || s.Size%16 != 0:
		return benchmarks.BadSetting("size", "%d: want a multiple of 16, at least 16", s.Size)
	case s.GEMMs < 1:
		return benchmarks.BadSetting("gemms", "%d: want 1 or more", s.GEMMs)
	case s.AllReduces < 1:
		return benchmarks.BadSetting("allreduces", "%d: want 1 or more", s.AllReduces)
	case s.Bytes < 4096:
		return benchmarks.BadSetting("bytes", "%d: want 4096 or more", s.Bytes)
	case s.MinEfficiency < 0:
		return benchmarks.BadSetting("min_efficiency", "%v: want 0 or more", s.MinEfficiency)
	}
	return nil
}

// thresholds is nil: the overlap check has a floor of its own
// (min_efficiency), not a thresholds table.
func (s *OverlapSettings) thresholds() *Thresholds { return nil }

// OverlapSpec is one vendor's overlap check.
type OverlapSpec struct {
	Common
	// DType is the GEMMs' shipped input type.
	DType DType
	// DTypes are the input types the vendor's GEMM supports: all that the
	// settings may name.
	DTypes []DType
	// Slow is the reason of an efficiency below the floor ("OverlapBelowThreshold").
	Slow string
}

// settings are the check's shipped settings: 20 GEMMs of 8192³ and 20
// all-reduces of 256 MiB per device. The floor only catches pathological
// interference (concurrent slower than serial); calibrate it.
func (spec OverlapSpec) settings() *OverlapSettings {
	return &OverlapSettings{DType: string(spec.DType), Size: 8192, GEMMs: 20, AllReduces: 20, Bytes: 256 << 20, MinEfficiency: 0.9,
		accept: spec.DTypes}
}

// overlapCheck times GEMMs and all-reduces alone and together.
type overlapCheck struct {
	check
	spec OverlapSpec
}

// NewOverlap returns the overlap check that spec describes.
func NewOverlap(spec OverlapSpec) benchmarks.Check {
	return &overlapCheck{check: newCheck(spec.Common, func() settings { return spec.settings() }, spec.Slow, ReasonSingleDevice), spec: spec}
}

func (c *overlapCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	ov := c.spec.settings()
	node, res := c.start(ctx, env, ov)
	if res != nil {
		return *res
	}
	defer node.Close()
	v := c.Vendor
	devs := node.Devices()
	if len(devs) < 2 {
		return benchmarks.Result{Check: c.Name, Status: benchmarks.StatusUnknown, Reason: ReasonSingleDevice,
			Message: fmt.Sprintf("%d %s: overlap needs an all-reduce over at least 2", len(devs), devcheck.Plural(len(devs), v.Noun))}
	}
	idx := make([]int, len(devs))
	for i, d := range devs {
		idx[i] = d.Index
	}
	in := OverlapInput{Devices: idx, GEMMs: ov.GEMMs, AllReduces: ov.AllReduces, Count: ov.Bytes / 4,
		GEMM: GEMMInput{DType: DType(ov.DType), M: ov.Size, N: ov.Size, K: ov.Size, MinTime: time.Nanosecond, MaxIters: 1}}
	var out OverlapOutput
	t := c.tally()
	err := devcheck.Run(ctx, func() (err error) { out, err = node.Overlap(ctx, in); return err })
	if err == nil && (out.Together <= 0 || out.GEMMAlone <= 0 || out.AllReduceAlone <= 0) {
		err = fmt.Errorf("overlap reported times %+v", out)
	}
	if err != nil {
		v.record(t, v.NodeDevice, err)
		return t.Result("")
	}
	eff := c.evaluate(t, ov, out)
	return t.Result(fmt.Sprintf("%s: GEMM and all-reduce overlap with efficiency %.3g", v.Count(len(devs)), eff))
}

// evaluate records the efficiency against its floor and the three times;
// it returns the efficiency.
func (c *overlapCheck) evaluate(t *devcheck.Tally, ov *OverlapSettings, out OverlapOutput) float64 {
	eff := (out.GEMMAlone + out.AllReduceAlone) / out.Together
	lim := ov.MinEfficiency
	st := benchmarks.StatusPass
	if eff < lim {
		st = benchmarks.StatusFail
		t.Fail("", c.spec.Slow, "GEMM+all-reduce together took %.3g ms, alone %.3g + %.3g ms: efficiency %.3g < %.3g",
			out.Together*1e3, out.GEMMAlone*1e3, out.AllReduceAlone*1e3, eff, lim)
	}
	t.Value("", "overlap_efficiency", devcheck.Round(eff), "ratio", &lim, ">=", st)
	t.Value("", "gemm_alone_ms", devcheck.Round(out.GEMMAlone*1e3), "ms", nil, "", benchmarks.StatusPass)
	t.Value("", "allreduce_alone_ms", devcheck.Round(out.AllReduceAlone*1e3), "ms", nil, "", benchmarks.StatusPass)
	t.Value("", "together_ms", devcheck.Round(out.Together*1e3), "ms", nil, "", benchmarks.StatusPass)
	return eff
}
