// Package devcheck holds what vigil's device checks (packages health,
// device, compute and ascend) share: the tally that turns per-device
// findings into a benchmarks.Result, settings decoding, GEMM input
// generation and verification, the FP16/BF16 element encodings, per-model
// thresholds and the comparison of devices with their peers, and the
// bandwidth arithmetic and data verification of collectives. PCI device
// discovery is package internal/pci, which the prolog's accelerator probe
// shares.
//
// Nothing here talks to a vendor library: the checks keep their own
// bindings and error classification, and call into this package for the
// vendor-neutral parts.
package devcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// Reason tokens that several check packages use alike.
const (
	// ReasonCanceled: the check's deadline passed before every device was
	// read (unknown).
	ReasonCanceled = "Canceled"
	// ReasonInvalidSettings: the check's settings do not decode or are out
	// of range (unknown); the framework's token, which every check uses.
	ReasonInvalidSettings = benchmarks.ReasonInvalidSettings
)

// Fault is one device's fault (or uncertainty) recorded in a Tally.
type Fault struct {
	// Device is the device concerned, "" for the node.
	Device string
	// Reason is the stable reason token.
	Reason string
	// Message is for people.
	Message string
}

// Classifier says what a failed vendor-library call about device (what
// it asked: "ECC error count") means: lost when the library says the
// device itself is gone, so the failure is a fault of the device; an
// uncertainty otherwise. reason and message are the fault's or the
// uncertainty's. Each vendor package has one (NVML's, DCMI's); the rest of
// the bookkeeping is the Tally's.
type Classifier func(device, what string, err error) (lost bool, reason, message string)

// ReasonLibraryError is the reason of a failed library call recorded by a
// Tally without a Classifier (unknown).
const ReasonLibraryError = "LibraryError"

// Tally collects what a check found, device by device, and turns it into a
// Result: any fault makes it fail (the first fault names the reason and
// device), otherwise any uncertainty makes it unknown (the first names the
// reason and device), otherwise it passes. Notes are appended to the
// message whatever the verdict.
type Tally struct {
	// Check is the check's registered name.
	Check string
	// Classify sorts the errors LibErr records; nil makes each one an
	// uncertainty (ReasonLibraryError).
	Classify Classifier
	// Values are the readings recorded so far, in order.
	Values []benchmarks.Value

	fails    []Fault
	unknowns []Fault
	notes    []string
}

// Fail records a fault of device ("" for the node) with a stable reason
// token and a message for people.
func (t *Tally) Fail(device, reason, format string, args ...any) {
	t.fails = append(t.fails, Fault{device, reason, fmt.Sprintf(format, args...)})
}

// Unknown records that the check could not tell whether device is fit.
func (t *Tally) Unknown(device, reason, format string, args ...any) {
	t.unknowns = append(t.unknowns, Fault{device, reason, fmt.Sprintf(format, args...)})
}

// Lost records that device is gone: a failed "reachable" reading (0) and
// a fault.
func (t *Tally) Lost(device, reason, format string, args ...any) {
	t.Value(device, "reachable", 0, "", nil, "", benchmarks.StatusFail)
	t.Fail(device, reason, format, args...)
}

// LibErr records a failed vendor-library call about device ("" for the
// node), as t.Classify sorts it: a lost device (Lost), or an uncertainty.
func (t *Tally) LibErr(device, what string, err error) {
	if t.Classify == nil {
		t.Unknown(device, ReasonLibraryError, "%s %s: %v", device, what, err)
		return
	}
	lost, reason, msg := t.Classify(device, what, err)
	if lost {
		t.Lost(device, reason, "%s", msg)
		return
	}
	t.Unknown(device, reason, "%s", msg)
}

// Faults returns the faults recorded so far, in order.
func (t *Tally) Faults() []Fault { return t.fails }

// Note adds a remark to the message that does not change the verdict.
func (t *Tally) Note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// Value records a reading in unit; threshold may be nil (then op is "").
func (t *Tally) Value(device, name string, v float64, unit string, threshold *float64, op string, st benchmarks.Status) {
	t.Values = append(t.Values, benchmarks.Value{Device: device, Name: name, Value: v, Unit: unit,
		Threshold: threshold, Op: op, Status: st})
}

// Canceled records an unknown with ReasonCanceled when ctx has ended, and
// reports whether it had.
func (t *Tally) Canceled(ctx context.Context) bool {
	if err := ctx.Err(); err != nil {
		t.Unknown("", ReasonCanceled, "stopped before all devices were read: %v", err)
		return true
	}
	return false
}

// Result builds the check's Result; passMsg is the message when all is well.
func (t *Tally) Result(passMsg string) benchmarks.Result {
	r := benchmarks.Result{Check: t.Check, Values: t.Values}
	pick := func(fs []Fault) {
		r.Reason, r.Device = fs[0].Reason, fs[0].Device
		msgs := make([]string, 0, len(fs))
		for _, f := range fs {
			msgs = append(msgs, f.Message)
		}
		r.Message = strings.Join(msgs, "; ")
	}
	switch {
	case len(t.fails) > 0:
		r.Status = benchmarks.StatusFail
		pick(t.fails)
	case len(t.unknowns) > 0:
		r.Status = benchmarks.StatusUnknown
		pick(t.unknowns)
	default:
		r.Status = benchmarks.StatusPass
		r.Message = passMsg
	}
	if len(t.notes) > 0 {
		r.Message = strings.TrimPrefix(r.Message+"; "+strings.Join(t.notes, "; "), "; ")
	}
	return r
}

// Decode fills v, which holds the check's defaults, from the check's config
// table ([checks.NAME]); without an env or settings it leaves v as it is.
func Decode(env *benchmarks.Env, v any) error {
	if env == nil || env.Settings == nil {
		return nil
	}
	return env.Settings(v)
}

// DecodeLibraries fills v, which holds the vendor's shipped library
// search, from the check's vendor table ([vendor.NAME]); without an env or
// a config it leaves v as it is.
func DecodeLibraries(env *benchmarks.Env, v any) error {
	if env == nil || env.Libraries == nil {
		return nil
	}
	return env.Libraries(v)
}

// BadSettings is the unknown result (ReasonInvalidSettings) of a check
// whose settings do not decode or are out of range.
func BadSettings(name string, err error) benchmarks.Result {
	return benchmarks.Result{Check: name, Status: benchmarks.StatusUnknown, Reason: ReasonInvalidSettings,
		Message: fmt.Sprintf("settings of [checks.%s]: %v", name, err)}
}

// EnvDevices is the job's device indices, nil (every device) without an env.
func EnvDevices(env *benchmarks.Env) []int {
	if env == nil {
		return nil
	}
	return env.Devices
}

// Plural returns word, or its plural when n is not 1 ("process" → "processes").
func Plural(n int, word string) string {
	switch {
	case n == 1:
		return word
	case strings.HasSuffix(word, "s"):
		return word + "es"
	}
	return word + "s"
}

// Ptr returns a pointer to a copy of v (for Value.Threshold).
func Ptr[T any](v T) *T { return &v }

// ErrHung is returned by Run when ctx ended before the device work did.
var ErrHung = errors.New("device did not finish before the deadline")

// Run calls f in its own goroutine and returns its error, or one wrapping
// ErrHung when ctx ends first (or f fails after ctx ended). A call blocked
// in a vendor library cannot be interrupted; the framework kills the
// checker process, so the goroutine's fate is moot.
func Run(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%w: %v", ErrHung, err)
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrHung, ctx.Err())
	}
}
