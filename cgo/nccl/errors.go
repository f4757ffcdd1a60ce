package nccl

import "github.com/vigil-hpc/vigil/cgo/dl"

// Result is an ncclResult_t.
type Result int

// Result values (nccl.h, enum ncclResult_t), in the header's order.
const (
	Success Result = iota
	UnhandledCudaError
	SystemError
	InternalError
	InvalidArgument
	InvalidUsage
	RemoteError
	InProgress
)

// Name is the header's name of r, or "ncclResult(N)".
func (r Result) Name() string { return codes.Name(r) }

// Matches is false: no NCCL result stands for a sentinel; callers look at
// the Code (errors.As).
func (Result) Matches(error) bool { return false }

// Error is a failed NCCL call; Text is ncclGetErrorString's description.
type Error = dl.Error[Result]

// codes are the header's names of the Result values.
var codes = dl.Codes[Result]{
	Unknown: "ncclResult(%d)",
	Names: map[Result]string{
		Success:            "ncclSuccess",
		UnhandledCudaError: "ncclUnhandledCudaError",
		SystemError:        "ncclSystemError",
		InternalError:      "ncclInternalError",
		InvalidArgument:    "ncclInvalidArgument",
		InvalidUsage:       "ncclInvalidUsage",
		RemoteError:        "ncclRemoteError",
		InProgress:         "ncclInProgress",
	},
}
