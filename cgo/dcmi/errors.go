package dcmi

import (
	"errors"
	"fmt"
)

// Return codes of DCMI calls (dcmi_interface_api.h, "Error code
// description": DCMI_OK and DCMI_ERROR_CODE_BASE - n). Published in
// Huawei's header, e.g. Ascend/mind-cluster
// component/ascend-common/devmanager/dcmi/dcmi_interface_api.h.
const (
	OK                    = 0
	errBase               = -8000
	ErrInvalidParameter   = errBase - 1   // DCMI_ERR_CODE_INVALID_PARAMETER
	ErrOperNotPermitted   = errBase - 2   // DCMI_ERR_CODE_OPER_NOT_PERMITTED
	ErrMemOperateFail     = errBase - 3   // DCMI_ERR_CODE_MEM_OPERATE_FAIL
	ErrSecureFunFail      = errBase - 4   // DCMI_ERR_CODE_SECURE_FUN_FAIL
	ErrInnerErr           = errBase - 5   // DCMI_ERR_CODE_INNER_ERR
	ErrTimeOut            = errBase - 6   // DCMI_ERR_CODE_TIME_OUT
	ErrInvalidDeviceID    = errBase - 7   // DCMI_ERR_CODE_INVALID_DEVICE_ID
	ErrDeviceNotExist     = errBase - 8   // DCMI_ERR_CODE_DEVICE_NOT_EXIST
	ErrIoctlFail          = errBase - 9   // DCMI_ERR_CODE_IOCTL_FAIL
	ErrSendMsgFail        = errBase - 10  // DCMI_ERR_CODE_SEND_MSG_FAIL
	ErrRecvMsgFail        = errBase - 11  // DCMI_ERR_CODE_RECV_MSG_FAIL
	ErrNotReady           = errBase - 12  // DCMI_ERR_CODE_NOT_REDAY (sic)
	ErrNotSupportInDocker = errBase - 13  // DCMI_ERR_CODE_NOT_SUPPORT_IN_CONTAINER
	ErrFileOperateFail    = errBase - 14  // DCMI_ERR_CODE_FILE_OPERATE_FAIL
	ErrResetFail          = errBase - 15  // DCMI_ERR_CODE_RESET_FAIL
	ErrAbortOperate       = errBase - 16  // DCMI_ERR_CODE_ABORT_OPERATE
	ErrIsUpgrading        = errBase - 17  // DCMI_ERR_CODE_IS_UPGRADING
	ErrResourceOccupied   = errBase - 20  // DCMI_ERR_CODE_RESOURCE_OCCUPIED
	ErrPartitionNotRight  = errBase - 22  // DCMI_ERR_CODE_PARTITION_NOT_RIGHT
	ErrNotSupport         = errBase - 255 // DCMI_ERR_CODE_NOT_SUPPORT
)

var codeNames = map[int]string{
	OK:                    "DCMI_OK",
	ErrInvalidParameter:   "DCMI_ERR_CODE_INVALID_PARAMETER",
	ErrOperNotPermitted:   "DCMI_ERR_CODE_OPER_NOT_PERMITTED",
	ErrMemOperateFail:     "DCMI_ERR_CODE_MEM_OPERATE_FAIL",
	ErrSecureFunFail:      "DCMI_ERR_CODE_SECURE_FUN_FAIL",
	ErrInnerErr:           "DCMI_ERR_CODE_INNER_ERR",
	ErrTimeOut:            "DCMI_ERR_CODE_TIME_OUT",
	ErrInvalidDeviceID:    "DCMI_ERR_CODE_INVALID_DEVICE_ID",
	ErrDeviceNotExist:     "DCMI_ERR_CODE_DEVICE_NOT_EXIST",
	ErrIoctlFail:          "DCMI_ERR_CODE_IOCTL_FAIL",
	ErrSendMsgFail:        "DCMI_ERR_CODE_SEND_MSG_FAIL",
	ErrRecvMsgFail:        "DCMI_ERR_CODE_RECV_MSG_FAIL",
	ErrNotReady:           "DCMI_ERR_CODE_NOT_REDAY",
	ErrNotSupportInDocker: "DCMI_ERR_CODE_NOT_SUPPORT_IN_CONTAINER",
	ErrFileOperateFail:    "DCMI_ERR_CODE_FILE_OPERATE_FAIL",
	ErrResetFail:          "DCMI_ERR_CODE_RESET_FAIL",
	ErrAbortOperate:       "DCMI_ERR_CODE_ABORT_OPERATE",
	ErrIsUpgrading:        "DCMI_ERR_CODE_IS_UPGRADING",
	ErrResourceOccupied:   "DCMI_ERR_CODE_RESOURCE_OCCUPIED",
	ErrPartitionNotRight:  "DCMI_ERR_CODE_PARTITION_NOT_RIGHT",
	ErrNotSupport:         "DCMI_ERR_CODE_NOT_SUPPORT",
}

// ErrNotSupported is matched (errors.Is) by an Error whose code says the
// device or driver does not support the call (DCMI_ERR_CODE_NOT_SUPPORT,
// DCMI_ERR_CODE_NOT_SUPPORT_IN_CONTAINER).
var ErrNotSupported = errors.New("not supported")

// ErrNoDevice is matched by an Error whose code says the device does not
// exist (DCMI_ERR_CODE_DEVICE_NOT_EXIST, DCMI_ERR_CODE_INVALID_DEVICE_ID).
var ErrNoDevice = errors.New("no such device")

// Error is a failed DCMI call.
type Error struct {
	// Op is the DCMI function that failed.
	Op string
	// Code is its return code.
	Code int
}

// CodeName is the header's name of a return code, or "dcmi error N".
func CodeName(code int) string {
	if s, ok := codeNames[code]; ok {
		return s
	}
	return fmt.Sprintf("dcmi error %d", code)
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Op, CodeName(e.Code), e.Code)
}

// Is lets errors.Is match ErrNotSupported and ErrNoDevice.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotSupported:
		return e.Code == ErrNotSupport || e.Code == ErrNotSupportInDocker
	case ErrNoDevice:
		return e.Code == ErrDeviceNotExist || e.Code == ErrInvalidDeviceID
	}
	return false
}

// check turns a return code into an error (nil for DCMI_OK).
func check(op string, code int) error {
	if code == OK {
		return nil
	}
	return &Error{Op: op, Code: code}
}
