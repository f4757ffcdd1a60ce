package ascend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/acl"
	"github.com/vigil-hpc/vigil/cgo/hccl"
)

// overlapPhase is one round of an overlap measurement: what each rank
// runs, timed by the host from the first issue to both streams finished.
type overlapPhase struct{ setup, gemm, allReduce bool }

// rankTime is one rank's answer to a phase.
type rankTime struct {
	rank int
	sec  float64
	err  error
}

// Overlap times in.GEMMs aclnnMatmuls on a stream of each NPU's own and
// in.AllReduces HCCL all-reduces on another, alone and at once. One
// communicator per NPU (HcclCommInitAll) and one OS thread per NPU, as for
// Collective; the phases start on every NPU together, and a phase's time
// is its slowest NPU's.
func (n *aclNode) Overlap(ctx context.Context, in device.OverlapInput) (device.OverlapOutput, error) {
	var out device.OverlapOutput
	if in.GEMM.DType != device.FP16 && in.GEMM.DType != device.BF16 {
		return out, fmt.Errorf("%w: %s on Ascend", device.ErrUnsupported, in.GEMM.DType)
	}
	ops, err := n.opAPI()
	if err != nil {
		return out, err
	}
	hc, err := n.hcclLib()
	if err != nil {
		return out, err
	}
	runtime.LockOSThread()
	comms, err := hc.CommInitAll(in.Devices)
	runtime.UnlockOSThread()
	if err != nil {
		return out, err
	}
	cmds := make([]chan overlapPhase, len(in.Devices))
	res := make(chan rankTime, len(in.Devices))
	for r, dev := range in.Devices {
		cmds[r] = make(chan overlapPhase, 1)
		rk := &overlapRank{n: n, ops: ops, hc: hc, comm: comms[r], in: in}
		go rk.serve(dev, r, cmds[r], res)
	}
	defer func() {
		for _, c := range cmds {
			close(c)
		}
	}()
	run := func(p overlapPhase) (float64, error) { return overlapRound(ctx, p, cmds, res, in.Devices) }
	for _, p := range []overlapPhase{{setup: true}, {gemm: true, allReduce: true}} { // set up, warm up
		if _, err := run(p); err != nil {
			return out, err
		}
	}
	if out.GEMMAlone, err = run(overlapPhase{gemm: true}); err != nil {
		return out, err
	}
	if out.AllReduceAlone, err = run(overlapPhase{allReduce: true}); err != nil {
		return out, err
	}
	out.Together, err = run(overlapPhase{gemm: true, allReduce: true})
	return out, err
}

// overlapRound starts phase p on every rank and returns the slowest
// rank's seconds, the first rank's error, or ErrHung when ctx ends first.
func overlapRound(ctx context.Context, p overlapPhase, cmds []chan overlapPhase, res chan rankTime, devs []int) (float64, error) {
	for _, c := range cmds {
		c <- p
	}
	var worst float64
	var errs []error
	for range cmds {
		select {
		case x := <-res:
			worst = max(worst, x.sec)
			if x.err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", devName(devs[x.rank]), x.err))
			}
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: %v", devcheck.ErrHung, ctx.Err())
		}
	}
	if len(errs) > 0 {
		return 0, errs[0]
	}
	return worst, nil
}

// overlapRank is one NPU of an overlap measurement, run on its own thread.
type overlapRank struct {
	n          *aclNode
	ops        *acl.Ops
	hc         *hccl.Lib
	comm       hccl.Comm
	in         device.OverlapInput
	gs         acl.Stream // the GEMMs' stream; the all-reduces use onDevice's
	mm         *matmul
	send, recv uint64
}

