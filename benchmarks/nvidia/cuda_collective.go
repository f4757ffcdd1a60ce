package nvidia

import (
	"context"
	"encoding/binary"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"math"
	"runtime"
	"time"

	"github.com/vigil-hpc/vigil/cgo/cuda"
	"github.com/vigil-hpc/vigil/cgo/nccl"
)

// collRank is one rank's resources of one communicator.
type collRank struct {
	dev        int
	comm       nccl.Comm
	s          cuda.Stream
	send, recv cuda.DevicePtr
}

// setupColl creates k communicators over devs with buffers for op.
func (n *cudaNode) setupColl(c *cleanup, lib *nccl.Lib, op device.CollOp, devs []int, count, k int) ([][]collRank, error) {
	sendN, recvN := count, count
	if op == device.AllGather {
		recvN = count * len(devs)
	}
	var all [][]collRank
	for j := 0; j < k; j++ {
		comms, err := lib.CommInitAll(devs)
		if err != nil {
			return nil, err
		}
		for _, cm := range comms {
			cm := cm
			c.add(func() error { return lib.CommDestroy(cm) })
		}
		ranks := make([]collRank, len(devs))
		for r, d := range devs {
			ranks[r] = collRank{dev: d, comm: comms[r]}
			if err := n.drv.SetCurrent(n.ctxs[d]); err != nil {
				return nil, err
			}
			var err error
			if ranks[r].s, err = n.stream(c); err != nil {
				return nil, err
			}
			if ranks[r].send, err = n.alloc(c, 4*sendN); err != nil {
				return nil, err
			}
			if ranks[r].recv, err = n.alloc(c, 4*recvN); err != nil {
				return nil, err
			}
		}
		all = append(all, ranks)
	}
	return all, nil
}

// issue queues one op on every rank of one communicator, as one group.
func issue(lib *nccl.Lib, op device.CollOp, ranks []collRank, count int) error {
	if err := lib.GroupStart(); err != nil {
		return err
	}
	var err error
	nr := len(ranks)
	for r, rk := range ranks {
		switch op {
		case device.AllReduce:
			err = lib.AllReduce(uint64(rk.send), uint64(rk.recv), count, nccl.Float32, nccl.Sum, rk.comm, rk.s.Ptr())
		case device.AllGather:
			err = lib.AllGather(uint64(rk.send), uint64(rk.recv), count, nccl.Float32, rk.comm, rk.s.Ptr())
		case device.AllToAll:
			chunk := count / nr
			for peer := 0; peer < nr && err == nil; peer++ {
				off := uint64(4 * chunk * peer)
				if err = lib.Send(uint64(rk.send)+off, chunk, nccl.Float32, peer, rk.comm, rk.s.Ptr()); err == nil {
					err = lib.Recv(uint64(rk.recv)+off, chunk, nccl.Float32, peer, rk.comm, rk.s.Ptr())
				}
			}
		}
		if err != nil {
			lib.GroupEnd()
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return lib.GroupEnd()
}

func (n *cudaNode) syncAll(sets ...[]collRank) error {
	for _, set := range sets {
		for _, rk := range set {
			if err := n.drv.SetCurrent(n.ctxs[rk.dev]); err != nil {
				return err
			}
			if err := n.drv.StreamSynchronize(rk.s); err != nil {
				return err
			}
		}
	}
	return nil
}

func (n *cudaNode) Collective(ctx context.Context, in device.CollectiveInput) (out device.CollectiveOutput, err error) {
	lib, err := n.nccl()
	if err != nil {
		return out, err
	}
	out.Library = lib.Path()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var c cleanup
	defer c.run(&err)
	k := max(1, in.Concurrent)
	sets, err := n.setupColl(&c, lib, in.Op, in.Devices, in.Count, k)
	if err != nil {
		return out, err
	}
	if in.Inputs != nil {
		for r, rk := range sets[0] {
			if err := n.drv.SetCurrent(n.ctxs[rk.dev]); err != nil {
				return out, err
			}
			b := make([]byte, 4*len(in.Inputs[r]))
			for i, v := range in.Inputs[r] {
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
			}
			if err := n.drv.CopyHtoD(rk.send, b); err != nil {
				return out, err
			}
		}
	}
	round := func() error {
		for _, set := range sets {
			if err := issue(lib, in.Op, set, in.Count); err != nil {
				return err
			}
		}
		return n.syncAll(sets...)
	}
	for i := 0; i < in.Warmup; i++ {
		if err := round(); err != nil {
			return out, err
		}
	}
	t0 := time.Now()
	for i := 0; i < max(1, in.Iters); i++ {
		if err := round(); err != nil {
			return out, err
		}
	}
	out.Seconds = time.Since(t0).Seconds() / float64(max(1, in.Iters))
	if in.Inputs != nil {
		recvN := in.Count
		if in.Op == device.AllGather {
			recvN *= len(in.Devices)
		}
		for _, rk := range sets[0] {
			if err := n.drv.SetCurrent(n.ctxs[rk.dev]); err != nil {
				return out, err
			}
			b := make([]byte, 4*recvN)
			if err := n.drv.CopyDtoH(b, rk.recv); err != nil {
				return out, err
			}
			f := make([]float32, recvN)
			for i := range f {
				f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
			out.Outputs = append(out.Outputs, f)
		}
	}
	return out, nil
}
