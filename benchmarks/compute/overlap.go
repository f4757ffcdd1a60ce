package compute

import (
	"context"
	"fmt"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// OverlapSettings are the settings of [checks.overlap].
type OverlapSettings struct {
	Libraries
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
}

// DefaultOverlapSettings are the shipped settings. The floor only catches
// pathological interference (concurrent slower than serial); calibrate it.
func DefaultOverlapSettings() OverlapSettings {
	return OverlapSettings{Libraries: DefaultLibraries(), DType: "bf16", Size: 8192, GEMMs: 20, AllReduces: 20, Bytes: 256 << 20, MinEfficiency: 0.9}
}

type overlapCheck struct{ open Opener }

func init() { benchmarks.Register(&overlapCheck{open: OpenCUDA}) }

func (*overlapCheck) Name() string          { return "overlap" }
func (*overlapCheck) Kind() benchmarks.Kind { return benchmarks.KindPerf }
func (*overlapCheck) Isolated() bool        { return true }

// Vendor says which devices the check is about.
func (*overlapCheck) Vendor() benchmarks.Vendor { return benchmarks.VendorNVIDIA }

// Description says what the check does, for --list-checks.
func (*overlapCheck) Description() string {
	return "GEMMs and NCCL all-reduces alone and at once: how well they overlap"
}

// Defaults returns the shipped settings.
func (*overlapCheck) Defaults() any { s := DefaultOverlapSettings(); return &s }

func (c *overlapCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := DefaultOverlapSettings()
	if err := devcheck.Decode(env, &s); err != nil {
		return unknown(c.Name(), ReasonInvalidSettings, "%v", err)
	}
	if err := s.Validate(); err != nil {
		return unknown(c.Name(), ReasonInvalidSettings, "%v", err)
	}
	node, err := openNode(ctx, c.open, s.Libraries, devcheck.EnvDevices(env))
	if err != nil {
		return classify(c.Name(), err)
	}
	defer node.Close()
	devs := node.Devices()
	if len(devs) < 2 {
		return unknown(c.Name(), ReasonSingleDevice, "%d device: overlap needs an all-reduce over at least 2", len(devs))
	}
	idx := make([]int, len(devs))
	for i, d := range devs {
		idx[i] = d.Index
	}
	in := OverlapInput{Devices: idx, GEMMs: s.GEMMs, AllReduces: s.AllReduces, Count: s.Bytes / 4,
		GEMM: GEMMInput{DType: DType(s.DType), M: s.Size, N: s.Size, K: s.Size, MinTime: time.Nanosecond, MaxIters: 1}}
	var out OverlapOutput
	r := &result{check: c.Name()}
	if err := devcheck.Run(ctx, func() (err error) { out, err = node.Overlap(ctx, in); return err }); err != nil {
		r.deviceError("node", err)
		return r.done("")
	}
	if out.Together <= 0 || out.GEMMAlone <= 0 || out.AllReduceAlone <= 0 {
		r.deviceError("node", fmt.Errorf("overlap reported times %+v", out))
		return r.done("")
	}
	eff := (out.GEMMAlone + out.AllReduceAlone) / out.Together
	lim := s.MinEfficiency
	v := benchmarks.Value{Name: "overlap_efficiency", Value: devcheck.Round(eff), Unit: "ratio", Threshold: &lim, Op: ">=", Status: benchmarks.StatusPass}
	if eff < lim {
		v.Status = benchmarks.StatusFail
		r.fail("OverlapBelowThreshold", "", "GEMM+all-reduce together took %.3g ms, alone %.3g + %.3g ms: efficiency %.3g < %.3g",
			out.Together*1e3, out.GEMMAlone*1e3, out.AllReduceAlone*1e3, eff, lim)
	}
	r.values = append(r.values, v,
		benchmarks.Value{Name: "gemm_alone_ms", Value: devcheck.Round(out.GEMMAlone * 1e3), Unit: "ms", Status: benchmarks.StatusPass},
		benchmarks.Value{Name: "allreduce_alone_ms", Value: devcheck.Round(out.AllReduceAlone * 1e3), Unit: "ms", Status: benchmarks.StatusPass},
		benchmarks.Value{Name: "together_ms", Value: devcheck.Round(out.Together * 1e3), Unit: "ms", Status: benchmarks.StatusPass})
	return r.done(fmt.Sprintf("%d devices: GEMM and all-reduce overlap with efficiency %.3g", len(devs), eff))
}

// Validate reports out-of-range settings, naming the key.
func (s *OverlapSettings) Validate() error {
	switch DType(s.DType) {
	case BF16, FP16, TF32, FP8:
	default:
		return benchmarks.BadSetting("dtype", "%q: want bf16, fp16, tf32 or fp8", s.DType)
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