// serve runs the phases sent on cmds on device dev until cmds is closed,
// answering each on res; it then frees what it set up and destroys its
// communicator on its own thread.
func (rk *overlapRank) serve(dev, r int, cmds <-chan overlapPhase, res chan<- rankTime) {
	n := rk.n
	err := n.onDevice(dev, func(cs acl.Stream) (err error) {
		defer func() { err = errors.Join(err, rk.hc.CommDestroy(rk.comm)) }()
		b := &buffers{rt: n.rt}
		defer func() { err = errors.Join(err, b.free()) }()
		var setupErr error
		for p := range cmds {
			if p.setup {
				setupErr = rk.setup(b)
				res <- rankTime{rank: r, err: setupErr}
				continue
			}
			if setupErr != nil {
				res <- rankTime{rank: r, err: setupErr}
				continue
			}
			sec, err := rk.phase(p, cs)
			res <- rankTime{rank: r, sec: sec, err: err}
		}
		return rk.close()
	})
	if err != nil {
		select { // a failure after the last phase has nobody to tell but a full channel
		case res <- rankTime{rank: r, err: err}:
		default:
		}
	}
}

// setup makes the GEMM stream, the GEMM's inputs (ones), output and
// tensors, and the all-reduce's buffers (zeros).
func (rk *overlapRank) setup(b *buffers) (err error) {
	n, g := rk.n, rk.in.GEMM
	if rk.gs, err = n.rt.CreateStream(); err != nil {
		return err
	}
	a, bt, d := b.device(2*g.M*g.K), b.device(2*g.K*g.N), b.device(2*g.M*g.N)
	rk.send, rk.recv = b.device(4*rk.in.Count), b.device(4*rk.in.Count)
	if b.err != nil {
		return b.err
	}
	one := encodeOne(g.DType, 1)
	for _, x := range []struct {
		p       uint64
		bytes   int
		pattern uint16
	}{{a, 2 * g.M * g.K, one}, {bt, 2 * g.K * g.N, one}, {rk.send, 4 * rk.in.Count, 0}} {
		if err := rk.fill(b, x.p, x.bytes, x.pattern); err != nil {
			return err
		}
	}
	rk.mm = &matmul{aclnnOp{rt: n.rt, ops: rk.ops, s: rk.gs}}
	return rk.mm.tensors(g, a, bt, d)
}

// fill writes the 16-bit pattern over bytes of device memory at p through
// a page-locked staging buffer of at most 4 MiB.
func (rk *overlapRank) fill(b *buffers, p uint64, bytes int, pattern uint16) error {
	chunk := min(bytes, 4<<20)
	host := b.hostMem(chunk)
	if b.err != nil {
		return b.err
	}
	hb := acl.HostBytes(host, chunk)
	for i := 0; i+2 <= chunk; i += 2 {
		binary.LittleEndian.PutUint16(hb[i:], pattern)
	}
	for off := 0; off < bytes; off += chunk {
		if err := rk.n.rt.Memcpy(p+uint64(off), host, min(chunk, bytes-off), acl.HostToDevice); err != nil {
			return err
		}
	}
	return nil
}

// phase issues p's GEMMs and all-reduces, waits for both streams and
// returns the host's seconds.
func (rk *overlapRank) phase(p overlapPhase, cs acl.Stream) (float64, error) {
	rt, in := rk.n.rt, rk.in
	t0 := time.Now()
	for i := 0; p.gemm && i < in.GEMMs; i++ {
		if err := rk.mm.launch(); err != nil {
			return 0, err
		}
	}
	for i := 0; p.allReduce && i < in.AllReduces; i++ {
		if err := rk.hc.AllReduce(rk.send, rk.recv, in.Count, hccl.Float32, hccl.Sum, rk.comm, cs.Ptr()); err != nil {
			return 0, err
		}
	}
	if p.gemm {
		if err := rt.SynchronizeStream(rk.gs); err != nil {
			return 0, err
		}
	}
	if p.allReduce {
		if err := rt.SynchronizeStream(cs); err != nil {
			return 0, err
		}
	}
	return time.Since(t0).Seconds(), nil
}

// close releases the GEMM's tensors and workspace and its stream.
func (rk *overlapRank) close() error {
	var err error
	if rk.mm != nil {
		err = rk.mm.close()
	}
	var zero acl.Stream
	if rk.gs != zero {
		err = errors.Join(err, rk.n.rt.DestroyStream(rk.gs))
	}
	return err
}
