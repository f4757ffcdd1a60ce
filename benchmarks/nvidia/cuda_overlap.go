package nvidia

import (
	"context"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"runtime"
	"time"

	"github.com/vigil-hpc/vigil/cgo/cublas"
	"github.com/vigil-hpc/vigil/cgo/cuda"
)

// onePattern is a 32-bit fill that reads as 1.0 in each input type.
func onePattern(dt device.DType) uint32 {
	switch dt {
	case device.FP16:
		return 0x3c003c00
	case device.TF32:
		return 0x3f800000
	case device.FP8:
		return 0x38383838
	}
	return 0x3f803f80
}

func (n *cudaNode) Overlap(ctx context.Context, in device.OverlapInput) (out device.OverlapOutput, err error) {
	lib, err := n.nccl()
	if err != nil {
		return out, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var c cleanup
	defer c.run(&err)
	gs, err := n.overlapGEMMs(&c, in)
	if err != nil {
		return out, err
	}
	sets, err := n.setupColl(&c, lib, device.AllReduce, in.Devices, in.Count, 1)
	if err != nil {
		return out, err
	}
	gemms := func() error {
		for _, gr := range gs {
			if err := n.drv.SetCurrent(n.ctxs[gr.dev]); err != nil {
				return err
			}
			for i := 0; i < in.GEMMs; i++ {
				if err := gr.plan.Run(uint64(gr.a), uint64(gr.b), uint64(gr.d), uint64(gr.ws), gemmWorkspace, gr.s.Ptr()); err != nil {
					return err
				}
			}
		}
		return nil
	}
	allreduces := func() error {
		for i := 0; i < in.AllReduces; i++ {
			if err := issue(lib, device.AllReduce, sets[0], in.Count); err != nil {
				return err
			}
		}
		return nil
	}
	gemmSync := func() error {
		for _, gr := range gs {
			if err := n.drv.SetCurrent(n.ctxs[gr.dev]); err != nil {
				return err
			}
			if err := n.drv.StreamSynchronize(gr.s); err != nil {
				return err
			}
		}
		return nil
	}
	timed := func(fs ...func() error) (float64, error) {
		t0 := time.Now()
		for _, f := range fs {
			if err := f(); err != nil {
				return 0, err
			}
		}
		return time.Since(t0).Seconds(), nil
	}
	arSync := func() error { return n.syncAll(sets...) }
	// Warm up both, then time each alone and both together.
	if _, err := timed(gemms, allreduces, gemmSync, arSync); err != nil {
		return out, err
	}
	if out.GEMMAlone, err = timed(gemms, gemmSync); err != nil {
		return out, err
	}
	if out.AllReduceAlone, err = timed(allreduces, arSync); err != nil {
		return out, err
	}
	out.Together, err = timed(gemms, allreduces, gemmSync, arSync)
	return out, err
}

// gemmRank is one device's GEMM of an overlap measurement.
type gemmRank struct {
	dev         int
	s           cuda.Stream
	plan        *cublas.Plan
	a, b, d, ws cuda.DevicePtr
}

// overlapGEMMs prepares a stream, buffers (inputs filled with ones) and a
// plan for in.GEMM on each of in.Devices.
func (n *cudaNode) overlapGEMMs(c *cleanup, in device.OverlapInput) ([]gemmRank, error) {
	g := in.GEMM
	_, _, _, inSize, outSize := gemmTypes(g.DType)
	var gs []gemmRank
	for _, d := range in.Devices {
		if err := n.drv.SetCurrent(n.ctxs[d]); err != nil {
			return nil, err
		}
		gr := gemmRank{dev: d}
		var err error
		if gr.s, err = n.stream(c); err != nil {
			return nil, err
		}
		for _, p := range []struct {
			dst   *cuda.DevicePtr
			bytes int
		}{{&gr.a, g.M * g.K * inSize}, {&gr.b, g.N * g.K * inSize}, {&gr.d, g.M * g.N * outSize}, {&gr.ws, gemmWorkspace}} {
			if *p.dst, err = n.alloc(c, p.bytes); err != nil {
				return nil, err
			}
		}
		for _, p := range []struct {
			dst   cuda.DevicePtr
			bytes int
		}{{gr.a, g.M * g.K * inSize}, {gr.b, g.N * g.K * inSize}} {
			if err := n.drv.MemsetD32Async(p.dst, onePattern(g.DType), p.bytes/4, gr.s); err != nil {
				return nil, err
			}
		}
		if gr.plan, err = n.gemmPlan(c, g.DType, g.M, g.N, g.K); err != nil {
			return nil, err
		}
		gs = append(gs, gr)
	}
	return gs, nil
}
