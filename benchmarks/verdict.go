package benchmarks

import "strings"

// Reason tokens the framework itself gives results.
const (
	// ReasonTimedOut: the check did not finish by its deadline (a hung
	// device call); the result is a fail.
	ReasonTimedOut = "CheckTimedOut"
	// ReasonCrashed: the checker process died without a result; unknown.
	ReasonCrashed = "CheckCrashed"
	// ReasonNotStarted: the checker process could not be started; unknown.
	ReasonNotStarted = "CheckNotStarted"
	// ReasonPanicked: an in-process check panicked; unknown.
	ReasonPanicked = "CheckPanicked"
	// ReasonBadResult: the checker returned something unreadable; unknown.
	ReasonBadResult = "CheckBadResult"
	// ReasonBudgetExpired: the run's total budget ran out before or while
	// the check ran; unknown (the run as a whole is flagged BudgetExpired).
	ReasonBudgetExpired = "BudgetExpired"
	// ReasonCanceled: the run was canceled (vigil was told to stop); unknown.
	ReasonCanceled = "Canceled"
)

// Verdict folds results into the node's verdict: fail when any check
// failed, unknown when none failed but some could not tell, else pass.
// An empty run passes.
func Verdict(results []Result) Status {
	v := StatusPass
	for _, r := range results {
		switch r.Status {
		case StatusFail:
			return StatusFail
		case StatusUnknown:
			v = StatusUnknown
		}
	}
	return v
}

// FirstFailure returns the first failed result, or false when none failed.
func FirstFailure(results []Result) (Result, bool) {
	for _, r := range results {
		if r.Status == StatusFail {
			return r, true
		}
	}
	return Result{}, false
}

// DrainReason builds the short, parseable reason vigil drains a node with:
// "vigil: <check> <Reason> [<device>]", e.g. "vigil: gpu-count
// GPUCountMismatch" or "vigil: nvml-ecc ECCUncorrectable gpu3". Spaces inside
// the parts are replaced so the reason splits into at most four fields.
func DrainReason(r Result) string {
	reason := r.Reason
	if reason == "" {
		reason = "Failed"
	}
	parts := []string{"vigil:", token(r.Check), token(reason)}
	if r.Device != "" {
		parts = append(parts, token(r.Device))
	}
	return strings.Join(parts, " ")
}

func token(s string) string {
	return strings.Join(strings.Fields(s), "_")
}

// ParseDrainReason splits a reason written by DrainReason into its check,
// reason token and device. ok is false for reasons vigil did not write.
func ParseDrainReason(s string) (check, reason, device string, ok bool) {
	f := strings.Fields(s)
	if len(f) < 3 || f[0] != "vigil:" {
		return "", "", "", false
	}
	if len(f) > 3 {
		device = f[3]
	}
	return f[1], f[2], device, true
}
