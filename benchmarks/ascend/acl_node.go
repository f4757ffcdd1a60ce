package ascend

import (
	"bytes"
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

// cann holds the CANN libraries of the process. ACL may be initialised
// once per process (aclInit after aclFinalize is not supported), and a
// checker child runs several checks, and retries, in one process: so the
// libraries are opened and ACL initialised on first use, with the first
// check's settings, and kept until the process exits.
type cann struct {
	mu     sync.Mutex
	rt     *acl.Lib
	rtErr  error
	rtDone bool
	ops    *acl.Ops
	opsErr error
	hc     *hccl.Lib
	hcErr  error
}

var sharedCANN = &cann{}

func (c *cann) runtime(libs Libraries) (*acl.Lib, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.rtDone {
		c.rtDone = true
		rt, err := acl.Open(libs.options(libs.ACL))
		if err == nil {
			if err = rt.Init(); err != nil {
				rt.Close()
				rt = nil
			}
		}
		c.rt, c.rtErr = rt, err
	}
	return c.rt, c.rtErr
}

func (c *cann) opAPI(libs Libraries) (*acl.Ops, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ops == nil && c.opsErr == nil {
		c.ops, c.opsErr = acl.OpenOps(libs.options(libs.NNOpBase), libs.options(libs.OpAPI), c.rt)
	}
	return c.ops, c.opsErr
}

func (c *cann) hccl(libs Libraries) (*hccl.Lib, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hc == nil && c.hcErr == nil {
		c.hc, c.hcErr = hccl.Open(libs.options(libs.HCCL))
	}
	return c.hc, c.hcErr
}

// aclNode is the real Node over the process's CANN libraries.
type aclNode struct {
	cann *cann
	rt   *acl.Lib
	libs Libraries
	devs []device.Info
}

// OpenACL opens libascendcl.so, initialises ACL (once per process) and
// selects the devices (logical ids; nil means all that ACL sees). The
// operator API and HCCL are opened when first needed.
func OpenACL(ctx context.Context, libs Libraries, devices []int) (Node, error) {
	return openACL(sharedCANN, libs, devices)
}

func openACL(c *cann, libs Libraries, devices []int) (Node, error) {
	rt, err := c.runtime(libs)
	if err != nil {
		return nil, err
	}
	n, err := rt.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: ACL sees no device", ErrNoDevices)
	}
	if devices == nil {
		for i := 0; i < n; i++ {
			devices = append(devices, i)
		}
	}
	soc := rt.SocName()
	node := &aclNode{cann: c, rt: rt, libs: libs}
	for _, d := range devices {
		if d < 0 || d >= n {
			return nil, fmt.Errorf("%w: %s asked for, ACL sees %d", ErrNoDevices, devName(d), n)
		}
		node.devs = append(node.devs, device.Info{Index: d, Name: soc})
	}
	return node, nil
}

func (n *aclNode) Devices() []device.Info { return n.devs }
func (n *aclNode) Runtime() string        { return n.rt.Path() }

// Close releases nothing: device resources are released after each
// measurement, and the libraries stay with the process.
func (n *aclNode) Close() error { return nil }

func (n *aclNode) opAPI() (*acl.Ops, error)    { return n.cann.opAPI(n.libs) }
func (n *aclNode) hcclLib() (*hccl.Lib, error) { return n.cann.hccl(n.libs) }

// onDevice runs f on an OS thread bound to device dev with a fresh
// stream, and releases the device afterwards.
func (n *aclNode) onDevice(dev int, f func(s acl.Stream) error) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := n.rt.SetDevice(dev); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, n.rt.ResetDevice(dev)) }()
	s, err := n.rt.CreateStream()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, n.rt.DestroyStream(s)) }()
	return f(s)
}

// deviceBuffer allocates device memory and registers its release.
type buffers struct {
	rt   *acl.Lib
	dev  []uint64
	host []uint64
	err  error
}

func (b *buffers) device(size int) uint64 {
	if b.err != nil {
		return 0
	}
	p, err := b.rt.Malloc(size)
	if err != nil {
		b.err = err
		return 0
	}
	b.dev = append(b.dev, p)
	return p
}

