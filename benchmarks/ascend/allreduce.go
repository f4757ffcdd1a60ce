package ascend

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// npu-allreduce: HCCL all-reduce over the node's NPUs in one process,
// verified, bus bandwidth against the model's floor.
func init() {
	benchmarks.Register(&collCheck{name: "npu-allreduce", op: devcheck.AllReduce, thresholds: allReduceThresholds, open: OpenACL})
}
