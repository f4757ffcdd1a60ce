package compute

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/cublas"
	"github.com/vigil-hpc/vigil/cgo/cuda"
	"github.com/vigil-hpc/vigil/cgo/nccl"
)

// gemmWorkspace is the cuBLASLt workspace (32 MiB, what NVIDIA recommends
// for Hopper).
const gemmWorkspace = 32 << 20

// cudaNode is the real Node over libcuda, cuBLASLt and NCCL.
type cudaNode struct {
	drv  *cuda.Driver
	libs Libraries
	devs []DeviceInfo
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
	dt   DType
	p    *float32
	n    int
	done chan struct{} // closed once data is set
	data []byte
}

// encodeCached is encode with a small cache keyed by the input slice; the
// devices measuring at the same time share one encoding.
func (n *cudaNode) encodeCached(dt DType, x []float32) []byte {
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
func OpenCUDA(ctx context.Context, libs Libraries, devices []int) (Node, error) {
	drv, err := cuda.Open(libs.options(libs.CUDA, ""))
	if err != nil {
		return nil, err
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: the driver (%s) reports none", ErrNoDevices, drv.Path())
	}
	if devices == nil {
		for i := 0; i < n; i++ {
			devices = append(devices, i)
		}
	}
	if len(devices) == 0 {
		return nil, fmt.Errorf("%w: none allocated", ErrNoDevices)
	}
	node := &cudaNode{drv: drv, libs: libs, h: map[int]cuda.Device{}, ctxs: map[int]cuda.Context{}}
	for _, i := range devices {
		if i < 0 || i >= n {
			node.Close()
			return nil, fmt.Errorf("%w: device %d asked for, %d visible", ErrNoDevices, i, n)
		}
		d, err := drv.Device(i)
		if err != nil {
			node.Close()
			return nil, err
		}
		info := DeviceInfo{Index: i}
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

func (n *cudaNode) Devices() []DeviceInfo { return n.devs }
func (n *cudaNode) Driver() string        { return n.drv.Path() }

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

// gemmTypes maps a DType to cuBLASLt types and element sizes (input, output).
func gemmTypes(dt DType) (in, out cublas.DataType, comp cublas.ComputeType, inSize, outSize int) {
	switch dt {
	case FP16:
		return cublas.R16F, cublas.R16F, cublas.Compute32F, 2, 2
	case TF32:
		return cublas.R32F, cublas.R32F, cublas.Compute32FFastTF32, 4, 4
	case FP8:
		return cublas.R8FE4M3, cublas.R16BF, cublas.Compute32F, 1, 2
	}
	return cublas.R16BF, cublas.R16BF, cublas.Compute32F, 2, 2
}

// encode converts host float32 values into the device's input type.
func encode(dt DType, x []float32) []byte {
	_, _, _, size, _ := gemmTypes(dt)
	out := make([]byte, len(x)*size)
	switch dt {
	case FP8:
		for i, v := range x {
			out[i] = e4m3FromF32(v)
		}
	case TF32:
		for i, v := range x {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case FP16:
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
func decodeOut(dt DType, b []byte) []float32 {
	_, _, _, _, size := gemmTypes(dt)
	out := make([]float32, len(b)/size)
	for i := range out {
		switch {
		case dt == TF32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		case dt == FP16:
			out[i] = devcheck.F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		default:
			out[i] = devcheck.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	}
	return out
}

// gemmPlan prepares a cuBLASLt plan for dt and sizes on the current device.
func (n *cudaNode) gemmPlan(c *cleanup, dt DType, m, nn, k int) (*cublas.Plan, error) {
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
		return nil, fmt.Errorf("%w: %s GEMM with %s: %v", ErrUnsupported, dt, blas.Path(), err)
	}
	if err != nil {
		return nil, err
	}
	c.add(func() error { p.Close(); return nil })
	return p, nil
}

func (n *cudaNode) GEMM(ctx context.Context, dev int, in GEMMInput) (out GEMMOutput, err error) {
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
		if err := gemm(in.Warmup)(); err != nil {
			return err
		}
		one, err := n.timeEvents(start, stop, s, gemm(1))
		if err != nil {
			return err
		}
		iters := 1
		if one > 0 {
			iters = int(math.Ceil(in.MinTime.Seconds() / one))
		}
		iters = max(1, min(iters, in.MaxIters))
		total, err := n.timeEvents(start, stop, s, gemm(iters))
		if err != nil {
			return err
		}
		out.Seconds, out.Iters = total/float64(iters), iters
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

func (n *cudaNode) Launch(ctx context.Context, dev int, count int) (out LaunchOutput, err error) {
	err = n.onDevice(dev, func() (err error) {
		var c cleanup
		defer c.run(&err)
		mod, err := n.drv.ModuleLoadPTX(cuda.PTX)
		if err != nil {
			return err
		}
		c.add(func() error { return n.drv.ModuleUnload(mod) })
		empty, err := n.drv.Function(mod, cuda.KernelEmpty)
		if err != nil {
			return err
		}
		fill, err := n.drv.Function(mod, cuda.KernelFill)
		if err != nil {
			return err
		}
		s, err := n.stream(&c)
		if err != nil {
			return err
		}
		start, stop, err := n.events(&c)
		if err != nil {
			return err
		}
		one := cuda.Dim3{X: 1, Y: 1, Z: 1}
		launch := func() error { return n.drv.Launch(empty, one, one, 0, s) }
		for i := 0; i < 20; i++ { // warm up: first launches load the module
			if err := launch(); err != nil {
				return err
			}
		}
		if err := n.drv.StreamSynchronize(s); err != nil {
			return err
		}
		for i := 0; i < count; i++ {
			sec, err := n.timeEvents(start, stop, s, launch)
			if err != nil {
				return err
			}
			out.EventUs = append(out.EventUs, sec*1e6)
		}
		for i := 0; i < count; i++ {
			t0 := time.Now()
			if err := launch(); err != nil {
				return err
			}
			if err := n.drv.StreamSynchronize(s); err != nil {
				return err
			}
			out.WallUs = append(out.WallUs, float64(time.Since(t0).Nanoseconds())/1e3)
		}
		// The fill kernel proves kernels compute: dst[i] = base + i.
		const words, base = 1 << 20, 0x1234
		buf, err := n.alloc(&c, 4*words)
		if err != nil {
			return err
		}
		if err := n.drv.Launch(fill, cuda.Dim3{X: words / 256, Y: 1, Z: 1}, cuda.Dim3{X: 256, Y: 1, Z: 1}, 0, s, buf, uint32(base), uint32(words)); err != nil {
			return err
		}
		if err := n.drv.StreamSynchronize(s); err != nil {
			return err
		}
		host := make([]byte, 4*words)
		if err := n.drv.CopyDtoH(host, buf); err != nil {
			return err
		}
		out.FillOK = true
		for i := 0; i < words; i++ {
			if binary.LittleEndian.Uint32(host[4*i:]) != uint32(base+i) {
				out.FillOK = false
				break
			}
		}
		return nil
	})
	return out, err
}

func (n *cudaNode) Copy(ctx context.Context, dev int, size, iters int) (out CopyOutput, err error) {
	err = n.onDevice(dev, func() (err error) {
		var c cleanup
		defer c.run(&err)
		src, err := n.drv.MemHostAlloc(size)
		if err != nil {
			return err
		}
		c.add(func() error { return n.drv.FreeHost(src) })
		dst, err := n.drv.MemHostAlloc(size)
		if err != nil {
			return err
		}
		c.add(func() error { return n.drv.FreeHost(dst) })
		r := devcheck.RNG(defaultSeed)
		b := src.Bytes()
		for i := 0; i+8 <= len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], r.Next())
		}
		d1, err := n.alloc(&c, size)
		if err != nil {
			return err
		}
		d2, err := n.alloc(&c, size)
		if err != nil {
			return err
		}
		s, err := n.stream(&c)
		if err != nil {
			return err
		}
		start, stop, err := n.events(&c)
		if err != nil {
			return err
		}
		measure := func(f func() error) (float64, error) {
			if err := f(); err != nil { // warm up
				return 0, err
			}
			sec, err := n.timeEvents(start, stop, s, func() error {
				for i := 0; i < iters; i++ {
					if err := f(); err != nil {
						return err
					}
				}
				return nil
			})
			return devcheck.AlgBW(float64(size)*float64(iters), sec), err
		}
		if out.H2D, err = measure(func() error { return n.drv.CopyHtoDAsync(d1, src, size, s) }); err != nil {
			return err
		}
		if out.D2D, err = measure(func() error { return n.drv.CopyDtoDAsync(d2, d1, size, s) }); err != nil {
			return err
		}
		if out.D2H, err = measure(func() error { return n.drv.CopyDtoHAsync(dst, d2, size, s) }); err != nil {
			return err
		}
		if err := n.drv.StreamSynchronize(s); err != nil {
			return err
		}
		out.Verified = bytes.Equal(src.Bytes(), dst.Bytes())
		return nil
	})
	return out, err
}

// collRank is one rank's resources of one communicator.
type collRank struct {
	dev        int
	comm       nccl.Comm
	s          cuda.Stream
	send, recv cuda.DevicePtr
}

// setupColl creates k communicators over devs with buffers for op.
func (n *cudaNode) setupColl(c *cleanup, lib *nccl.Lib, op CollOp, devs []int, count, k int) ([][]collRank, error) {
	sendN, recvN := count, count
	if op == AllGather {
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
func issue(lib *nccl.Lib, op CollOp, ranks []collRank, count int) error {
	if err := lib.GroupStart(); err != nil {
		return err
	}
	var err error
	nr := len(ranks)
	for r, rk := range ranks {
		switch op {
		case AllReduce:
			err = lib.AllReduce(uint64(rk.send), uint64(rk.recv), count, nccl.Float32, nccl.Sum, rk.comm, rk.s.Ptr())
		case AllGather:
			err = lib.AllGather(uint64(rk.send), uint64(rk.recv), count, nccl.Float32, rk.comm, rk.s.Ptr())
		case AllToAll:
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

func (n *cudaNode) Collective(ctx context.Context, in CollectiveInput) (out CollectiveOutput, err error) {
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
		if in.Op == AllGather {
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

// onePattern is a 32-bit fill that reads as 1.0 in each input type.
func onePattern(dt DType) uint32 {
	switch dt {
	case FP16:
		return 0x3c003c00
	case TF32:
		return 0x3f800000
	case FP8:
		return 0x38383838
	}
	return 0x3f803f80
}

func (n *cudaNode) Overlap(ctx context.Context, in OverlapInput) (out OverlapOutput, err error) {
	lib, err := n.nccl()
	if err != nil {
		return out, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var c cleanup
	defer c.run(&err)
	g := in.GEMM
	_, _, _, inSize, outSize := gemmTypes(g.DType)
	type gemmRank struct {
		dev         int
		s           cuda.Stream
		plan        *cublas.Plan
		a, b, d, ws cuda.DevicePtr
	}
	var gs []gemmRank
	for _, d := range in.Devices {
		if err := n.drv.SetCurrent(n.ctxs[d]); err != nil {
			return out, err
		}
		gr := gemmRank{dev: d}
		if gr.s, err = n.stream(&c); err != nil {
			return out, err
		}
		for _, p := range []struct {
			dst   *cuda.DevicePtr
			bytes int
		}{{&gr.a, g.M * g.K * inSize}, {&gr.b, g.N * g.K * inSize}, {&gr.d, g.M * g.N * outSize}, {&gr.ws, gemmWorkspace}} {
			if *p.dst, err = n.alloc(&c, p.bytes); err != nil {
				return out, err
			}
		}
		for _, p := range []struct {
			dst   cuda.DevicePtr
			bytes int
		}{{gr.a, g.M * g.K * inSize}, {gr.b, g.N * g.K * inSize}} {
			if err := n.drv.MemsetD32Async(p.dst, onePattern(g.DType), p.bytes/4, gr.s); err != nil {
				return out, err
			}
		}
		if gr.plan, err = n.gemmPlan(&c, g.DType, g.M, g.N, g.K); err != nil {
			return out, err
		}
		gs = append(gs, gr)
	}
	sets, err := n.setupColl(&c, lib, AllReduce, in.Devices, in.Count, 1)
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
			if err := issue(lib, AllReduce, sets[0], in.Count); err != nil {
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
