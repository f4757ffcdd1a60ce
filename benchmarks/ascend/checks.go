package ascend

import (
	"context"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// Ascend's registrations of the vendor-neutral compute checks (package
// device): each check's name, description, shipped thresholds and reason
// tokens, in one table (computeChecks). The measuring, verifying and
// judging is device's.

// Reason tokens of the compute checks that are Ascend's own words.
const (
	// ReasonGEMMWrongResult: a device computed a wrong product (fail). Low
	// throughput gives NPUGEMMBelowThreshold or NPUGEMMBelowPeers.
	ReasonGEMMWrongResult = "NPUGEMMWrongResult"
	// ReasonCopyWrongResult: bytes copied to a device and back changed (fail).
	// Low bandwidth gives NPUCopyBandwidthBelowThreshold or …BelowPeers.
	ReasonCopyWrongResult = "NPUCopyWrongResult"
	// ReasonKernelWrongResult: the zero kernel did not clear what it should
	// (fail). Slow launches give NPULaunchLatencyAboveThreshold or …AbovePeers.
	ReasonKernelWrongResult = "NPUKernelWrongResult"
	// ReasonCollectiveWrongResult: a collective delivered wrong data (fail).
	ReasonCollectiveWrongResult = "NPUCollectiveWrongResult"
)

// gemmThresholds are the shipped floors in dense TFLOPS at the largest
// size, keyed by the SoC name ACL reports. They are 60% of the peak FP16
// (= BF16) figures publicly reported for the 910B family (910B1 414,
// 910B2 376, 910B3 313, 910B4 280 TFLOPS; Huawei publishes per-product,
// not per-SKU, datasheets, so treat these as estimates). Calibrate them on
// a known-good fleet; [checks.npu-gemm.thresholds.MODEL] overrides.
var gemmThresholds = devcheck.Thresholds{
	"Ascend910B1": {"tflops_fp16": 248, "tflops_bf16": 248},
	"Ascend910B2": {"tflops_fp16": 225, "tflops_bf16": 225},
	"Ascend910B3": {"tflops_fp16": 188, "tflops_bf16": 188},
	"Ascend910B4": {"tflops_fp16": 168, "tflops_bf16": 168},
}

// copyThresholds are shipped floors. 910B parts attach to the host over
// PCIe 4.0 x16 (about 25 GB/s achievable with page-locked memory; floor
// 60% of that). Device-to-device counts the bytes copied (each read and
// written once): about 35% of the HBM bandwidth (1.6 TB/s on 910B1–B3,
// 0.8 TB/s on the 32 GB 910B4). Estimates: calibrate on the fleet.
var copyThresholds = devcheck.Thresholds{
	"Ascend910B":  {"h2d_gbps": 15, "d2h_gbps": 15, "d2d_gbps": 560},
	"Ascend910B4": {"h2d_gbps": 15, "d2h_gbps": 15, "d2d_gbps": 280},
}

// launchThresholds are the shipped limits on the median latency of one
// aclnnInplaceZero on one element: its two-phase call and kernel between
// two ACL events, and the host's time from the call to
// aclrtSynchronizeStream. Estimates, not measurements: the operator API's
// host path (executor built per call) and the task scheduler's dispatch
// make an operator launch on a 910B cost tens of microseconds, several
// times a CUDA kernel launch; the limits sit well above that to catch a
// node that is far off (a busy or throttled host CPU, a sick device), and
// must be calibrated on known-good nodes.
var launchThresholds = devcheck.Thresholds{"Ascend910B": {"event_us": 100, "wall_us": 200}}

// The collectives' floors: 8 × 910B in one Atlas 800T A2 server are fully
// meshed over HCCS (7 links of 56 GB/s per NPU, 392 GB/s). The floors are
// a conservative fraction of what hccl_test reports on healthy nodes for
// 256 MiB buffers; calibrate on the fleet, and lower them for nodes with
// fewer NPUs per job. All-to-all (HcclAlltoAll, the collective of
// expert-parallel models) is an estimate below the all-reduce floor, as
// for NVIDIA's parts: every NPU talks to every other at once over the
// HCCS mesh.
var (
	allReduceThresholds = devcheck.Thresholds{"Ascend910B": {"busbw_gbps": 100}}
	allGatherThresholds = devcheck.Thresholds{"Ascend910B": {"busbw_gbps": 100}}
	allToAllThresholds  = devcheck.Thresholds{"Ascend910B": {"busbw_gbps": 80}}
)

// gemmDTypes are the input types aclnnMatmul measures.
var gemmDTypes = []device.DType{device.FP16, device.BF16}

// computeChecks are the compute checks over the NPUs open opens: npu-gemm,
// npu-copy, npu-kernel-launch, the HCCL collectives (over the node's NPUs
// in one process) and npu-overlap.
func computeChecks(open Opener) []benchmarks.Check {
	co := func(name, description string, th devcheck.Thresholds) device.Common {
		return common(name, description, th, open)
	}
	coll := func(name string, op device.CollOp, th devcheck.Thresholds, slow string) benchmarks.Check {
		return device.NewCollective(device.CollectiveSpec{
			Common: co(name, "HCCL "+device.Label(op)+" bus bandwidth over the node's NPUs, result verified", th),
			Op:     op, WrongResult: ReasonCollectiveWrongResult, Slow: slow, LibraryNote: "HCCL %s"})
	}
	return []benchmarks.Check{
		device.NewGEMM(device.GEMMSpec{
			Common: co("npu-gemm", "aclnnMatmul TFLOPS per NPU in fp16 and bf16, products verified", gemmThresholds),
			DTypes: gemmDTypes, Op: "matmul", WrongResult: ReasonGEMMWrongResult,
			Slow: devcheck.Tokens{Limit: "NPUGEMMBelowThreshold", Peers: "NPUGEMMBelowPeers"},
			Seed: defaultSeed, Eps: outEps, RuntimeNote: "ACL %s"}),
		device.NewCopy(device.PerDeviceSpec{
			Common:      co("npu-copy", "host-device and device-device copy bandwidth per NPU, bytes verified (ACL)", copyThresholds),
			WrongResult: ReasonCopyWrongResult, Slow: devcheck.Tokens{Limit: "NPUCopyBandwidthBelowThreshold", Peers: "NPUCopyBandwidthBelowPeers"}}),
		device.NewLaunch(device.PerDeviceSpec{
			Common:      co("npu-kernel-launch", "aclnnInplaceZero launch latency per NPU and a verified zero kernel (ACL)", launchThresholds),
			WrongResult: ReasonKernelWrongResult, Slow: devcheck.Tokens{Limit: "NPULaunchLatencyAboveThreshold", Peers: "NPULaunchLatencyAbovePeers"},
			RuntimeNote: "ACL %s"}),
		coll("npu-allreduce", device.AllReduce, allReduceThresholds, "NPUAllReduceBelowThreshold"),
		coll("npu-allgather", device.AllGather, allGatherThresholds, "NPUAllGatherBelowThreshold"),
		coll("npu-alltoall", device.AllToAll, allToAllThresholds, "NPUAllToAllBelowThreshold"),
		device.NewOverlap(device.OverlapSpec{
			Common: co("npu-overlap", "aclnnMatmul and HCCL all-reduces alone and at once: how well they overlap", nil),
			DType:  device.BF16, DTypes: gemmDTypes, Slow: "NPUOverlapBelowThreshold"}),
	}
}

func init() {
	for _, c := range computeChecks(OpenACL) {
		benchmarks.Register(c)
	}
}

// common declares an Ascend check over the devices open opens with the
// libraries of [vendor.ascend], with its shipped thresholds th.
func common(name, description string, th devcheck.Thresholds, open Opener) device.Common {
	return device.Common{Name: name, Description: description, Vendor: ascendNPUs, Thresholds: th,
		Open: func(ctx context.Context, env *benchmarks.Env, devices []int) (device.Node, error) {
			libs, err := libraries(env)
			if err != nil {
				return nil, err
			}
			return open(ctx, libs, devices)
		}}
}
