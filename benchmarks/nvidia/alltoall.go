package nvidia

import "github.com/vigil-hpc/vigil/benchmarks"

// allToAllThresholds are the shipped floors of all-to-all bus bandwidth
// (GB/s) on NVSwitch systems; all-to-all runs as grouped ncclSend/ncclRecv.
var allToAllThresholds = Thresholds{
	"A100-SXM":       {"busbw_gbps": 140},
	"H100 80GB HBM3": {"busbw_gbps": 250},
	"H200":           {"busbw_gbps": 250},
	"B200":           {"busbw_gbps": 450},
}

func init() {
	benchmarks.Register(newCollCheck("alltoall", AllToAll, 1, allToAllThresholds, OpenCUDA))
}
