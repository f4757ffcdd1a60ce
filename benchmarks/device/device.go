// Package device is the vendor-neutral side of vigil's compute checks: the
// Node interface a vendor's accelerators implement (CUDA in package
// nvidia, ACL/HCCL in package ascend), the measurement types that cross
// it, and the GEMM, copy, collective, launch-latency and overlap checks
// written once against it, with their settings.
//
// A vendor package registers each check from one table, with its own
// Vendor description (device names, error classification, how results
// read) and its own names, shipped thresholds, input types and reason
// tokens (GEMMSpec, PerDeviceSpec, CollectiveSpec, OverlapSpec); the
// settings, measuring, verifying and evaluating are the same code for
// every vendor.
package device

import (
	"context"
	"errors"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// Reason tokens the compute checks of every vendor use alike.
const (
	// ReasonLibraryMissing: a vendor library could not be opened, or lacks
	// a symbol (unknown).
	ReasonLibraryMissing = "LibraryMissing"
	// ReasonNoDevices: the runtime reports no device, or none of the job's (unknown).
	ReasonNoDevices = "NoDevices"
	// ReasonCheckerError: vigil itself could not run the measurement (unknown).
	ReasonCheckerError = "CheckerError"
	// ReasonDeviceFault: a device reported a fault while running work (fail).
	ReasonDeviceFault = "DeviceFault"
	// ReasonDeviceHung: work on a device did not finish by the deadline (fail).
	ReasonDeviceHung = "DeviceHung"
	// ReasonSingleDevice: a collective needs at least two devices (unknown).
	ReasonSingleDevice = "SingleDevice"
)

// ErrUnsupported is wrapped when a device or library cannot run a
// measurement (FP8 before compute capability 8.9): the check notes it and
// goes on.
var ErrUnsupported = errors.New("not supported")

// ErrHung is returned when ctx expired before the device finished.
//
// An alias, one of seven here (ErrHung, CollOp and its three values,
// Thresholds, Peers), on purpose: each is part of what Node and the
// settings say, so a vendor reads it here, while devcheck, below this
// package, computes with it (devcheck.Run returns ErrHung, its collective
// verification takes a CollOp, its Evaluate the Thresholds and Peers).
var ErrHung = devcheck.ErrHung

// Info describes one opened device.
type Info struct {
	// Index is the device number the vendor's tools use: the CUDA ordinal
	// in PCI bus order (as nvidia-smi numbers them), the Ascend logical id.
	Index int
	// Name is the product or SoC name ("NVIDIA H100 80GB HBM3", "Ascend910B3").
	Name string
	// Major and Minor are the compute capability (CUDA; 0 elsewhere).
	Major, Minor int
	// PCI is the PCI bus id, where the runtime reports it.
	PCI string
}

// DType is a GEMM input type.
type DType string

// GEMM input types.
const (
	BF16 DType = "bf16"
	FP16 DType = "fp16"
	TF32 DType = "tf32"
	FP8  DType = "fp8" // e4m3 inputs, bf16 output; compute capability >= 8.9
)

// GEMMInput is one GEMM measurement: D = A·Bᵀ with A m×k and B n×k, both
// row-major in host memory as float32 values exactly representable in
// DType. D is returned column-major m×n (D[i + j·m]).
type GEMMInput struct {
	DType   DType
	M, N, K int
	A, Bt   []float32
	// Warmup runs before timing.
	Warmup int
	// MinTime is the least time the timed iterations take together.
	MinTime time.Duration
	// MaxIters caps the timed iterations.
	MaxIters int
	// Readback asks for D.
	Readback bool
}

// GEMMOutput is what a GEMM measurement found.
type GEMMOutput struct {
	// Seconds is the mean time of one GEMM.
	Seconds float64
	// Iters is how many timed GEMMs ran.
	Iters int
	// D is the result (column-major m×n) when Readback was asked for.
	D []float32
	// Library is the BLAS or operator library file used.
	Library string
}

// CopyOutput is what a copy-bandwidth measurement found, in GB/s (1e9 B/s).
type CopyOutput struct {
	H2D, D2H, D2D float64
	// Verified is true when the bytes that went round trip came back equal.
	Verified bool
}

// CollOp is a collective operation (an alias: see ErrHung).
type CollOp = devcheck.CollOp

// Collectives (aliases: see ErrHung).
const (
	AllReduce = devcheck.AllReduce
	AllGather = devcheck.AllGather
	AllToAll  = devcheck.AllToAll
)

// CollectiveInput is one collective measurement over float32 buffers.
type CollectiveInput struct {
	Op      CollOp
	Devices []int
	// Count is the number of float32 elements of each rank's send buffer
	// (all-to-all: the whole buffer, Count/n to each peer).
	Count int
	// Warmup and Iters are untimed and timed repetitions.
	Warmup, Iters int
	// Concurrent is how many independent collectives (own communicator and
	// stream each) run at once; 1 for a plain measurement.
	Concurrent int
	// Inputs, when set, are the per-rank send buffers of one verification
	// run (len(Devices) slices of Count); the outputs are returned.
	Inputs [][]float32
}

// CollectiveOutput is what a collective measurement found.
type CollectiveOutput struct {
	// Seconds is the mean time of one round (all Concurrent collectives).
	Seconds float64
	// Outputs are the per-rank receive buffers of the verification run.
	Outputs [][]float32
	// Library is the collective library file used (NCCL, HCCL).
	Library string
}

// Thresholds are per-device-model limits: model key → metric → limit
// (see devcheck.Thresholds for the matching rule; an alias: see ErrHung).
type Thresholds = devcheck.Thresholds

// Peers configures the comparison of each device with the node's median
// (an alias: see ErrHung).
type Peers = devcheck.Peers

// Node is one vendor's accelerators as the compute checks see them. Methods
// block until the device work has finished; the checks run them under
// devcheck.Run to honour their deadline.
type Node interface {
	// Devices are the devices opened, in the order asked for.
	Devices() []Info
	// Runtime is the driver or runtime library file opened (libcuda,
	// libascendcl.so).
	Runtime() string
	// GEMM times D = A·Bᵀ on a device and returns D when asked.
	GEMM(ctx context.Context, dev int, in GEMMInput) (GEMMOutput, error)
	// Copy times host-to-device, device-to-host (page-locked host memory)
	// and device-to-device copies of bytes, iters times each.
	Copy(ctx context.Context, dev int, bytes, iters int) (CopyOutput, error)
	// Collective times a collective over the devices, driven from one process.
	Collective(ctx context.Context, in CollectiveInput) (CollectiveOutput, error)
	// Launch times n launches of a kernel that does nothing on a device,
	// each by device events and by host wall time to synchronize, and runs
	// a kernel that writes known values, which are read back and checked.
	Launch(ctx context.Context, dev int, n int) (LaunchOutput, error)
	// Overlap times GEMMs and all-reduces on the devices alone and at once.
	Overlap(ctx context.Context, in OverlapInput) (OverlapOutput, error)
	Close() error
}
