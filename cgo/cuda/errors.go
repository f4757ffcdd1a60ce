package cuda

import (
	"errors"

	"github.com/vigil-hpc/vigil/cgo/dl"
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

// ErrDevice is wrapped by errors that mean the device itself failed while
// running work (illegal address, launch failure, uncorrectable ECC): a node
// fault rather than a setup problem.
var ErrDevice = errors.New("device fault")

// Name is the header's name of r, or "CUresult(N)".
func (r Result) Name() string { return codes.Name(r) }

// Matches says whether r is one of the codes of ErrDevice.
func (r Result) Matches(target error) bool { return codes.Matches(r, target) }

// Error is a failed CUDA driver call; Name and Text are cuGetErrorName's
// and cuGetErrorString's.
type Error = dl.Error[Result]

// codes' Names are used when cuGetErrorName is unavailable or fails (as it
// does in the stub library).
var codes = dl.Codes[Result]{
	Unknown:   "CUresult(%d)",
	Sentinels: map[error][]Result{ErrDevice: {ErrIllegalAddress, ErrLaunchTimeout, ErrLaunchFailed, ErrECCUncorrectable}},
	Names: map[Result]string{
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
	},
}
