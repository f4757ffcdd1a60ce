package ascend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/acl"
	"github.com/vigil-hpc/vigil/cgo/hccl"
)

// Collective runs an HCCL collective (all-reduce, all-gather, all-to-all)
// over float32 buffers: one communicator per device (HcclCommInitAll), one
// OS thread per device, the slowest rank's stream time is the operation's
// time.
func (n *aclNode) Collective(ctx context.Context, in device.CollectiveInput) (device.CollectiveOutput, error) {
	var out device.CollectiveOutput
	switch in.Op {
	case devcheck.AllReduce, devcheck.AllGather, devcheck.AllToAll:
	default:
		return out, fmt.Errorf("%w: %s on Ascend", device.ErrUnsupported, in.Op)
	}
	hc, err := n.hcclLib()
	if err != nil {
		return out, err
	}
	out.Library = hc.Path()
	// HCCL sets devices on the calling thread: keep that thread to itself.
	runtime.LockOSThread()
	comms, err := hc.CommInitAll(in.Devices)
	runtime.UnlockOSThread()
	if err != nil {
		return out, err
	}
	nr := len(in.Devices)
	secs := make([]float64, nr)
	outputs := make([][]float32, nr)
	errs := make([]error, nr)
	var wg sync.WaitGroup
	for r, dev := range in.Devices {
		wg.Add(1)
		go func(r, dev int) {
			defer wg.Done()
			rk := collRank{n: n, hc: hc, comm: comms[r], in: in, r: r}
			errs[r] = n.onDevice(dev, func(s acl.Stream) (err error) {
				// Each rank's communicator is destroyed on its own device's thread.
				defer func() { err = errors.Join(err, hc.CommDestroy(rk.comm)) }()
				secs[r], outputs[r], err = rk.run(s)
				return err
			})
		}(r, dev)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return out, fmt.Errorf("%w: %v", devcheck.ErrHung, ctx.Err())
	}
	for r, e := range errs {
		if e != nil {
			return out, fmt.Errorf("%s: %w", devName(in.Devices[r]), e)
		}
	}
	for _, s := range secs {
		out.Seconds = max(out.Seconds, s)
	}
	if in.Inputs != nil {
		out.Outputs = outputs
	}
	return out, nil
}

// collRank is rank r of a collective, run on its own device's thread.
type collRank struct {
	n    *aclNode
	hc   *hccl.Lib
	comm hccl.Comm
	in   device.CollectiveInput
	r    int
}

// run fills the send buffer (the rank's input, or zeros), times the
// collective on s and reads the receive buffer back when there are inputs.
// It returns the seconds of one operation and the received values. The
// communicator stays the caller's.
func (rk collRank) run(s acl.Stream) (sec float64, output []float32, err error) {
	n, in := rk.n, rk.in
	recvCount := in.Count
	if in.Op == devcheck.AllGather {
		recvCount = in.Count * len(in.Devices)
	}
	b := &buffers{rt: n.rt}
	defer func() { err = errors.Join(err, b.free()) }()
	host := b.hostMem(4 * recvCount)
	send, recv := b.device(4*in.Count), b.device(4*recvCount)
	if b.err != nil {
		return 0, nil, b.err
	}
	hb := acl.HostBytes(host, 4*recvCount)
	if in.Inputs != nil {
		for i, v := range in.Inputs[rk.r] {
			binary.LittleEndian.PutUint32(hb[4*i:], math.Float32bits(v))
		}
	} else {
		clear(hb[:4*in.Count])
	}
	if err := n.rt.Memcpy(send, host, 4*in.Count, acl.HostToDevice); err != nil {
		return 0, nil, err
	}
	op := func() error {
		switch in.Op {
		case devcheck.AllGather:
			return rk.hc.AllGather(send, recv, in.Count, hccl.Float32, rk.comm, s.Ptr())
		case devcheck.AllToAll: // Count/n elements to each rank
			return rk.hc.AllToAll(send, recv, in.Count/len(in.Devices), hccl.Float32, rk.comm, s.Ptr())
		}
		return rk.hc.AllReduce(send, recv, in.Count, hccl.Float32, hccl.Sum, rk.comm, s.Ptr())
	}
	if sec, err = rk.time(s, op); err != nil || in.Inputs == nil {
		return sec, nil, err
	}
	if err := n.rt.Memcpy(host, recv, 4*recvCount, acl.DeviceToHost); err != nil {
		return 0, nil, err
	}
	output = make([]float32, recvCount)
	for i := range output {
		output[i] = math.Float32frombits(binary.LittleEndian.Uint32(hb[4*i:]))
	}
	return sec, output, nil
}

// time runs op in.Warmup times untimed, then in.Iters times (at least
// once) timed with events on s; it returns the seconds of one.
func (rk collRank) time(s acl.Stream, op func() error) (sec float64, err error) {
	n, in := rk.n, rk.in
	for i := 0; i < in.Warmup; i++ {
		if err := op(); err != nil {
			return 0, err
		}
	}
	if err := n.rt.SynchronizeStream(s); err != nil {
		return 0, err
	}
	tm, err := newTimer(n.rt)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, tm.close()) }()
	iters := max(in.Iters, 1)
	total, err := tm.time(s, func() error {
		for i := 0; i < iters; i++ {
			if err := op(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return total / float64(iters), nil
}
