package acl

import (
	"errors"
	"fmt"
)

// Code is an aclError or aclnnStatus return code.
type Code int

// Return codes used to classify failures. aclError values are from CANN's
// acl/acl_base.h and acl/error_codes/rt_error_codes.h; aclnnStatus values
// from aclnn/aclnn_base.h (ACLNN_SUCCESS 0, ACLNN_ERR_PARAM_NULLPTR 161001,
// ACLNN_ERR_PARAM_INVALID 161002, ACLNN_ERR_RUNTIME_ERROR 361001).
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
	ErrNNParamNullptr      Code = 161001 // ACLNN_ERR_PARAM_NULLPTR
	ErrNNParamInvalid      Code = 161002 // ACLNN_ERR_PARAM_INVALID
	ErrNNRuntime           Code = 361001 // ACLNN_ERR_RUNTIME_ERROR
)

var codeNames = map[Code]string{
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
}

// Name is the header's name of a code, or "aclError N".
func (c Code) Name() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("aclError(%d)", int(c))
}

// ErrDevice is matched (errors.Is) by errors that mean the device itself
// failed while running work: AI core/CPU exceptions and timeouts, task
// aborts, driver failures. A node with such a device is unfit.
var ErrDevice = errors.New("device fault")

// ErrNoDevice is matched by errors that mean there is no usable device
// (an invalid device id).
var ErrNoDevice = errors.New("no such device")

// Error is a failed ACL or aclnn call.
type Error struct {
	// Op is the failed function.
	Op string
	// Code is its return code.
	Code Code
	// Msg is aclGetRecentErrMsg's text, when it had one.
	Msg string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Op, e.Code.Name(), int(e.Code))
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// Is matches ErrDevice and ErrNoDevice.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrDevice:
		return isDeviceFault(e.Code)
	case ErrNoDevice:
		return e.Code == ErrRTInvalidDeviceID
	}
	return false
}

// isDeviceFault: runtime errors raised by the device (5070xx, the driver's
// 507899), a driver failure, or a task aborted after an earlier fault.
func isDeviceFault(c Code) bool {
	switch c {
	case ErrDrvFailure, ErrRTDeviceTaskAbort, ErrRTDrvInternal,
		ErrRTAICoreTimeout, ErrRTAICoreException, ErrRTAICPUTimeout, ErrRTAICPUException, ErrRTStreamSyncTimeout:
		return true
	}
	return false
}

func newError(op string, code Code, msg func() string) error {
	if code == Success {
		return nil
	}
	e := &Error{Op: op, Code: code}
	if msg != nil {
		e.Msg = msg()
	}
	return e
}
