package nccl

import "fmt"

// Result is an ncclResult_t.
type Result int

// Result values (nccl.h, enum ncclResult_t).
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
)

var resultNames = map[Result]string{
	Success:            "ncclSuccess",
	UnhandledCudaError: "ncclUnhandledCudaError",
	SystemError:        "ncclSystemError",
	InternalError:      "ncclInternalError",
	InvalidArgument:    "ncclInvalidArgument",
	InvalidUsage:       "ncclInvalidUsage",
	RemoteError:        "ncclRemoteError",
	InProgress:         "ncclInProgress",
}

// Error is a failed NCCL call.
type Error struct {
	// Op is the failed function.
	Op string
	// Code is the result.
	Code Result
	// Name is the enum name; Text is ncclGetErrorString's description.
	Name, Text string
}

func (e *Error) Error() string {
	if e.Text != "" {
		return fmt.Sprintf("%s: %s (%d): %s", e.Op, e.Name, int(e.Code), e.Text)
	}
	return fmt.Sprintf("%s: %s (%d)", e.Op, e.Name, int(e.Code))
}

func newError(op string, code Result, text func(Result) string) error {
	if code == Success {
		return nil
	}
	e := &Error{Op: op, Code: code}
	if s, ok := resultNames[code]; ok {
		e.Name = s
	} else {
		e.Name = fmt.Sprintf("ncclResult(%d)", int(code))
	}
	if text != nil {
		e.Text = text(code)
	}
	return e
}
