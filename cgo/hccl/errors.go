package hccl

import (
	"errors"
	"fmt"
)

// Result is an HcclResult.
type Result int

// Result values (hccl_types.h, enum HcclResult).
const (
	Success          Result = 0  // HCCL_SUCCESS
	EPara            Result = 1  // HCCL_E_PARA
	EPtr             Result = 2  // HCCL_E_PTR
	EMemory          Result = 3  // HCCL_E_MEMORY
	EInternal        Result = 4  // HCCL_E_INTERNAL
	ENotSupport      Result = 5  // HCCL_E_NOT_SUPPORT
	ENotFound        Result = 6  // HCCL_E_NOT_FOUND
	EUnavail         Result = 7  // HCCL_E_UNAVAIL
	ESyscall         Result = 8  // HCCL_E_SYSCALL
	ETimeout         Result = 9  // HCCL_E_TIMEOUT
	EOpenFileFailure Result = 10 // HCCL_E_OPEN_FILE_FAILURE
	ETCPConnect      Result = 11 // HCCL_E_TCP_CONNECT
	ERoCEConnect     Result = 12 // HCCL_E_ROCE_CONNECT
	ETCPTransfer     Result = 13 // HCCL_E_TCP_TRANSFER
	ERoCETransfer    Result = 14 // HCCL_E_ROCE_TRANSFER
	ERuntime         Result = 15 // HCCL_E_RUNTIME
	EDrv             Result = 16 // HCCL_E_DRV
	EProfiling       Result = 17 // HCCL_E_PROFILING
	ECCE             Result = 18 // HCCL_E_CCE
	ENetwork         Result = 19 // HCCL_E_NETWORK
	EAgain           Result = 20 // HCCL_E_AGAIN
	ERemote          Result = 21 // HCCL_E_REMOTE
	ESuspending      Result = 22 // HCCL_E_SUSPENDING
)

var resultNames = map[Result]string{
	Success: "HCCL_SUCCESS", EPara: "HCCL_E_PARA", EPtr: "HCCL_E_PTR", EMemory: "HCCL_E_MEMORY",
	EInternal: "HCCL_E_INTERNAL", ENotSupport: "HCCL_E_NOT_SUPPORT", ENotFound: "HCCL_E_NOT_FOUND",
	EUnavail: "HCCL_E_UNAVAIL", ESyscall: "HCCL_E_SYSCALL", ETimeout: "HCCL_E_TIMEOUT",
	EOpenFileFailure: "HCCL_E_OPEN_FILE_FAILURE", ETCPConnect: "HCCL_E_TCP_CONNECT",
	ERoCEConnect: "HCCL_E_ROCE_CONNECT", ETCPTransfer: "HCCL_E_TCP_TRANSFER",
	ERoCETransfer: "HCCL_E_ROCE_TRANSFER", ERuntime: "HCCL_E_RUNTIME", EDrv: "HCCL_E_DRV",
	EProfiling: "HCCL_E_PROFILING", ECCE: "HCCL_E_CCE", ENetwork: "HCCL_E_NETWORK",
	EAgain: "HCCL_E_AGAIN", ERemote: "HCCL_E_REMOTE", ESuspending: "HCCL_E_SUSPENDING",
}

// ErrLink is matched (errors.Is) by results that mean the links between
// devices failed: RoCE connect or transfer failures, remote completion
// errors, timeouts, driver failures.
var ErrLink = errors.New("collective link failure")

// Error is a failed HCCL call.
type Error struct {
	// Op is the failed function.
	Op string
	// Code is the result.
	Code Result
	// Name is the enum name; Text is HcclGetErrorString's description.
	Name, Text string
}

func (e *Error) Error() string {
	if e.Text != "" {
		return fmt.Sprintf("%s: %s (%d): %s", e.Op, e.Name, int(e.Code), e.Text)
	}
	return fmt.Sprintf("%s: %s (%d)", e.Op, e.Name, int(e.Code))
}

// Is matches ErrLink.
func (e *Error) Is(target error) bool {
	if target != ErrLink {
		return false
	}
	switch e.Code {
	case ERoCEConnect, ERoCETransfer, ERemote, ETimeout, EDrv:
		return true
	}
	return false
}

func newError(op string, code Result, text func(Result) string) error {
	if code == Success {
		return nil
	}
	e := &Error{Op: op, Code: code, Name: fmt.Sprintf("HcclResult(%d)", int(code))}
	if s, ok := resultNames[code]; ok {
		e.Name = s
	}
	if text != nil {
		e.Text = text(code)
	}
	return e
}
