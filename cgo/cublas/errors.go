package cublas

import (
	"errors"
	"fmt"
)

// Status is a cublasStatus_t.
type Status int

// Status values (cublas_api.h, enum cublasStatus_t).
const (
	StatusSuccess         Status = 0
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

var statusNames = map[Status]string{
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
}

// ErrNoAlgorithm means the heuristic found no algorithm for a GEMM (for
// example FP8 on a device older than compute capability 8.9).
var ErrNoAlgorithm = errors.New("no matmul algorithm")

// ErrUnsupported is matched by errors with status NOT_SUPPORTED or
// ARCH_MISMATCH: the device or library cannot do what was asked.
var ErrUnsupported = errors.New("unsupported on this device")

// Error is a failed cuBLASLt call.
type Error struct {
	// Op is the failed function.
	Op string
	// Code is the status.
	Code Status
	// Name and Text come from cublasLtGetStatusName/String.
	Name, Text string
}

func (e *Error) Error() string {
	if e.Text != "" && e.Text != e.Name {
		return fmt.Sprintf("%s: %s (%d): %s", e.Op, e.Name, int(e.Code), e.Text)
	}
	return fmt.Sprintf("%s: %s (%d)", e.Op, e.Name, int(e.Code))
}

// Is matches ErrUnsupported for NOT_SUPPORTED and ARCH_MISMATCH.
func (e *Error) Is(target error) bool {
	return target == ErrUnsupported && (e.Code == StatusNotSupported || e.Code == StatusArchMismatch)
}

func newError(op string, code Status, name, text func(Status) string) error {
	if code == StatusSuccess {
		return nil
	}
	e := &Error{Op: op, Code: code}
	if name != nil {
		e.Name = name(code)
	}
	if e.Name == "" {
		if s, ok := statusNames[code]; ok {
			e.Name = s
		} else {
			e.Name = fmt.Sprintf("cublasStatus(%d)", int(code))
		}
	}
	if text != nil {
		e.Text = text(code)
	}
	return e
}
