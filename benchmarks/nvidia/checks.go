package nvidia

import (
	"context"
	"fmt"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// NVIDIA's registrations of the vendor-neutral compute checks (package
// device): each check's name, description, shipped thresholds and reason
// tokens, in one table (computeChecks). The measuring, verifying and
// judging is device's.

// Reason tokens of the compute checks that are NVIDIA's own words.
const (
	// ReasonGEMMWrongResult: a device computed a wrong product (fail).
	ReasonGEMMWrongResult = "GEMMWrongResult"
	// ReasonKernelWrongResult: the fill kernel did not write what it should (fail).
	ReasonKernelWrongResult = "KernelWrongResult"
	// ReasonCollectiveWrongResult: a collective delivered wrong data (fail).
	ReasonCollectiveWrongResult = "CollectiveWrongResult"
)

// gemmThresholds are the shipped floors in dense TFLOPS at the largest
// size: roughly 70–75% of what cuBLAS reaches on healthy parts (datasheet
// peaks: A100 312 bf16/fp16, 156 tf32; H100/H200 SXM 989 bf16/fp16, 494
// tf32, 1979 fp8; B200 2250 bf16/fp16, 1100 tf32, 4500 fp8). Calibrate
// them on a known-good fleet; [checks.gemm.thresholds.MODEL] overrides.
var gemmThresholds = devcheck.Thresholds{
	"A100":           {"tflops_bf16": 220, "tflops_fp16": 220, "tflops_tf32": 110},
	"A100-PCIE":      {"tflops_bf16": 190, "tflops_fp16": 190, "tflops_tf32": 95},
	"A100 80GB PCIe": {"tflops_bf16": 190, "tflops_fp16": 190, "tflops_tf32": 95},
	"H100":           {"tflops_bf16": 600, "tflops_fp16": 600, "tflops_tf32": 300, "tflops_fp8": 1100},
	"H100 PCIe":      {"tflops_bf16": 420, "tflops_fp16": 420, "tflops_tf32": 210, "tflops_fp8": 800},
	"H200":           {"tflops_bf16": 620, "tflops_fp16": 620, "tflops_tf32": 310, "tflops_fp8": 1150},
	"B200":           {"tflops_bf16": 1400, "tflops_fp16": 1400, "tflops_tf32": 650, "tflops_fp8": 2800},
}

// copyThresholds are shipped floors. Host copies use pinned memory over
// PCIe (gen4 x16 on A100 reaches ~25 GB/s, gen5 x16 on H100/H200/B200
// ~50 GB/s); device-to-device counts the bytes copied (each is read and
// written once), about 40% of the HBM bandwidth.
var copyThresholds = devcheck.Thresholds{
	"A100": {"h2d_gbps": 18, "d2h_gbps": 18, "d2d_gbps": 600},
	"H100": {"h2d_gbps": 35, "d2h_gbps": 35, "d2d_gbps": 1100},
	"H200": {"h2d_gbps": 35, "d2h_gbps": 35, "d2d_gbps": 1500},
	"B200": {"h2d_gbps": 35, "d2h_gbps": 35, "d2d_gbps": 2500},
}

// launchThresholds are the shipped limits on the median launch latency of
// an empty kernel: event time between two events around the launch, and
// host wall time of launch plus synchronize. The A100 figures are the
// published fleet baselines. A healthy H200 (driver 580, one GPU in a
// virtual machine) measured 5.5 us event and 9.3 us wall, right at the A100
// limits, so Hopper and newer parts get about 1.5 times that measurement:
// a limit must sit above the healthy spread, not on it.
var launchThresholds = devcheck.Thresholds{
	"A100": {"event_us": 5.5, "wall_us": 9.4},
	"H100": {"event_us": 8, "wall_us": 14},
	"H200": {"event_us": 8, "wall_us": 14},
	"B200": {"event_us": 8, "wall_us": 14},
}

// The collectives' shipped floors of bus bandwidth (GB/s, 256 MiB per
// rank) on NVSwitch systems; nccl-tests reaches about 230 all-reduce on
// A100 SXM, 360–480 on H100/H200 SXM and 700+ on B200. PCIe parts have no
// default: set [checks.NAME.thresholds.MODEL] busbw_gbps. All-to-all runs
// as grouped ncclSend/ncclRecv; multi-allreduce is the aggregate of
// several all-reduces at once (each on its own communicator and streams),
// as data-parallel training with bucketed gradients runs them.
var (
	allReduceThresholds = devcheck.Thresholds{
		"A100-SXM": {"busbw_gbps": 170}, "H100 80GB HBM3": {"busbw_gbps": 300}, "H200": {"busbw_gbps": 300}, "B200": {"busbw_gbps": 550}}
	allGatherThresholds = devcheck.Thresholds{
		"A100-SXM": {"busbw_gbps": 160}, "H100 80GB HBM3": {"busbw_gbps": 280}, "H200": {"busbw_gbps": 280}, "B200": {"busbw_gbps": 500}}
	allToAllThresholds = devcheck.Thresholds{
		"A100-SXM": {"busbw_gbps": 140}, "H100 80GB HBM3": {"busbw_gbps": 250}, "H200": {"busbw_gbps": 250}, "B200": {"busbw_gbps": 450}}
	multiAllReduceThresholds = devcheck.Thresholds{
		"A100-SXM": {"busbw_gbps": 150}, "H100 80GB HBM3": {"busbw_gbps": 260}, "H200": {"busbw_gbps": 260}, "B200": {"busbw_gbps": 480}}
)

// gemmDTypes are the GEMM input types cuBLASLt measures (fp8 only on
// compute capability >= 8.9, skipped with a note elsewhere).
var gemmDTypes = []device.DType{device.BF16, device.FP16, device.TF32, device.FP8}

// computeChecks are the compute checks over the GPUs open opens: gemm,
// copy, kernel-launch, the NCCL collectives and overlap.
func computeChecks(open Opener) []benchmarks.Check {
	co := func(name, description string, th devcheck.Thresholds) device.Common {
		return common(name, description, th, open)
	}
	coll := func(name string, op device.CollOp, concurrent int, th devcheck.Thresholds, slow, description string) benchmarks.Check {
		return device.NewCollective(device.CollectiveSpec{Common: co(name, description, th), Op: op, Concurrent: concurrent,
			WrongResult: ReasonCollectiveWrongResult, Slow: slow, LimitMessage: true, LibraryNote: "NCCL %s"})
	}
	return []benchmarks.Check{
		device.NewGEMM(device.GEMMSpec{
			Common: co("gemm", "dense GEMM TFLOPS per GPU and dtype (cuBLASLt), products verified", gemmThresholds),
			DTypes: gemmDTypes, CrossCheck: true, Op: "GEMM", WrongResult: ReasonGEMMWrongResult,
			Slow: devcheck.Tokens{Limit: "GEMMBelowThreshold", Peers: "GEMMBelowPeers"},
			Seed: defaultSeed, Eps: outEps, SizesFirst: true, Skip: skipFP8, LibraryNote: "cuBLASLt %s", RuntimeNote: "libcuda %s"}),
		device.NewCopy(device.PerDeviceSpec{
			Common:      co("copy", "host-device and device-device copy bandwidth per GPU, bytes verified (CUDA)", copyThresholds),
			WrongResult: "CopyWrongResult", Slow: devcheck.Tokens{Limit: "CopyBandwidthBelowThreshold", Peers: "CopyBandwidthBelowPeers"},
			RuntimeNote: "libcuda %s"}),
		device.NewLaunch(device.PerDeviceSpec{
			Common:      co("kernel-launch", "empty-kernel launch latency and a verified fill kernel (CUDA)", launchThresholds),
			WrongResult: ReasonKernelWrongResult, Slow: devcheck.Tokens{Limit: "LaunchLatencyAboveThreshold", Peers: "LaunchLatencyAbovePeers"},
			RuntimeNote: "libcuda %s"}),
		coll("allreduce", device.AllReduce, 1, allReduceThresholds, "AllReduceBelowThreshold",
			"NCCL all-reduce bus bandwidth over the node's GPUs, result verified"),
		coll("allgather", device.AllGather, 1, allGatherThresholds, "AllGatherBelowThreshold",
			"NCCL all-gather bus bandwidth over the node's GPUs, result verified"),
		coll("alltoall", device.AllToAll, 1, allToAllThresholds, "AllToAllBelowThreshold",
			"NCCL all-to-all bus bandwidth over the node's GPUs, result verified"),
		coll("multi-allreduce", device.AllReduce, 4, multiAllReduceThresholds, "AllReduceBelowThreshold",
			"4 NCCL all-reduces at once, each on its own communicator: aggregate bus bandwidth"),
		device.NewOverlap(device.OverlapSpec{
			Common: co("overlap", "GEMMs and NCCL all-reduces alone and at once: how well they overlap", nil),
			DType:  device.BF16, DTypes: gemmDTypes, Slow: "OverlapBelowThreshold"}),
	}
}

func init() {
	for _, c := range computeChecks(OpenCUDA) {
		benchmarks.Register(c)
	}
}

// common declares a CUDA check over the devices open opens with the
// libraries of [vendor.nvidia], with its shipped thresholds th.
func common(name, description string, th devcheck.Thresholds, open Opener) device.Common {
	return device.Common{Name: name, Description: description, Vendor: nvidia, Thresholds: th,
		Open: func(ctx context.Context, env *benchmarks.Env, devices []int) (device.Node, error) {
			libs, err := libraries(env)
			if err != nil {
				return nil, err
			}
			n, err := open(ctx, libs, devices)
			if err != nil {
				return nil, err // no typed nil in the interface
			}
			return n, nil
		}}
}

// skipFP8 names the devices below compute capability 8.9 when dt is FP8.
func skipFP8(dt device.DType, devs []device.Info) (map[int]bool, string) {
	if dt != device.FP8 {
		return nil, ""
	}
	skip := map[int]bool{}
	var names []string
	cc := ""
	for _, d := range devs {
		if d.Major*10+d.Minor < 89 {
			skip[d.Index] = true
			names = append(names, devName(d.Index))
			cc = fmt.Sprintf("%d.%d", d.Major, d.Minor)
		}
	}
	if len(names) == 0 {
		return nil, ""
	}
	return skip, fmt.Sprintf("fp8 skipped on %s (compute capability %s < 8.9)", strings.Join(names, ", "), cc)
}
