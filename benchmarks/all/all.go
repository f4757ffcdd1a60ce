// Package all links every check into a binary: the mains import it for its
// side effect (each check package registers its checks from init()).
package all

import (
	// Ascend health facts over DCMI and Ascend compute checks.
	_ "github.com/vigil-hpc/vigil/benchmarks/ascend"
	// Cross-node checks over the frontend network (net-connect, net-bandwidth).
	_ "github.com/vigil-hpc/vigil/benchmarks/crossnet"
	// CUDA compute probes and collectives (GEMM, launch, copy, NCCL, ...).
	_ "github.com/vigil-hpc/vigil/benchmarks/compute"
	// NVIDIA health facts and the local disk check.
	_ "github.com/vigil-hpc/vigil/benchmarks/health"
)
