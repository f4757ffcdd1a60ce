package nvidia

import "github.com/vigil-hpc/vigil/benchmarks"

// allGatherThresholds are the shipped floors of all-gather bus bandwidth
// (GB/s) on NVSwitch systems.
var allGatherThresholds = Thresholds{
	"A100-SXM":       {"busbw_gbps": 160},
	"H100 80GB HBM3": {"busbw_gbps": 280},
	"H200":           {"busbw_gbps": 280},
	"B200":           {"busbw_gbps": 500},
}

func init() {
	benchmarks.Register(newCollCheck("allgather", AllGather, 1, allGatherThresholds, OpenCUDA))
}
