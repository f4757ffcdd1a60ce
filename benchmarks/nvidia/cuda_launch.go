package nvidia

import (
	"context"
	"encoding/binary"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"time"

	"github.com/vigil-hpc/vigil/cgo/cuda"
)

func (n *cudaNode) Launch(ctx context.Context, dev int, count int) (out device.LaunchOutput, err error) {
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
