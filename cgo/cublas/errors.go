package cublas

import (
	"errors"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// Status is a cublasStatus_t.
type Status int

// StatusSuccess is CUBLAS_STATUS_SUCCESS.
const StatusSuccess Status = 0

// Failures (cublas_api.h, enum cublasStatus_t).
const (
	StatusNotInitialized  Status = 1
	StatusAllocFailed     Status = 3
	StatusInvalidValue    Status = 7
	StatusArchMismatch    Status = 8
	StatusMappingError    Status = 11
	StatusExecutionFailed Status = 13
	StatusInternalError   Status = 14
	StatusNotSupported    Status = 15
	StatusLicenseError    Status = 16
)

// ErrNoAlgorithm means the heuristic found no algorithm for a GEMM (for
// example FP8 on a device older than compute capability 8.9).
var ErrNoAlgorithm = errors.New("no matmul algorithm")

// ErrUnsupported is matched by errors with status NOT_SUPPORTED or
// ARCH_MISMATCH: the device or library cannot do what was asked.
var ErrUnsupported = errors.New("unsupported on this device")

// Name is the header's name of s, or "cublasStatus(N)".
func (s Status) Name() string { return codes.Name(s) }

// Matches says whether s is one of the codes of ErrUnsupported.
func (s Status) Matches(target error) bool { return codes.Matches(s, target) }

// Error is a failed cuBLASLt call; Name and Text come from
// cublasLtGetStatusName/String.
type Error = dl.Error[Status]

// codes are the header's names of the Status values and the codes of
// ErrUnsupported.
var codes = dl.Codes[Status]{
	Unknown:   "cublasStatus(%d)",
	Sentinels: map[error][]Status{ErrUnsupported: {StatusNotSupported, StatusArchMismatch}},
	Names: map[Status]string{
		StatusSuccess:         "CUBLAS_STATUS_SUCCESS",
		StatusNotInitialized:  "CUBLAS_STATUS_NOT_INITIALIZED",
		StatusAllocFailed:     "CUBLAS_STATUS_ALLOC_FAILED",
		StatusInvalidValue:    "CUBLAS_STATUS_INVALID_VALUE",
		StatusArchMismatch:    "CUBLAS_STATUS_ARCH_MISMATCH",
		StatusMappingError:    "CUBLAS_STATUS_MAPPING_ERROR",
		StatusExecutionFailed: "CUBLAS_STATUS_EXECUTION_FAILED",
		StatusInternalError:   "CUBLAS_STATUS_INTERNAL_ERROR",
		StatusNotSupported:    "CUBLAS_STATUS_NOT_SUPPORTED",
		StatusLicenseError:    "CUBLAS_STATUS_LICENSE_ERROR",
	},
}
