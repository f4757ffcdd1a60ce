package ascend

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/compute"
)

// npu-allreduce: HCCL all-reduce over the node's NPUs in one process,
// verified, bus bandwidth against the model's floor.
func init() {
	benchmarks.Register(&collCheck{name: "npu-allreduce", op: compute.AllReduce, thresholds: allReduceThresholds, open: OpenACL})
}
