// Package health holds vigil's health facts of NVIDIA GPUs, registered
// with benchmarks.Register from init(), one per file: device count, ECC,
// row remapping, XID, NVLink, PCIe, clock slowdowns, leftovers of earlier
// jobs.
//
// They read NVML through go-nvml's nvml.Interface, opened once per process
// (nvml.go), so tests can stand a whole fake node in for the driver with
// go-nvml's mock package; the xid check also reads the kernel log
// (/dev/kmsg, kmsg.go) and places each XID on a GPU of the node
// (xid_gpus.go). Package nvidia, the vendor's compute checks, links this
// one; nothing here uses CUDA or the [vendor.nvidia] libraries.
package health
