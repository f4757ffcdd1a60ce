package ascend

import (
	"context"

	"github.com/vigil-hpc/vigil/benchmarks/device"
)

// The NPU side of the Ascend compute checks is the vendor-neutral
// device.Node, the same the CUDA checks' nodes implement, so the two
// families measure and verify alike. Devices are named by logical id
// (Index) and SoC name ("Ascend910B3"); Runtime is the libascendcl.so file
// opened; GEMM runs aclnnMatmul (FP16 or BF16 inputs); Collective runs
// HCCL (one process, one communicator per device; AllReduce, AllGather
// and AllToAll); Launch times aclnnInplaceZero; Overlap runs aclnnMatmul
// beside HCCL all-reduces. Methods block until the device work has finished; callers
// run them under devcheck.Run to honour their deadline.

// Opener opens the node's NPUs: devices (logical ids) nil means all.
type Opener func(ctx context.Context, libs Libraries, devices []int) (device.Node, error)
