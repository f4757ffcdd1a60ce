// Package all links every check into a binary: the mains import it for its
// side effect (each check package registers its checks from init()).
package all

import (
	// Ascend health facts over DCMI and Ascend compute checks.
	_ "github.com/vigil-hpc/vigil/benchmarks/ascend"
	// Cross-node checks over the frontend network (net-connect, net-bandwidth).
	_ "github.com/vigil-hpc/vigil/benchmarks/crossnet"
	// Model benchmarks: a few real training steps with the site's PyTorch.
	_ "github.com/vigil-hpc/vigil/benchmarks/model"
	// Vendor-neutral node checks: the scratch disk, RDMA ports, an admin's command.
	_ "github.com/vigil-hpc/vigil/benchmarks/node"
	// NVIDIA health facts over NVML and CUDA compute probes and collectives.
	_ "github.com/vigil-hpc/vigil/benchmarks/nvidia"
)
