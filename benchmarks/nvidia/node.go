package nvidia

import (
	"context"
	"errors"

	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ErrNoDevices means the driver reports no device, or none of those asked for.
var ErrNoDevices = errors.New("no GPU devices")

// ErrUnsupported is wrapped when a device or library cannot run a
// measurement (FP8 before compute capability 8.9): the check notes it and
// goes on.
var ErrUnsupported = device.ErrUnsupported

// The measurement types are the vendor-neutral ones of package device,
// under the names the CUDA checks have always used.
type (
	// DeviceInfo describes one opened device.
	DeviceInfo = device.Info
	// DType is a GEMM input type.
	DType = device.DType
	// GEMMInput is one GEMM measurement.
	GEMMInput = device.GEMMInput
	// GEMMOutput is what a GEMM measurement found.
	GEMMOutput = device.GEMMOutput
	// CopyOutput is what a copy-bandwidth measurement found, in GB/s.
	CopyOutput = device.CopyOutput
	// CollectiveInput is one collective measurement over float32 buffers.
	CollectiveInput = device.CollectiveInput
	// CollectiveOutput is what a collective measurement found.
	CollectiveOutput = device.CollectiveOutput
	// CollOp is a collective operation.
	CollOp = device.CollOp
	// LaunchOutput is what a launch-latency measurement found.
	LaunchOutput = device.LaunchOutput
	// OverlapInput measures GEMMs and all-reduces alone and at once.
	OverlapInput = device.OverlapInput
	// OverlapOutput holds the overlap measurement's three timings in seconds.
	OverlapOutput = device.OverlapOutput
)

// GEMM input types.
const (
	BF16 = device.BF16
	FP16 = device.FP16
	TF32 = device.TF32
	FP8  = device.FP8
)

// Collectives.
const (
	AllReduce = device.AllReduce
	AllGather = device.AllGather
	AllToAll  = device.AllToAll
)

// Node is the GPU side of the compute checks: the vendor-neutral
// device.Node, whose Runtime is the libcuda file opened. Methods block
// until the device work has finished; callers run them under devcheck.Run
// to honour their deadline.
type Node = device.Node

// Opener opens the node's GPUs: devices nil means all.
type Opener func(ctx context.Context, libs Libraries, devices []int) (Node, error)

// openNode opens the node under ctx's deadline.
func openNode(ctx context.Context, open Opener, libs Libraries, devices []int) (Node, error) {
	var n Node
	err := devcheck.Run(ctx, func() error {
		var err error
		n, err = open(ctx, libs, devices)
		return err
	})
	return n, err
}
