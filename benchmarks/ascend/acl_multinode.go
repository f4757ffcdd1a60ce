package ascend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/acl"
	"github.com/vigil-hpc/vigil/cgo/hccl"
)

// The phases of a node's part in a multi-node all-reduce, in order; the
// node is where its least advanced rank is.
var mnPhases = []string{"init", "verification all-reduce", "timed all-reduce", "done"}

const (
	phaseInit = iota
	phaseVerify
	phaseTimed
	phaseDone
)

// progress keeps MultinodeInput.Phase at the least advanced rank's phase.
type progress struct {
	mu  sync.Mutex
	at  []int
	out *atomic.Value
}

func newProgress(k int, out *atomic.Value) *progress {
	p := &progress{at: make([]int, k), out: out}
	p.set(0, phaseInit)
	return p
}

func (p *progress) set(rank, phase int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at[rank] = phase
	least := phaseDone
	for _, a := range p.at {
		least = min(least, a)
	}
	if p.out != nil {
		p.out.Store(mnPhases[least])
	}
}

// commGuard holds the node's communicators so that each is destroyed once:
// by its rank's thread when it is done, or by abort when the node gives up
// first. hccl.h has no abort: HcclCommDestroy from another thread is what
// ends operators that wait for ranks that never come.
type commGuard struct {
	hc      *hccl.Lib
	mu      sync.Mutex
	live    map[int]hccl.Comm
	aborted bool
}

// add registers local rank i's new communicator. Once the guard has
// aborted it destroys the communicator at once and says so (false).
func (g *commGuard) add(i int, c hccl.Comm) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.aborted {
		g.hc.CommDestroy(c)
		return false
	}
	g.live[i] = c
	return true
}

// release destroys local rank i's communicator unless abort did.
func (g *commGuard) release(i int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.live[i]
	if !ok {
		return nil
	}
	delete(g.live, i)
	return g.hc.CommDestroy(c)
}

// abort destroys every live communicator from the calling thread. One
// that is busy in a host call (HCCL_E_AGAIN) stays for its rank's release.
func (g *commGuard) abort() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.aborted = true
	for i, c := range g.live {
		var he *hccl.Error
		if err := g.hc.CommDestroy(c); errors.As(err, &he) && he.Code == hccl.EAgain {
			continue
		}
		delete(g.live, i)
	}
}

// errAborted is a rank's communicator formed after the node gave up.
var errAborted = errors.New("communicator formed after the node gave up")

// AllReduceMultinode joins the node's NPUs to the communicator in.ID (an
// HcclRootInfo) names as ranks in.FirstRank, in.FirstRank+1, ...: one OS
// thread per NPU, each with its device set, calling HcclCommInitRootInfo
// at the same time (each call returns only when every rank of every node
// has joined). Each rank then runs the verification all-reduce and the
// timed ones on its own stream; the node's time is its slowest rank's.
// When ctx ends or a rank fails first, the communicators formed are
// destroyed from this thread, which ends their waits; ranks still in
// HcclCommInitRootInfo cannot be reached and end at HCCL_CONNECT_TIMEOUT.
func (n *aclNode) AllReduceMultinode(ctx context.Context, in device.MultinodeInput) (device.MultinodeOutput, error) {
	var out device.MultinodeOutput
	hc, err := n.hcclLib()
	if err != nil {
		return out, err
	}
	out.Library = hc.Path()
	var info hccl.RootInfo
	if len(in.ID) != len(info) {
		return out, fmt.Errorf("root info of %d bytes, want %d", len(in.ID), len(info))
	}
	copy(info[:], in.ID)
	k := len(in.Devices)
	g := &commGuard{hc: hc, live: map[int]hccl.Comm{}}
	p := newProgress(k, in.Phase)
	secs, outputs := make([]float64, k), make([][]float32, k)
	failed := make(chan error, k)
	var wg sync.WaitGroup
	for i, dev := range in.Devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rk := mnRank{n: n, hc: hc, g: g, p: p, in: in, info: info, i: i}
			err := n.onDevice(dev, func(s acl.Stream) (err error) {
				secs[i], outputs[i], err = rk.run(s)
				return err
			})
			if err != nil {
				failed <- fmt.Errorf("%s: %w", devName(dev), err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case err := <-failed:
		g.abort()
		return out, err
	case <-ctx.Done():
		g.abort()
		return out, fmt.Errorf("%w: %v", devcheck.ErrHung, ctx.Err())
	}
	select {
	case err := <-failed:
		return out, err
	default:
	}
	for _, s := range secs {
		out.Seconds = max(out.Seconds, s)
	}
	if in.Inputs != nil {
		out.Outputs = outputs
	}
	return out, nil
}

// mnRank is local rank i of a multi-node all-reduce, run on its own
// device's thread.
type mnRank struct {
	n    *aclNode
	hc   *hccl.Lib
	g    *commGuard
	p    *progress
	in   device.MultinodeInput
	info hccl.RootInfo
	i    int
}

// run joins the communicator, runs the verification all-reduce when there
// are inputs and times the others; it returns the seconds of one timed
// all-reduce and the verification output.
func (rk mnRank) run(s acl.Stream) (sec float64, output []float32, err error) {
	in := rk.in
	comm, err := rk.hc.CommInitRootInfo(in.NRanks, rk.info, in.FirstRank+rk.i)
	if err != nil {
		return 0, nil, err
	}
	if !rk.g.add(rk.i, comm) {
		return 0, nil, errAborted
	}
	defer func() { err = errors.Join(err, rk.g.release(rk.i)) }()
	coll := collRank{n: rk.n, hc: rk.hc, comm: comm, r: rk.i}
	if in.Inputs != nil {
		rk.p.set(rk.i, phaseVerify)
		coll.in = device.CollectiveInput{Op: device.AllReduce, Devices: in.Devices, Count: len(in.Inputs[rk.i]), Iters: 1, Inputs: in.Inputs}
		if _, output, err = coll.run(s); err != nil {
			return 0, nil, err
		}
	}
	rk.p.set(rk.i, phaseTimed)
	coll.in = device.CollectiveInput{Op: device.AllReduce, Devices: in.Devices, Count: in.Count, Warmup: in.Warmup, Iters: in.Iters}
	if sec, _, err = coll.run(s); err != nil {
		return 0, nil, err
	}
	rk.p.set(rk.i, phaseDone)
	return sec, output, nil
}

// compile-time check.
var _ device.MultinodeNode = (*aclNode)(nil)
