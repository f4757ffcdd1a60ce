package ascend

import (
	"context"

	"github.com/vigil-hpc/vigil/benchmarks/compute"
)

// Node is the NPU side of the Ascend compute checks. It speaks the same
// measurement types as the CUDA checks' Node (package compute), so the two
// families measure and verify alike. Methods block until the device work
// has finished; callers run them under devcheck.Run to honour their deadline.
type Node interface {
	// Devices are the NPUs opened, in the order asked for; Index is the
	// logical id and Name the SoC name ("Ascend910B3").
	Devices() []compute.DeviceInfo
	// Runtime is the libascendcl.so file opened.
	Runtime() string
	// GEMM times D = A·Bᵀ on a device with aclnnMatmul (FP16 or BF16
	// inputs) and returns D when asked.
	GEMM(ctx context.Context, dev int, in compute.GEMMInput) (compute.GEMMOutput, error)
	// Copy times host-to-device, device-to-host (page-locked host memory)
	// and device-to-device copies of bytes, iters times each.
	Copy(ctx context.Context, dev int, bytes, iters int) (compute.CopyOutput, error)
	// Collective times an HCCL collective over the devices (one process,
	// one communicator per device); AllReduce and AllGather are supported.
	Collective(ctx context.Context, in compute.CollectiveInput) (compute.CollectiveOutput, error)
	Close() error
}

// Opener opens the node's NPUs: devices (logical ids) nil means all.
type Opener func(ctx context.Context, libs Libraries, devices []int) (Node, error)
