package ascend

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// npu-allgather: HCCL all-gather over the node's NPUs in one process,
// verified, bus bandwidth against the model's floor.
func init() {
	benchmarks.Register(&collCheck{name: "npu-allgather", op: devcheck.AllGather, thresholds: allGatherThresholds, open: OpenACL})
}
