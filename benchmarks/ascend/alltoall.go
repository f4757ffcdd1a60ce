package ascend

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
)

// allToAllThresholds: HCCL all-to-all over the node's NPUs (HcclAlltoAll,
// the collective of expert-parallel models). An estimate below the
// all-reduce floor, as for NVIDIA's parts: every NPU talks to every other
// at once over the HCCS mesh; calibrate on the fleet.
var allToAllThresholds = device.Thresholds{"Ascend910B": {"busbw_gbps": 80}}

// npu-alltoall: HCCL all-to-all over the node's NPUs in one process,
// verified, bus bandwidth against the model's floor.
func init() {
	benchmarks.Register(newCollCheck("npu-alltoall", device.AllToAll, allToAllThresholds, OpenACL))
}
