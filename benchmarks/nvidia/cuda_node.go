package nvidia

import (
	"context"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"runtime"
	"sync"

	"github.com/vigil-hpc/vigil/cgo/cublas"
	"github.com/vigil-hpc/vigil/cgo/cuda"
	"github.com/vigil-hpc/vigil/cgo/nccl"
)

// cudaNode is the real Node over libcuda, cuBLASLt and NCCL.
type cudaNode struct {
	drv  *cuda.Driver
	libs Libraries
	devs []device.Info
	h    map[int]cuda.Device
	ctxs map[int]cuda.Context

	mu      sync.Mutex
	blas    *cublas.Lib
	blasErr error
	coll    *nccl.Lib
	collErr error
	// encoded caches the last few encoded GEMM inputs: every device (and
	// the swapped cross-check GEMM) uploads the same host matrices.
	encoded []*encodedInput
}

type encodedInput struct {
	dt   device.DType
	p    *float32
	n    int
	done chan struct{} // closed once data is set
	data []byte
}

// encodeCached is encode with a small cache keyed by the input slice; the
// devices measuring at the same time share one encoding.
func (n *cudaNode) encodeCached(dt device.DType, x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	n.mu.Lock()
	for _, e := range n.encoded {
		if e.dt == dt && e.p == &x[0] && e.n == len(x) {
			n.mu.Unlock()
			<-e.done
			return e.data
		}
	}
	e := &encodedInput{dt: dt, p: &x[0], n: len(x), done: make(chan struct{})}
	n.encoded = append(n.encoded, e)
	if len(n.encoded) > 2 {
		n.encoded = n.encoded[len(n.encoded)-2:]
	}
	n.mu.Unlock()
	e.data = encode(dt, x)
	close(e.done)
	return e.data
}

// OpenCUDA opens libcuda and the devices (nil: all). cuBLASLt and NCCL are
// opened when first needed. Once cuInit has run, libcuda is never unloaded
// (see Close).
func OpenCUDA(ctx context.Context, libs Libraries, devices []int) (device.Node, error) {
	drv, err := cuda.Open(libs.options(libs.CUDA, ""))
	if err != nil {
		return nil, err
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: the driver (%s) reports none", errNoDevices, drv.Path())
	}
	if devices == nil {
		for i := 0; i < n; i++ {
			devices = append(devices, i)
		}
	}
	if len(devices) == 0 {
		return nil, fmt.Errorf("%w: none allocated", errNoDevices)
	}
	node := &cudaNode{drv: drv, libs: libs, h: map[int]cuda.Device{}, ctxs: map[int]cuda.Context{}}
	for _, i := range devices {
		if i < 0 || i >= n {
			node.Close()
			return nil, fmt.Errorf("%w: device %d asked for, %d visible", errNoDevices, i, n)
		}
		d, err := drv.Device(i)
		if err != nil {
			node.Close()
			return nil, err
		}
		info := device.Info{Index: i}
		if info.Name, err = drv.Name(d); err == nil {
			info.Major, info.Minor, err = drv.ComputeCapability(d)
		}
		if err == nil {
			info.PCI, err = drv.PCIBusID(d)
		}
		if err != nil {
			node.Close()
			return nil, err
		}
		c, err := drv.PrimaryCtxRetain(d)
		if err != nil {
			node.Close()
			return nil, err
		}
		node.h[i], node.ctxs[i] = d, c
		node.devs = append(node.devs, info)
	}
	return node, nil
}

func (n *cudaNode) Devices() []device.Info { return n.devs }
func (n *cudaNode) Runtime() string        { return n.drv.Path() }

// Close releases the primary contexts. The libraries stay loaded: the
// driver and NCCL leave threads behind, and unloading code they run would
// crash the process; the checker process exits soon after anyway.
func (n *cudaNode) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var first error
	for i, d := range n.h {
		if _, ok := n.ctxs[i]; ok {
			if err := n.drv.PrimaryCtxRelease(d); err != nil && first == nil {
				first = err
			}
		}
	}
	n.h, n.ctxs, n.encoded = nil, nil, nil
	return first
}

func (n *cudaNode) cublas() (*cublas.Lib, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.blas == nil && n.blasErr == nil {
		n.blas, n.blasErr = cublas.Open(n.libs.options(n.libs.CUBLASLt, "cublas"))
	}
	return n.blas, n.blasErr
}

func (n *cudaNode) nccl() (*nccl.Lib, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.coll == nil && n.collErr == nil {
		n.coll, n.collErr = nccl.Open(n.libs.options(n.libs.NCCL, "nccl"))
	}
	return n.coll, n.collErr
}

// onDevice runs f on a locked OS thread with dev's context current.
func (n *cudaNode) onDevice(dev int, f func() error) error {
	c, ok := n.ctxs[dev]
	if !ok {
		return fmt.Errorf("device %d was not opened", dev)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := n.drv.SetCurrent(c); err != nil {
		return err
	}
	return f()
}

// cleanup collects deferred frees and keeps the first error of any.
type cleanup struct{ fs []func() error }

func (c *cleanup) add(f func() error) { c.fs = append(c.fs, f) }
func (c *cleanup) run(err *error) {
	for i := len(c.fs) - 1; i >= 0; i-- {
		if e := c.fs[i](); e != nil && *err == nil {
			*err = e
		}
	}
}

func (n *cudaNode) alloc(c *cleanup, bytes int) (cuda.DevicePtr, error) {
	p, err := n.drv.MemAlloc(bytes)
	if err != nil {
		return 0, err
	}
	c.add(func() error { return n.drv.MemFree(p) })
	return p, nil
}

func (n *cudaNode) stream(c *cleanup) (cuda.Stream, error) {
	s, err := n.drv.StreamCreate()
	if err != nil {
		return s, err
	}
	c.add(func() error { return n.drv.StreamDestroy(s) })
	return s, nil
}

func (n *cudaNode) events(c *cleanup) (cuda.Event, cuda.Event, error) {
	a, err := n.drv.EventCreate()
	if err != nil {
		return a, a, err
	}
	c.add(func() error { return n.drv.EventDestroy(a) })
	b, err := n.drv.EventCreate()
	if err != nil {
		return a, b, err
	}
	c.add(func() error { return n.drv.EventDestroy(b) })
	return a, b, nil
}

// timeEvents records start, runs f, records stop and returns the seconds between.
func (n *cudaNode) timeEvents(start, stop cuda.Event, s cuda.Stream, f func() error) (float64, error) {
	if err := n.drv.EventRecord(start, s); err != nil {
		return 0, err
	}
	if err := f(); err != nil {
		return 0, err
	}
	if err := n.drv.EventRecord(stop, s); err != nil {
		return 0, err
	}
	if err := n.drv.EventSynchronize(stop); err != nil {
		return 0, err
	}
	ms, err := n.drv.ElapsedMs(start, stop)
	return ms / 1e3, err
}
