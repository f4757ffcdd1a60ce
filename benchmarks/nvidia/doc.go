// Package nvidia holds vigil's checks of NVIDIA GPUs, registered with
// benchmarks.Register from init(): the health facts one per file, the
// registrations of the vendor-neutral compute checks (package device) in
// one table (checks.go).
//
// Health facts read through NVML: device count, ECC, row remapping, XID,
// NVLink, PCIe, clock slowdowns, leftovers of earlier jobs. NVML is reached
// through go-nvml's nvml.Interface, opened once per process, so tests can
// stand a whole fake node in for the driver with go-nvml's mock package.
//
// Compute checks: dense GEMM throughput and correctness, kernel launch
// latency, host/device copy bandwidth, NCCL collectives within the node and
// across the job's nodes, compute/communication overlap. They talk to the
// GPUs through the device.Node interface; its real implementation opens
// libcuda, cuBLASLt and NCCL at run time (package cgo/...), tests use
// fakes. On a node without the libraries every check reports unknown with
// the library search that failed.
package nvidia
