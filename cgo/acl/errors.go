package acl

import (
	"errors"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// Code is an aclError or aclnnStatus return code.
type Code int

// aclError values used to classify failures, from CANN's acl/acl_base.h and
// acl/error_codes/rt_error_codes.h.
const (
	Success                Code = 0      // ACL_SUCCESS / ACLNN_SUCCESS
	ErrInvalidParam        Code = 100000 // ACL_ERROR_INVALID_PARAM
	ErrUninitialize        Code = 100001 // ACL_ERROR_UNINITIALIZE
	ErrRepeatInitialize    Code = 100002 // ACL_ERROR_REPEAT_INITIALIZE
	ErrRTParamInvalid      Code = 107000 // ACL_ERROR_RT_PARAM_INVALID
	ErrRTInvalidDeviceID   Code = 107001 // ACL_ERROR_RT_INVALID_DEVICEID
	ErrRTDeviceTaskAbort   Code = 107022 // ACL_ERROR_RT_DEVICE_TASK_ABORT
	ErrRTMemoryAllocation  Code = 207001 // ACL_ERROR_RT_MEMORY_ALLOCATION
	ErrInternal            Code = 500000 // ACL_ERROR_INTERNAL_ERROR
	ErrFailure             Code = 500001 // ACL_ERROR_FAILURE
	ErrGEFailure           Code = 500002 // ACL_ERROR_GE_FAILURE
	ErrRTFailure           Code = 500003 // ACL_ERROR_RT_FAILURE
	ErrDrvFailure          Code = 500004 // ACL_ERROR_DRV_FAILURE
	ErrProfilingFailure    Code = 500005 // ACL_ERROR_PROFILING_FAILURE
	ErrRTInternal          Code = 507000 // ACL_ERROR_RT_INTERNAL_ERROR
	ErrRTAICoreTimeout     Code = 507014 // ACL_ERROR_RT_AICORE_TIMEOUT
	ErrRTAICoreException   Code = 507015 // ACL_ERROR_RT_AICORE_EXCEPTION
	ErrRTAICPUTimeout      Code = 507017 // ACL_ERROR_RT_AICPU_TIMEOUT
	ErrRTAICPUException    Code = 507018 // ACL_ERROR_RT_AICPU_EXCEPTION
	ErrRTStreamSyncTimeout Code = 507046 // ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
	ErrRTDrvInternal       Code = 507899 // ACL_ERROR_RT_DRV_INTERNAL_ERROR
)

// aclnnStatus values, from aclnn/aclnn_base.h (its ACLNN_SUCCESS is 0, as
// Success).
const (
	ErrNNParamNullptr Code = 161001 // ACLNN_ERR_PARAM_NULLPTR
	ErrNNParamInvalid Code = 161002 // ACLNN_ERR_PARAM_INVALID
	ErrNNRuntime      Code = 361001 // ACLNN_ERR_RUNTIME_ERROR
)

// ErrDevice is matched (errors.Is) by errors that mean the device itself
// failed while running work: AI core/CPU exceptions and timeouts, task
// aborts, driver failures. A node with such a device is unfit.
var ErrDevice = errors.New("device fault")

// ErrNoDevice is matched by errors that mean there is no usable device
// (an invalid device id).
var ErrNoDevice = errors.New("no such device")

// Name is the header's name of a code, or "aclError(N)".
func (c Code) Name() string { return codes.Name(c) }

// Matches says whether c is one of the codes of ErrDevice or ErrNoDevice.
func (c Code) Matches(target error) bool { return codes.Matches(c, target) }

// Error is a failed ACL or aclnn call; its Text is aclGetRecentErrMsg's,
// when it had one.
type Error = dl.Error[Code]

// newError is the error of a failed call; msg, which may be nil, is asked
// for the runtime's text only when the call failed.
func newError(op string, code Code, msg func() string) error {
	var text func(Code) string
	if msg != nil {
		text = func(Code) string { return msg() }
	}
	return dl.NewError(op, code, nil, text)
}

// codes: the device faults are runtime errors raised by the device (5070xx,
// the driver's 507899), a driver failure, or a task aborted after an
// earlier fault.
var codes = dl.Codes[Code]{
	Unknown: "aclError(%d)",
	Sentinels: map[error][]Code{
		ErrDevice: {ErrDrvFailure, ErrRTDeviceTaskAbort, ErrRTDrvInternal, ErrRTAICoreTimeout, ErrRTAICoreException,
			ErrRTAICPUTimeout, ErrRTAICPUException, ErrRTStreamSyncTimeout},
		ErrNoDevice: {ErrRTInvalidDeviceID},
	},
	Names: map[Code]string{
		Success:                "ACL_SUCCESS",
		ErrInvalidParam:        "ACL_ERROR_INVALID_PARAM",
		ErrUninitialize:        "ACL_ERROR_UNINITIALIZE",
		ErrRepeatInitialize:    "ACL_ERROR_REPEAT_INITIALIZE",
		ErrRTParamInvalid:      "ACL_ERROR_RT_PARAM_INVALID",
		ErrRTInvalidDeviceID:   "ACL_ERROR_RT_INVALID_DEVICEID",
		ErrRTDeviceTaskAbort:   "ACL_ERROR_RT_DEVICE_TASK_ABORT",
		ErrRTMemoryAllocation:  "ACL_ERROR_RT_MEMORY_ALLOCATION",
		ErrInternal:            "ACL_ERROR_INTERNAL_ERROR",
		ErrFailure:             "ACL_ERROR_FAILURE",
		ErrGEFailure:           "ACL_ERROR_GE_FAILURE",
		ErrRTFailure:           "ACL_ERROR_RT_FAILURE",
		ErrDrvFailure:          "ACL_ERROR_DRV_FAILURE",
		ErrProfilingFailure:    "ACL_ERROR_PROFILING_FAILURE",
		ErrRTInternal:          "ACL_ERROR_RT_INTERNAL_ERROR",
		ErrRTAICoreTimeout:     "ACL_ERROR_RT_AICORE_TIMEOUT",
		ErrRTAICoreException:   "ACL_ERROR_RT_AICORE_EXCEPTION",
		ErrRTAICPUTimeout:      "ACL_ERROR_RT_AICPU_TIMEOUT",
		ErrRTAICPUException:    "ACL_ERROR_RT_AICPU_EXCEPTION",
		ErrRTStreamSyncTimeout: "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT",
		ErrRTDrvInternal:       "ACL_ERROR_RT_DRV_INTERNAL_ERROR",
		ErrNNParamNullptr:      "ACLNN_ERR_PARAM_NULLPTR",
		ErrNNParamInvalid:      "ACLNN_ERR_PARAM_INVALID",
		ErrNNRuntime:           "ACLNN_ERR_RUNTIME_ERROR",
	},
}
