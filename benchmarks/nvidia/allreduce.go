package nvidia

import "github.com/vigil-hpc/vigil/benchmarks"

// allReduceThresholds are the shipped floors of all-reduce bus bandwidth
// (GB/s, 256 MiB per rank) on NVSwitch systems; nccl-tests reaches about
// 230 on A100 SXM, 360–480 on H100/H200 SXM and 700+ on B200. PCIe parts
// have no default: set [checks.allreduce.thresholds.MODEL] busbw_gbps.
var allReduceThresholds = Thresholds{
	"A100-SXM":       {"busbw_gbps": 170},
	"H100 80GB HBM3": {"busbw_gbps": 300},
	"H200":           {"busbw_gbps": 300},
	"B200":           {"busbw_gbps": 550},
}

func init() {
	benchmarks.Register(newCollCheck("allreduce", AllReduce, 1, allReduceThresholds, OpenCUDA))
}
