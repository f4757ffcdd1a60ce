package nvidia

import "github.com/vigil-hpc/vigil/benchmarks"

// multiAllReduceThresholds are the shipped floors of the aggregate bus
// bandwidth of several all-reduces running at once (each on its own
// communicator and streams), as data-parallel training with bucketed
// gradients does.
var multiAllReduceThresholds = Thresholds{
	"A100-SXM":       {"busbw_gbps": 150},
	"H100 80GB HBM3": {"busbw_gbps": 260},
	"H200":           {"busbw_gbps": 260},
	"B200":           {"busbw_gbps": 480},
}

func init() {
	benchmarks.Register(newCollCheck("multi-allreduce", AllReduce, 4, multiAllReduceThresholds, OpenCUDA))
}
