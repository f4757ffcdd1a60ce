package ascend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/acl"
)

// encode writes vals as fp16 or bf16 little-endian into dst.
func encode(dt device.DType, vals []float32, dst []byte) {
	for i, v := range vals {
		binary.LittleEndian.PutUint16(dst[2*i:], encodeOne(dt, v))
	}
}

func encodeOne(dt device.DType, v float32) uint16 {
	if dt == device.FP16 {
		return devcheck.F16FromF32(v)
	}
	return devcheck.BF16FromF32(v)
}

func decodeOne(dt device.DType, h uint16) float32 {
	if dt == device.FP16 {
		return devcheck.F16ToF32(h)
	}
	return devcheck.BF16ToF32(h)
}

// GEMM computes D = A·Bᵀ with aclnnMatmul: A is uploaded m×k row-major,
// B = Btᵀ k×n row-major, C = A·B m×n row-major comes back and is returned
// column-major as device.GEMMOutput.D.
func (n *aclNode) GEMM(ctx context.Context, dev int, in device.GEMMInput) (device.GEMMOutput, error) {
	var out device.GEMMOutput
	if in.DType != device.FP16 && in.DType != device.BF16 {
		return out, fmt.Errorf("%w: %s on Ascend", device.ErrUnsupported, in.DType)
	}
	ops, err := n.opAPI()
	if err != nil {
		return out, err
	}
	m, nn, k := in.M, in.N, in.K
	err = n.onDevice(dev, func(s acl.Stream) (err error) {
		b := &buffers{rt: n.rt}
		defer func() { err = errors.Join(err, b.free()) }()
		maxBytes := 2 * max(m*k, k*nn, m*nn)
		host := b.hostMem(maxBytes)
		dA, dB, dC := b.device(2*m*k), b.device(2*k*nn), b.device(2*m*nn)
		if b.err != nil {
			return b.err
		}
		hb := acl.HostBytes(host, maxBytes)
		if err := n.uploadGEMM(in, host, hb, dA, dB); err != nil {
			return err
		}
		mm := &matmul{aclnnOp{rt: n.rt, ops: ops, s: s}}
		defer func() { err = errors.Join(err, mm.close()) }()
		if err := mm.tensors(in, dA, dB, dC); err != nil {
			return err
		}
		if out.Seconds, out.Iters, err = n.timeMatmuls(ctx, s, mm, in); err != nil {
			return err
		}
		out.Library = ops.Path()
		if in.Readback {
			if err := n.rt.Memcpy(host, dC, 2*m*nn, acl.DeviceToHost); err != nil {
				return err
			}
			out.D = make([]float32, m*nn)
			for i := 0; i < m; i++ {
				for j := 0; j < nn; j++ {
					out.D[i+j*m] = decodeOne(in.DType, binary.LittleEndian.Uint16(hb[2*(i*nn+j):]))
				}
			}
		}
		return nil
	})
	return out, err
}

// uploadGEMM encodes A (m×k) and B = Btᵀ (k×n, row-major) through the
// staging buffer host (hb its bytes) into dA and dB.
func (n *aclNode) uploadGEMM(in device.GEMMInput, host uint64, hb []byte, dA, dB uint64) error {
	m, nn, k := in.M, in.N, in.K
	encode(in.DType, in.A, hb)
	if err := n.rt.Memcpy(dA, host, 2*m*k, acl.HostToDevice); err != nil {
		return err
	}
	// B = Btᵀ, k×n row-major, encoded straight into the staging buffer.
	for j := 0; j < nn; j++ {
		for l := 0; l < k; l++ {
			binary.LittleEndian.PutUint16(hb[2*(l*nn+j):], encodeOne(in.DType, in.Bt[j*k+l]))
		}
	}
	return n.rt.Memcpy(dB, host, 2*k*nn, acl.HostToDevice)
}

// timeMatmuls runs in.Warmup matmuls (at least one) untimed, times one,
// then times as many as fill in.MinTime (at most in.MaxIters); it returns
// the seconds of one matmul and how many were timed.
func (n *aclNode) timeMatmuls(ctx context.Context, s acl.Stream, mm *matmul, in device.GEMMInput) (sec float64, iters int, err error) {
	for i := 0; i < max(in.Warmup, 1); i++ {
		if err := mm.launch(); err != nil {
			return 0, 0, err
		}
	}
	if err := n.rt.SynchronizeStream(s); err != nil {
		return 0, 0, err
	}
	tm, err := newTimer(n.rt)
	if err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, tm.close()) }()
	one, err := tm.time(s, mm.launch)
	if err != nil {
		return 0, 0, err
	}
	iters = in.MaxIters
	if one > 0 {
		iters = int(math.Ceil(in.MinTime.Seconds() / one))
	}
	iters = max(1, min(iters, in.MaxIters))
	total, err := tm.time(s, func() error {
		for i := 0; i < iters; i++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := mm.launch(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return total / float64(iters), iters, nil
}

// aclnnOp is one aclnn operator on a stream: its tensors and the
// workspace, grown as the operator asks.
type aclnnOp struct {
	rt     *acl.Lib
	ops    *acl.Ops
	s      acl.Stream
	ts     []acl.Tensor
	ws     uint64
	wsSize uint64
}

// workspace returns a workspace of at least size bytes, replacing a
// smaller one.
func (o *aclnnOp) workspace(size uint64) (uint64, error) {
	if size > o.wsSize {
		if o.ws != 0 {
			if err := o.rt.Free(o.ws); err != nil {
				return 0, err
			}
			o.ws, o.wsSize = 0, 0
		}
		ws, err := o.rt.Malloc(int(size))
		if err != nil {
			return 0, err
		}
		o.ws, o.wsSize = ws, size
	}
	return o.ws, nil
}

// close frees the workspace and destroys the tensors.
func (o *aclnnOp) close() error {
	var err error
	if o.ws != 0 {
		err = o.rt.Free(o.ws)
	}
	for _, t := range o.ts {
		err = errors.Join(err, o.ops.DestroyTensor(t))
	}
	return err
}

// matmul is one aclnnMatmul on a stream over three tensors.
type matmul struct{ aclnnOp }

// tensors describes A (m×k), B (k×n) and C (m×n) at dA, dB and dC.
func (mm *matmul) tensors(in device.GEMMInput, dA, dB, dC uint64) error {
	dt := acl.Float16
	if in.DType == device.BF16 {
		dt = acl.BF16
	}
	m, nn, k := int64(in.M), int64(in.N), int64(in.K)
	for _, x := range []struct {
		dims []int64
		data uint64
	}{{[]int64{m, k}, dA}, {[]int64{k, nn}, dB}, {[]int64{m, nn}, dC}} {
		t, err := mm.ops.CreateTensor(x.dims, dt, x.data)
		if err != nil {
			return err
		}
		mm.ts = append(mm.ts, t)
	}
	return nil
}

// launch queues one matmul. An executor serves one launch: each matmul
// asks for a new one.
func (mm *matmul) launch() error {
	size, ex, err := mm.ops.MatmulWorkspace(mm.ts[0], mm.ts[1], mm.ts[2], acl.KeepDType)
	if err != nil {
		return err
	}
	ws, err := mm.workspace(size)
	if err != nil {
		return err
	}
	return mm.ops.Matmul(ws, size, ex, mm.s)
}
