package ascend

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/cgo/acl"
)

// fillWords are the fp16 elements the zero kernel clears to prove kernels
// compute; fp16One is 1.0 in fp16, what they hold before.
const (
	fillWords = 1 << 20
	fp16One   = 0x3c00
)

// Launch times count launches of aclnnInplaceZero on a one-element fp16
// tensor: the smallest AI Core operator the operator API runs, and the
// path every framework operator takes (the two-phase call, then the
// kernel on the stream). Each launch is timed by two ACL events around it
// (EventUs) and by the host from the first phase to aclrtSynchronizeStream
// (WallUs). Then a 1 Mi-element tensor of ones is zeroed, read back and
// checked (FillOK).
func (n *aclNode) Launch(ctx context.Context, dev int, count int) (device.LaunchOutput, error) {
	var out device.LaunchOutput
	ops, err := n.opAPI()
	if err != nil {
		return out, err
	}
	err = n.onDevice(dev, func(s acl.Stream) (err error) {
		b := &buffers{rt: n.rt}
		defer func() { err = errors.Join(err, b.free()) }()
		host, buf := b.hostMem(2*fillWords), b.device(2*fillWords)
		if b.err != nil {
			return b.err
		}
		z := &zeroOp{aclnnOp{rt: n.rt, ops: ops, s: s}}
		defer func() { err = errors.Join(err, z.close()) }()
		one, err := z.tensor(1, buf)
		if err != nil {
			return err
		}
		all, err := z.tensor(fillWords, buf)
		if err != nil {
			return err
		}
		if err := n.timeLaunches(ctx, s, func() error { return z.launch(one) }, count, &out); err != nil {
			return err
		}
		out.FillOK, err = n.zeroed(s, z, all, host, buf)
		return err
	})
	return out, err
}

// timeLaunches warms launch up, then times it count times by events and
// count times by the host's clock.
func (n *aclNode) timeLaunches(ctx context.Context, s acl.Stream, launch func() error, count int, out *device.LaunchOutput) (err error) {
	for i := 0; i < 20; i++ { // warm up: the first launches load the kernel
		if err := launch(); err != nil {
			return err
		}
	}
	if err := n.rt.SynchronizeStream(s); err != nil {
		return err
	}
	tm, err := newTimer(n.rt)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tm.close()) }()
	for i := 0; i < count && ctx.Err() == nil; i++ {
		sec, err := tm.time(s, launch)
		if err != nil {
			return err
		}
		out.EventUs = append(out.EventUs, sec*1e6)
	}
	for i := 0; i < count && ctx.Err() == nil; i++ {
		t0 := time.Now()
		if err := launch(); err != nil {
			return err
		}
		if err := n.rt.SynchronizeStream(s); err != nil {
			return err
		}
		out.WallUs = append(out.WallUs, float64(time.Since(t0).Nanoseconds())/1e3)
	}
	return ctx.Err()
}

// zeroed fills buf with ones, zeroes the tensor all over it and reports
// whether every element came back zero.
func (n *aclNode) zeroed(s acl.Stream, z *zeroOp, all acl.Tensor, host, buf uint64) (bool, error) {
	hb := acl.HostBytes(host, 2*fillWords)
	for i := 0; i < fillWords; i++ {
		binary.LittleEndian.PutUint16(hb[2*i:], fp16One)
	}
	if err := n.rt.Memcpy(buf, host, 2*fillWords, acl.HostToDevice); err != nil {
		return false, err
	}
	if err := z.launch(all); err != nil {
		return false, err
	}
	if err := n.rt.SynchronizeStream(s); err != nil {
		return false, err
	}
	if err := n.rt.Memcpy(host, buf, 2*fillWords, acl.DeviceToHost); err != nil {
		return false, err
	}
	for _, c := range hb {
		if c != 0 {
			return false, nil
		}
	}
	return true, nil
}

// zeroOp is aclnnInplaceZero on a stream.
type zeroOp struct{ aclnnOp }

// tensor describes a one-dimensional fp16 tensor of words elements at data.
func (z *zeroOp) tensor(words int, data uint64) (acl.Tensor, error) {
	t, err := z.ops.CreateTensor([]int64{int64(words)}, acl.Float16, data)
	if err == nil {
		z.ts = append(z.ts, t)
	}
	return t, err
}

// launch queues t = 0: both phases, as a framework calls them, since an
// executor serves one launch.
func (z *zeroOp) launch(t acl.Tensor) error {
	size, ex, err := z.ops.ZeroWorkspace(t)
	if err != nil {
		return err
	}
	ws, err := z.workspace(size)
	if err != nil {
		return err
	}
	if size == 0 {
		ws = 0
	}
	return z.ops.Zero(ws, size, ex, z.s)
}
