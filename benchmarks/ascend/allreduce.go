package ascend

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
)

// npu-allreduce: HCCL all-reduce over the node's NPUs in one process,
// verified, bus bandwidth against the model's floor.
func init() {
	benchmarks.Register(newCollCheck("npu-allreduce", device.AllReduce, allReduceThresholds, OpenACL))
}
