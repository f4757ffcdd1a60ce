// Package nvidia holds vigil's compute checks of NVIDIA GPUs and links its
// health facts (package health), so that importing it links every NVIDIA
// check.
//
// Compute checks: dense GEMM throughput and correctness, kernel launch
// latency, host/device copy bandwidth, NCCL collectives within the node and
// across the job's nodes (nccl-allreduce-multinode and the
// multinode-selftest command), compute/communication overlap. The
// vendor-neutral ones (package device) are registered from init() in one
// table (checks.go). They talk to the GPUs through the device.Node
// interface; its real implementation (cuda_*.go) opens libcuda, cuBLASLt
// and NCCL at run time (package cgo/...), where [vendor.nvidia] says;
// tests use fakes. On a node without the libraries every check reports
// unknown with the library search that failed.
//
// The health facts read NVML and the kernel log and share nothing with the
// compute checks; they live in package health, which imports nothing of
// this package.
package nvidia

// The health facts register from their own package's init(); linking them
// here keeps the vendor one import of benchmarks/all.
import _ "github.com/vigil-hpc/vigil/benchmarks/nvidia/health"
