package nvidia

import (
	"bytes"
	"context"
	"encoding/binary"
	"github.com/vigil-hpc/vigil/benchmarks/device"

	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

func (n *cudaNode) Copy(ctx context.Context, dev int, size, iters int) (out device.CopyOutput, err error) {
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
