package ascend

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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
func OpenACL(ctx context.Context, libs Libraries, devices []int) (device.Node, error) {
	return openACL(sharedCANN, libs, devices)
}

func openACL(c *cann, libs Libraries, devices []int) (device.Node, error) {
	rt, err := c.runtime(libs)
	if err != nil {
		return nil, err
	}
	n, err := rt.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: ACL sees no device", errNoDevices)
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
			return nil, fmt.Errorf("%w: %s asked for, ACL sees %d", errNoDevices, devName(d), n)
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

// compile-time check.
var _ device.Node = (*aclNode)(nil)
