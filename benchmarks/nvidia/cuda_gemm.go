package nvidia

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"math"

	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/cublas"
	"github.com/vigil-hpc/vigil/cgo/cuda"
)

// gemmWorkspace is the cuBLASLt workspace (32 MiB, what NVIDIA recommends
// for Hopper).
const gemmWorkspace = 32 << 20

// gemmTypes maps a DType to cuBLASLt types and element sizes (input, output).
func gemmTypes(dt device.DType) (in, out cublas.DataType, comp cublas.ComputeType, inSize, outSize int) {
	switch dt {
	case device.FP16:
		return cublas.R16F, cublas.R16F, cublas.Compute32F, 2, 2
	case device.TF32:
		return cublas.R32F, cublas.R32F, cublas.Compute32FFastTF32, 4, 4
	case device.FP8:
		return cublas.R8FE4M3, cublas.R16BF, cublas.Compute32F, 1, 2
	}
	return cublas.R16BF, cublas.R16BF, cublas.Compute32F, 2, 2
}

// encode converts host float32 values into the device's input type.
func encode(dt device.DType, x []float32) []byte {
	_, _, _, size, _ := gemmTypes(dt)
	out := make([]byte, len(x)*size)
	switch dt {
	case device.FP8:
		for i, v := range x {
			out[i] = e4m3FromF32(v)
		}
	case device.TF32:
		for i, v := range x {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case device.FP16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(out[2*i:], devcheck.F16FromF32(v))
		}
	default:
		for i, v := range x {
			binary.LittleEndian.PutUint16(out[2*i:], devcheck.BF16FromF32(v))
		}
	}
	return out
}

// decode converts the output type back to float32.
func decodeOut(dt device.DType, b []byte) []float32 {
	_, _, _, _, size := gemmTypes(dt)
	out := make([]float32, len(b)/size)
	for i := range out {
		switch {
		case dt == device.TF32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		case dt == device.FP16:
			out[i] = devcheck.F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		default:
			out[i] = devcheck.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	}
	return out
}

// gemmPlan prepares a cuBLASLt plan for dt and sizes on the current device.
func (n *cudaNode) gemmPlan(c *cleanup, dt device.DType, m, nn, k int) (*cublas.Plan, error) {
	blas, err := n.cublas()
	if err != nil {
		return nil, err
	}
	h, err := blas.Create()
	if err != nil {
		return nil, err
	}
	c.add(func() error { return blas.Destroy(h) })
	in, out, comp, _, _ := gemmTypes(dt)
	p, err := blas.NewPlan(h, cublas.Spec{M: m, N: nn, K: k, A: in, B: in, D: out, Compute: comp, Scale: cublas.R32F, Workspace: gemmWorkspace})
	if errors.Is(err, cublas.ErrNoAlgorithm) || errors.Is(err, cublas.ErrUnsupported) {
		return nil, fmt.Errorf("%w: %s GEMM with %s: %v", device.ErrUnsupported, dt, blas.Path(), err)
	}
	if err != nil {
		return nil, err
	}
	c.add(func() error { p.Close(); return nil })
	return p, nil
}

func (n *cudaNode) GEMM(ctx context.Context, dev int, in device.GEMMInput) (out device.GEMMOutput, err error) {
	err = n.onDevice(dev, func() (err error) {
		var c cleanup
		defer c.run(&err)
		_, _, _, inSize, outSize := gemmTypes(in.DType)
		dA, err := n.alloc(&c, in.M*in.K*inSize)
		if err != nil {
			return err
		}
		dB, err := n.alloc(&c, in.N*in.K*inSize)
		if err != nil {
			return err
		}
		dD, err := n.alloc(&c, in.M*in.N*outSize)
		if err != nil {
			return err
		}
		ws, err := n.alloc(&c, gemmWorkspace)
		if err != nil {
			return err
		}
		if len(in.A) > 0 {
			if err := n.drv.CopyHtoD(dA, n.encodeCached(in.DType, in.A)); err != nil {
				return err
			}
			if err := n.drv.CopyHtoD(dB, n.encodeCached(in.DType, in.Bt)); err != nil {
				return err
			}
		}
		s, err := n.stream(&c)
		if err != nil {
			return err
		}
		start, stop, err := n.events(&c)
		if err != nil {
			return err
		}
		plan, err := n.gemmPlan(&c, in.DType, in.M, in.N, in.K)
		if err != nil {
			return err
		}
		blas, _ := n.cublas()
		out.Library = blas.Path()
		gemm := func(times int) func() error {
			return func() error {
				for i := 0; i < times; i++ {
					if err := plan.Run(uint64(dA), uint64(dB), uint64(dD), uint64(ws), gemmWorkspace, s.Ptr()); err != nil {
						return err
					}
				}
				return nil
			}
		}
		if out.Seconds, out.Iters, err = n.timeGEMMs(start, stop, s, gemm, in); err != nil {
			return err
		}
		if in.Readback {
			buf := make([]byte, in.M*in.N*outSize)
			if err := n.drv.CopyDtoH(buf, dD); err != nil {
				return err
			}
			out.D = decodeOut(in.DType, buf)
		}
		return nil
	})
	return out, err
}

// timeGEMMs runs in.Warmup GEMMs untimed, times one, then times as many as
// fill in.MinTime (at most in.MaxIters); it returns the seconds of one GEMM
// and how many were timed. gemm(k) queues k GEMMs on s.
func (n *cudaNode) timeGEMMs(start, stop cuda.Event, s cuda.Stream, gemm func(int) func() error, in device.GEMMInput) (float64, int, error) {
	if err := gemm(in.Warmup)(); err != nil {
		return 0, 0, err
	}
	one, err := n.timeEvents(start, stop, s, gemm(1))
	if err != nil {
		return 0, 0, err
	}
	iters := 1
	if one > 0 {
		iters = int(math.Ceil(in.MinTime.Seconds() / one))
	}
	iters = max(1, min(iters, in.MaxIters))
	total, err := n.timeEvents(start, stop, s, gemm(iters))
	if err != nil {
		return 0, 0, err
	}
	return total / float64(iters), iters, nil
}
