package dl

import (
	"fmt"
	"slices"
)

// Code is a library's return code type (CUresult, HcclResult, aclError,
// ...): an int type that knows its values' names and which sentinel errors
// of its binding a value matches. Every library bound here returns 0 for
// success.
type Code interface {
	~int
	// Name is the header's name of the code ("CUDA_ERROR_LAUNCH_FAILED"),
	// or the C type and the number for a code the binding does not know
	// ("CUresult(12345)").
	Name() string
	// Matches says whether a call that failed with the code matches target
	// for errors.Is: the binding's sentinels (cuda.ErrDevice, hccl.ErrLink).
	Matches(target error) bool
}

// Error is a failed call of a vendor library: the error type of every
// binding (cuda.Error is Error[cuda.Result]), so that they all read and
// print alike.
type Error[C Code] struct {
	// Op is the failed function ("cuMemAlloc").
	Op string
	// Code is its return code.
	Code C
	// Name is the code's name as the library gives it; empty means
	// Code.Name().
	Name string
	// Text is the library's description of the failure, when it has one.
	Text string
}

// Error reads "op: NAME (code)", then ": text" when the library gave a
// text that says more than the name.
func (e *Error[C]) Error() string {
	name := e.Name
	if name == "" {
		name = e.Code.Name()
	}
	if e.Text != "" && e.Text != name {
		return fmt.Sprintf("%s: %s (%d): %s", e.Op, name, int(e.Code), e.Text)
	}
	return fmt.Sprintf("%s: %s (%d)", e.Op, name, int(e.Code))
}

// Is lets errors.Is match the sentinels the code matches.
func (e *Error[C]) Is(target error) bool { return e.Code.Matches(target) }

// NewError is nil for code 0 (success) and otherwise the *Error of the
// failed call op. name and text ask the library for the code's name and
// its description of the failure; either may be nil or answer "", and a
// missing name is the binding's own (Code.Name). They are not called on
// success.
func NewError[C Code](op string, code C, name, text func(C) string) error {
	if code == 0 {
		return nil
	}
	e := &Error[C]{Op: op, Code: code}
	if name != nil {
		e.Name = name(code)
	}
	if e.Name == "" {
		e.Name = code.Name()
	}
	if text != nil {
		e.Text = text(code)
	}
	return e
}

// Codes describes a library's return codes, for its Code type's Name and
// Matches methods.
type Codes[C ~int] struct {
	// Unknown is how a code without a name is written: a format with one
	// %d, such as "CUresult(%d)".
	Unknown string
	// Names are the codes' names in the library's header.
	Names map[C]string
	// Sentinels are the codes that match each of the binding's sentinel
	// errors (errors.Is).
	Sentinels map[error][]C
}

// Name is the header's name of code, or Unknown filled with its number.
func (t *Codes[C]) Name(code C) string {
	if s, ok := t.Names[code]; ok {
		return s
	}
	return fmt.Sprintf(t.Unknown, int(code))
}

// Matches says whether code is one of target's Sentinels.
func (t *Codes[C]) Matches(code C, target error) bool {
	return slices.Contains(t.Sentinels[target], code)
}
