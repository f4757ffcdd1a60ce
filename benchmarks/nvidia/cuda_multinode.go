package nvidia

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/cgo/nccl"
)

// This node's part of one all-reduce over a communicator spanning the
// job's nodes is device.MultinodeInput, what it measured
// device.MultinodeOutput: for NCCL the ID is the 128 bytes of an
// ncclUniqueId (nccl.UniqueID, made once for the job by NewUniqueID and
// handed to every node's RunRanks), and Seconds the mean host time of one
// all-reduce, issue to all of this node's streams synchronized (as
// nccl-tests times it).

// commGuard holds the communicators being made and aborts them all when ctx
// ends first, which ends NCCL's waits for ranks that never come. Those not
// aborted are destroyed by the cleanup.
type commGuard struct {
	mu      sync.Mutex
	comms   []nccl.Comm
	aborted bool
}

func (g *commGuard) add(c nccl.Comm) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.comms = append(g.comms, c)
}

// watch aborts the communicators when ctx ends before stop is closed.
func (g *commGuard) watch(ctx context.Context, lib *nccl.Lib, stop <-chan struct{}) {
	select {
	case <-stop:
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		g.aborted = true
		for _, c := range g.comms {
			lib.CommAbort(c)
		}
	}
}

// destroy frees the communicators, unless they were aborted.
func (g *commGuard) destroy(lib *nccl.Lib) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.aborted {
		return nil
	}
	var first error
	for _, c := range g.comms {
		if err := lib.CommDestroy(c); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func setPhase(p *atomic.Value, s string) {
	if p != nil {
		p.Store(s)
	}
}

// initRanks joins this node's ranks to the communicator in one group, each
// with its device's context current, as NCCL requires of one thread
// driving several GPUs.
func (n *cudaNode) initRanks(lib *nccl.Lib, g *commGuard, in device.MultinodeInput) ([]collRank, error) {
	var id nccl.UniqueID
	if len(in.ID) != len(id) {
		return nil, fmt.Errorf("communicator id of %d bytes, want %d", len(in.ID), len(id))
	}
	copy(id[:], in.ID)
	ranks := make([]collRank, len(in.Devices))
	if err := lib.GroupStart(); err != nil {
		return nil, err
	}
	for i, d := range in.Devices {
		if err := n.drv.SetCurrent(n.ctxs[d]); err != nil {
			lib.GroupEnd()
			return nil, err
		}
		c, err := lib.CommInitRank(in.NRanks, id, in.FirstRank+i)
		if err != nil {
			lib.GroupEnd()
			return nil, err
		}
		g.add(c)
		ranks[i] = collRank{dev: d, comm: c}
	}
	return ranks, lib.GroupEnd()
}

// AllReduceMultinode joins this node's GPUs to the communicator in.ID
// names and times all-reduces over it. NCCL waits inside until every rank
// of every node has joined and contributed; when ctx ends first the
// communicators are aborted.
func (n *cudaNode) AllReduceMultinode(ctx context.Context, in device.MultinodeInput) (out device.MultinodeOutput, err error) {
	lib, err := n.nccl()
	if err != nil {
		return out, err
	}
	out.Library = lib.Path()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var c cleanup
	defer c.run(&err)
	g := &commGuard{}
	stop := make(chan struct{})
	defer close(stop)
	go g.watch(ctx, lib, stop)
	c.add(func() error { return g.destroy(lib) })
	setPhase(in.Phase, "init")
	ranks, err := n.initRanks(lib, g, in)
	if err != nil {
		return out, err
	}
	for i := range ranks {
		if err := n.drv.SetCurrent(n.ctxs[ranks[i].dev]); err != nil {
			return out, err
		}
		if ranks[i].s, err = n.stream(&c); err != nil {
			return out, err
		}
		if ranks[i].send, err = n.alloc(&c, 4*in.Count); err != nil {
			return out, err
		}
		if ranks[i].recv, err = n.alloc(&c, 4*in.Count); err != nil {
			return out, err
		}
	}
	round := func(count int) error {
		if err := issue(lib, device.AllReduce, ranks, count); err != nil {
			return err
		}
		return n.syncAll(ranks)
	}
	if in.Inputs != nil {
		setPhase(in.Phase, "verification all-reduce")
		if out.Outputs, err = n.verifyMultinode(ranks, in.Inputs, round); err != nil {
			return out, err
		}
	}
	setPhase(in.Phase, "timed all-reduce")
	for i := 0; i < in.Warmup; i++ {
		if err := round(in.Count); err != nil {
			return out, err
		}
	}
	t0 := time.Now()
	for i := 0; i < max(1, in.Iters); i++ {
		if err := round(in.Count); err != nil {
			return out, err
		}
	}
	out.Seconds = time.Since(t0).Seconds() / float64(max(1, in.Iters))
	return out, nil
}

// verifyMultinode uploads inputs, runs one all-reduce of their length and
// reads the results back.
func (n *cudaNode) verifyMultinode(ranks []collRank, inputs [][]float32, round func(int) error) ([][]float32, error) {
	count := len(inputs[0])
	for i, rk := range ranks {
		if err := n.drv.SetCurrent(n.ctxs[rk.dev]); err != nil {
			return nil, err
		}
		if err := n.drv.CopyHtoD(rk.send, f32bytes(inputs[i])); err != nil {
			return nil, err
		}
	}
	if err := round(count); err != nil {
		return nil, err
	}
	var outs [][]float32
	for _, rk := range ranks {
		if err := n.drv.SetCurrent(n.ctxs[rk.dev]); err != nil {
			return nil, err
		}
		b := make([]byte, 4*count)
		if err := n.drv.CopyDtoH(b, rk.recv); err != nil {
			return nil, err
		}
		f := make([]float32, count)
		for i := range f {
			f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		outs = append(outs, f)
	}
	return outs, nil
}

func f32bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}
