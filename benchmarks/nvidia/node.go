package nvidia

import (
	"context"
	"errors"

	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// errNoDevices means the driver reports no device, or none of those asked for.
var errNoDevices = errors.New("no GPU devices")

// Opener opens the node's GPUs: devices nil means all.
type Opener func(ctx context.Context, libs Libraries, devices []int) (device.Node, error)

// openNode opens the node under ctx's deadline.
func openNode(ctx context.Context, open Opener, libs Libraries, devices []int) (device.Node, error) {
	var n device.Node
	err := devcheck.Run(ctx, func() error {
		var err error
		n, err = open(ctx, libs, devices)
		return err
	})
	return n, err
}
