package dcmi

import (
	"errors"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// Code is the return code of a DCMI call (dcmi_interface_api.h, "Error code
// description": DCMI_OK and DCMI_ERROR_CODE_BASE - n). Published in
// Huawei's header, e.g. Ascend/mind-cluster
// component/ascend-common/devmanager/dcmi/dcmi_interface_api.h.
type Code int

// OK is DCMI_OK.
const OK Code = 0

// DCMI_ERROR_CODE_BASE - n.
const (
	errBase               Code = -8000
	ErrInvalidParameter        = errBase - 1   // DCMI_ERR_CODE_INVALID_PARAMETER
	ErrOperNotPermitted        = errBase - 2   // DCMI_ERR_CODE_OPER_NOT_PERMITTED
	ErrMemOperateFail          = errBase - 3   // DCMI_ERR_CODE_MEM_OPERATE_FAIL
	ErrSecureFunFail           = errBase - 4   // DCMI_ERR_CODE_SECURE_FUN_FAIL
	ErrInnerErr                = errBase - 5   // DCMI_ERR_CODE_INNER_ERR
	ErrTimeOut                 = errBase - 6   // DCMI_ERR_CODE_TIME_OUT
	ErrInvalidDeviceID         = errBase - 7   // DCMI_ERR_CODE_INVALID_DEVICE_ID
	ErrDeviceNotExist          = errBase - 8   // DCMI_ERR_CODE_DEVICE_NOT_EXIST
	ErrIoctlFail               = errBase - 9   // DCMI_ERR_CODE_IOCTL_FAIL
	ErrSendMsgFail             = errBase - 10  // DCMI_ERR_CODE_SEND_MSG_FAIL
	ErrRecvMsgFail             = errBase - 11  // DCMI_ERR_CODE_RECV_MSG_FAIL
	ErrNotReady                = errBase - 12  // DCMI_ERR_CODE_NOT_REDAY (sic)
	ErrNotSupportInDocker      = errBase - 13  // DCMI_ERR_CODE_NOT_SUPPORT_IN_CONTAINER
	ErrFileOperateFail         = errBase - 14  // DCMI_ERR_CODE_FILE_OPERATE_FAIL
	ErrResetFail               = errBase - 15  // DCMI_ERR_CODE_RESET_FAIL
	ErrAbortOperate            = errBase - 16  // DCMI_ERR_CODE_ABORT_OPERATE
	ErrIsUpgrading             = errBase - 17  // DCMI_ERR_CODE_IS_UPGRADING
	ErrResourceOccupied        = errBase - 20  // DCMI_ERR_CODE_RESOURCE_OCCUPIED
	ErrPartitionNotRight       = errBase - 22  // DCMI_ERR_CODE_PARTITION_NOT_RIGHT
	ErrNotSupport              = errBase - 255 // DCMI_ERR_CODE_NOT_SUPPORT
)

// ErrNotSupported is matched (errors.Is) by an Error whose code says the
// device or driver does not support the call (DCMI_ERR_CODE_NOT_SUPPORT,
// DCMI_ERR_CODE_NOT_SUPPORT_IN_CONTAINER).
var ErrNotSupported = errors.New("not supported")

// ErrNoDevice is matched by an Error whose code says the device does not
// exist (DCMI_ERR_CODE_DEVICE_NOT_EXIST, DCMI_ERR_CODE_INVALID_DEVICE_ID).
var ErrNoDevice = errors.New("no such device")

// Name is the header's name of c, or "dcmi error N".
func (c Code) Name() string { return codes.Name(c) }

// Matches says whether c is one of the codes of ErrNotSupported or
// ErrNoDevice.
func (c Code) Matches(target error) bool { return codes.Matches(c, target) }

// Error is a failed DCMI call. DCMI has no call that names or describes a
// code: Name is the header's and Text stays empty.
type Error = dl.Error[Code]

// check turns a return code into an error (nil for DCMI_OK).
func check(op string, code int) error { return dl.NewError(op, Code(code), nil, nil) }

// codes are the header's names of the return codes and the codes of each
// sentinel error.
var codes = dl.Codes[Code]{
	Unknown: "dcmi error %d",
	Sentinels: map[error][]Code{
		ErrNotSupported: {ErrNotSupport, ErrNotSupportInDocker},
		ErrNoDevice:     {ErrDeviceNotExist, ErrInvalidDeviceID},
	},
	Names: map[Code]string{
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
	},
}
