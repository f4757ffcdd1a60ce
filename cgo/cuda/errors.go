package cuda

import (
	"errors"
	"fmt"
)

// Result is a CUresult, the status code every CUDA driver API call returns.
type Result int

// CUresult values vigil branches on or names when the driver cannot
// (values from cuda.h, enum cudaError_enum).
const (
	Success             Result = 0   // CUDA_SUCCESS
	ErrInvalidValue     Result = 1   // CUDA_ERROR_INVALID_VALUE
	ErrOutOfMemory      Result = 2   // CUDA_ERROR_OUT_OF_MEMORY
	ErrNotInitialized   Result = 3   // CUDA_ERROR_NOT_INITIALIZED
	ErrDeinitialized    Result = 4   // CUDA_ERROR_DEINITIALIZED
	ErrStubLibrary      Result = 34  // CUDA_ERROR_STUB_LIBRARY
	ErrNoDevice         Result = 100 // CUDA_ERROR_NO_DEVICE
	ErrInvalidDevice    Result = 101 // CUDA_ERROR_INVALID_DEVICE
	ErrInvalidPTX       Result = 218 // CUDA_ERROR_INVALID_PTX
	ErrIllegalAddress   Result = 700 // CUDA_ERROR_ILLEGAL_ADDRESS
	ErrLaunchTimeout    Result = 702 // CUDA_ERROR_LAUNCH_TIMEOUT
	ErrLaunchFailed     Result = 719 // CUDA_ERROR_LAUNCH_FAILED
	ErrNotPermitted     Result = 800 // CUDA_ERROR_NOT_PERMITTED
	ErrNotSupported     Result = 801 // CUDA_ERROR_NOT_SUPPORTED
	ErrUnknown          Result = 999 // CUDA_ERROR_UNKNOWN
	ErrECCUncorrectable Result = 214 // CUDA_ERROR_ECC_UNCORRECTABLE
)

// knownNames are used when cuGetErrorName is unavailable or fails.
var knownNames = map[Result]string{
	Success:             "CUDA_SUCCESS",
	ErrInvalidValue:     "CUDA_ERROR_INVALID_VALUE",
	ErrOutOfMemory:      "CUDA_ERROR_OUT_OF_MEMORY",
	ErrNotInitialized:   "CUDA_ERROR_NOT_INITIALIZED",
	ErrDeinitialized:    "CUDA_ERROR_DEINITIALIZED",
	ErrStubLibrary:      "CUDA_ERROR_STUB_LIBRARY",
	ErrNoDevice:         "CUDA_ERROR_NO_DEVICE",
	ErrInvalidDevice:    "CUDA_ERROR_INVALID_DEVICE",
	ErrInvalidPTX:       "CUDA_ERROR_INVALID_PTX",
	ErrIllegalAddress:   "CUDA_ERROR_ILLEGAL_ADDRESS",
	ErrLaunchTimeout:    "CUDA_ERROR_LAUNCH_TIMEOUT",
	ErrLaunchFailed:     "CUDA_ERROR_LAUNCH_FAILED",
	ErrNotPermitted:     "CUDA_ERROR_NOT_PERMITTED",
	ErrNotSupported:     "CUDA_ERROR_NOT_SUPPORTED",
	ErrUnknown:          "CUDA_ERROR_UNKNOWN",
	ErrECCUncorrectable: "CUDA_ERROR_ECC_UNCORRECTABLE",
}

// ErrDevice is wrapped by errors that mean the device itself failed while
// running work (illegal address, launch failure, uncorrectable ECC): a node
// fault rather than a setup problem.
var ErrDevice = errors.New("device fault")

// Error is a failed CUDA driver call.
type Error struct {
	// Op is the driver function that failed ("cuMemAlloc").
	Op string
	// Code is the CUresult.
	Code Result
	// Name is the code's symbolic name (cuGetErrorName).
	Name string
	// Text is the driver's description (cuGetErrorString).
	Text string
}

func (e *Error) Error() string {
	if e.Text != "" {
		return fmt.Sprintf("%s: %s (%d): %s", e.Op, e.Name, int(e.Code), e.Text)
	}
	return fmt.Sprintf("%s: %s (%d)", e.Op, e.Name, int(e.Code))
}

// Is matches ErrDevice for codes that mean the device failed.
func (e *Error) Is(target error) bool {
	if target != ErrDevice {
		return false
	}
	switch e.Code {
	case ErrIllegalAddress, ErrLaunchTimeout, ErrLaunchFailed, ErrECCUncorrectable:
		return true
	}
	return false
}

// newError builds an Error; name and text look the code up in the driver
// and may be nil or fail (return ok false), in which case a built-in table
// is used.
func newError(op string, code Result, name, text func(Result) (string, bool)) error {
	if code == Success {
		return nil
	}
	e := &Error{Op: op, Code: code}
	if name != nil {
		if s, ok := name(code); ok {
			e.Name = s
		}
	}
	if e.Name == "" {
		if s, ok := knownNames[code]; ok {
			e.Name = s
		} else {
			e.Name = fmt.Sprintf("CUresult(%d)", int(code))
		}
	}
	if text != nil {
		if s, ok := text(code); ok {
			e.Text = s
		}
	}
	return e
}