func (b *buffers) hostMem(size int) uint64 {
	if b.err != nil {
		return 0
	}
	p, err := b.rt.MallocHost(size)
	if err != nil {
		b.err = err
		return 0
	}
	b.host = append(b.host, p)
	return p
}

func (b *buffers) free() error {
	var errs []error
	for _, p := range b.dev {
		errs = append(errs, b.rt.Free(p))
	}
	for _, p := range b.host {
		errs = append(errs, b.rt.FreeHost(p))
	}
	return errors.Join(errs...)
}

// timer measures stream time between two timestamped events.
type timer struct {
	rt         *acl.Lib
	start, end acl.Event
}

func newTimer(rt *acl.Lib) (*timer, error) {
	a, err := rt.CreateEvent()
	if err != nil {
		return nil, err
	}
	b, err := rt.CreateEvent()
	if err != nil {
		rt.DestroyEvent(a)
		return nil, err
	}
	return &timer{rt: rt, start: a, end: b}, nil
}

func (t *timer) close() error {
	return errors.Join(t.rt.DestroyEvent(t.start), t.rt.DestroyEvent(t.end))
}

// time records start, runs f (which queues work on s), records end and
// returns the seconds between them.
func (t *timer) time(s acl.Stream, f func() error) (float64, error) {
	if err := t.rt.RecordEvent(t.start, s); err != nil {
		return 0, err
	}
	if err := f(); err != nil {
		return 0, err
	}
	if err := t.rt.RecordEvent(t.end, s); err != nil {
		return 0, err
	}
	if err := t.rt.SynchronizeEvent(t.end); err != nil {
		return 0, err
	}
	ms, err := t.rt.ElapsedMs(t.start, t.end)
	return ms / 1e3, err
}

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
	dt := acl.Float16
	if in.DType == device.BF16 {
		dt = acl.BF16
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
		if err := n.rt.Memcpy(dB, host, 2*k*nn, acl.HostToDevice); err != nil {
			return err
		}
		var tensors []acl.Tensor
		defer func() {
			for _, t := range tensors {
				err = errors.Join(err, ops.DestroyTensor(t))
			}
		}()
		for _, x := range []struct {
			dims []int64
			data uint64
		}{{[]int64{int64(m), int64(k)}, dA}, {[]int64{int64(k), int64(nn)}, dB}, {[]int64{int64(m), int64(nn)}, dC}} {
			t, err := ops.CreateTensor(x.dims, dt, x.data)
			if err != nil {
				return err
			}
			tensors = append(tensors, t)
		}
		var ws, wsSize uint64
		defer func() {
			if ws != 0 {
				err = errors.Join(err, n.rt.Free(ws))
			}
		}()
		// An executor serves one launch: each matmul asks for a new one.
		launch := func() error {
			size, ex, err := ops.MatmulWorkspace(tensors[0], tensors[1], tensors[2], acl.KeepDType)
			if err != nil {
				return err
			}
			if size > wsSize {
				if ws != 0 {
					if err := n.rt.Free(ws); err != nil {
						return err
					}
					ws, wsSize = 0, 0
				}
				if ws, err = n.rt.Malloc(int(size)); err != nil {
					return err
				}
				wsSize = size
			}
			return ops.Matmul(ws, size, ex, s)
		}
		for i := 0; i < max(in.Warmup, 1); i++ {
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
		one, err := tm.time(s, launch)
		if err != nil {
			return err
		}
		iters := in.MaxIters
		if one > 0 {
			iters = int(math.Ceil(in.MinTime.Seconds() / one))
		}
		iters = max(1, min(iters, in.MaxIters))
		sec, err := tm.time(s, func() error {
			for i := 0; i < iters; i++ {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err := launch(); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		out.Seconds, out.Iters, out.Library = sec/float64(iters), iters, ops.Path()
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

// Copy times host-to-device, device-to-device and device-to-host copies
// and checks the bytes that went round trip.
func (n *aclNode) Copy(ctx context.Context, dev int, size, iters int) (device.CopyOutput, error) {
	var out device.CopyOutput
	err := n.onDevice(dev, func(s acl.Stream) (err error) {
		b := &buffers{rt: n.rt}
		defer func() { err = errors.Join(err, b.free()) }()
		src, dst := b.hostMem(size), b.hostMem(size)
		d1, d2 := b.device(size), b.device(size)
		if b.err != nil {
			return b.err
		}
		pattern := acl.HostBytes(src, size)
		r := devcheck.RNG(defaultSeed ^ uint64(dev))
		for i := 0; i+8 <= size; i += 8 {
			binary.LittleEndian.PutUint64(pattern[i:], r.Next())
		}
		tm, err := newTimer(n.rt)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, tm.close()) }()
		timed := func(dstp, srcp uint64, kind acl.MemcpyKind) (float64, error) {
			sec, err := tm.time(s, func() error {
				for i := 0; i < iters; i++ {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if err := n.rt.MemcpyAsync(dstp, srcp, size, kind, s); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return 0, err
			}
			if sec <= 0 {
				return 0, errors.New("copy reported no time")
			}
			return float64(size) * float64(iters) / sec / 1e9, nil
		}
		if out.H2D, err = timed(d1, src, acl.HostToDevice); err != nil {
			return err
		}
		if out.D2D, err = timed(d2, d1, acl.DeviceToDevice); err != nil {
			return err
		}
		if out.D2H, err = timed(dst, d2, acl.DeviceToHost); err != nil {
			return err
		}
		out.Verified = bytes.Equal(acl.HostBytes(dst, size), pattern)
		return nil
	})
	return out, err
}

// Collective runs an HCCL collective over float32 buffers: one
// communicator per device (HcclCommInitAll), one OS thread per device, the
// slowest rank's stream time is the operation's time.
func (n *aclNode) Collective(ctx context.Context, in device.CollectiveInput) (device.CollectiveOutput, error) {
	var out device.CollectiveOutput
	if in.Op != devcheck.AllReduce && in.Op != devcheck.AllGather {
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
	recvCount := in.Count
	if in.Op == devcheck.AllGather {
		recvCount = in.Count * nr
	}
	secs := make([]float64, nr)
	outputs := make([][]float32, nr)
	errs := make([]error, nr)
	var wg sync.WaitGroup
	for r, dev := range in.Devices {
		wg.Add(1)
		go func(r, dev int) {
			defer wg.Done()
			errs[r] = n.onDevice(dev, func(s acl.Stream) (err error) {
				// Each rank's communicator is destroyed on its own device's thread.
				defer func() { err = errors.Join(err, hc.CommDestroy(comms[r])) }()
				b := &buffers{rt: n.rt}
				defer func() { err = errors.Join(err, b.free()) }()
				host := b.hostMem(4 * recvCount)
				send, recv := b.device(4*in.Count), b.device(4*recvCount)
				if b.err != nil {
					return b.err
				}
				hb := acl.HostBytes(host, 4*recvCount)
				if in.Inputs != nil {
					for i, v := range in.Inputs[r] {
						binary.LittleEndian.PutUint32(hb[4*i:], math.Float32bits(v))
					}
				} else {
					clear(hb[:4*in.Count])
				}
				if err := n.rt.Memcpy(send, host, 4*in.Count, acl.HostToDevice); err != nil {
					return err
				}
				op := func() error {
					if in.Op == devcheck.AllGather {
						return hc.AllGather(send, recv, in.Count, hccl.Float32, comms[r], s.Ptr())
					}
					return hc.AllReduce(send, recv, in.Count, hccl.Float32, hccl.Sum, comms[r], s.Ptr())
				}
				for i := 0; i < in.Warmup; i++ {
					if err := op(); err != nil {
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
				iters := max(in.Iters, 1)
				sec, err := tm.time(s, func() error {
					for i := 0; i < iters; i++ {
						if err := op(); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					return err
				}
				secs[r] = sec / float64(iters)
				if in.Inputs != nil {
					if err := n.rt.Memcpy(host, recv, 4*recvCount, acl.DeviceToHost); err != nil {
						return err
					}
					o := make([]float32, recvCount)
					for i := range o {
						o[i] = math.Float32frombits(binary.LittleEndian.Uint32(hb[4*i:]))
					}
					outputs[r] = o
				}
				return nil
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

// compile-time check.
var _ Node = (*aclNode)(nil)
