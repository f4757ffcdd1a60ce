package compute

import (
	"context"
	"errors"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// ErrNoDevices means the driver reports no device, or none of those asked for.
var ErrNoDevices = errors.New("no GPU devices")

// ErrUnsupported is wrapped when a device or library cannot run a
// measurement (FP8 before compute capability 8.9): the check notes it and
// goes on.
var ErrUnsupported = errors.New("not supported")

// DeviceInfo describes one opened device.
type DeviceInfo struct {
	// Index is the device ordinal (PCI bus order, as nvidia-smi numbers them).
	Index int
	// Name is the product name ("NVIDIA H100 80GB HBM3").
	Name string
	// Major and Minor are the compute capability.
	Major, Minor int
	// PCI is the PCI bus id.
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
	// Library is the cuBLASLt file used.
	Library string
}

// LaunchOutput is what a launch-latency measurement found.
type LaunchOutput struct {
	// EventUs are per-launch event-timed durations in microseconds.
	EventUs []float64
	// WallUs are per-launch host wall times (launch + synchronize) in microseconds.
	WallUs []float64
	// FillOK is true when the fill kernel wrote the expected values.
	FillOK bool
}

// CopyOutput is what a copy-bandwidth measurement found, in GB/s (1e9 B/s).
type CopyOutput struct {
	H2D, D2H, D2D float64
	// Verified is true when the bytes that went round trip came back equal.
	Verified bool
}

// CollOp is a collective operation.
type CollOp = devcheck.CollOp

// Collectives.
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
	// Library is the NCCL file used.
	Library string
}

// OverlapInput measures GEMMs and all-reduces on every device, alone and at
// the same time.
type OverlapInput struct {
	Devices []int
	GEMM    GEMMInput // DType and sizes; A and Bt are not needed
	// GEMMs and AllReduces are how many of each one round runs per device.
	GEMMs, AllReduces int
	// Count is the all-reduce size in float32 elements.
	Count int
}

// OverlapOutput holds the three timings in seconds.
type OverlapOutput struct {
	GEMMAlone, AllReduceAlone, Together float64
}

// Node is the GPU side of the compute checks. Methods block until the
// device work has finished; callers run them under devcheck.Run to honour their
// deadline.
type Node interface {
	// Devices are the devices opened, in the order asked for.
	Devices() []DeviceInfo
	// Driver is the libcuda file opened.
	Driver() string
	GEMM(ctx context.Context, dev int, in GEMMInput) (GEMMOutput, error)
	Launch(ctx context.Context, dev int, n int) (LaunchOutput, error)
	Copy(ctx context.Context, dev int, bytes, iters int) (CopyOutput, error)
	Collective(ctx context.Context, in CollectiveInput) (CollectiveOutput, error)
	Overlap(ctx context.Context, in OverlapInput) (OverlapOutput, error)
	Close() error
}

// Opener opens the node's GPUs: devices nil means all.
type Opener func(ctx context.Context, libs Libraries, devices []int) (Node, error)

// openNode opens the node under ctx's deadline.
func openNode(ctx context.Context, open Opener, libs Libraries, devices []int) (Node, error) {
	var n Node
	err := devcheck.Run(ctx, func() error {
		var err error
		n, err = open(ctx, libs, devices)
		return err
	})
	return n, err
}
