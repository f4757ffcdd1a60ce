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
	// ReasonInvalidSettings: the check's [checks.NAME] settings do not
	// decode or are out of range; unknown. Every check uses this one token.
	ReasonInvalidSettings = "InvalidSettings"
	// ReasonFailed: a check failed without giving a reason of its own.
	ReasonFailed = "Failed"
)

// RunnerReasons are the tokens any check can give, whatever it declares
// (Descriptor.Reasons): those of the framework above, which the runner, the checker
// child and every check's settings give alike.
func RunnerReasons() []string {
	return []string{ReasonTimedOut, ReasonCrashed, ReasonNotStarted, ReasonPanicked, ReasonBadResult,
		ReasonBudgetExpired, ReasonCanceled, ReasonInvalidSettings, ReasonFailed}
}

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

// DrainEntry is one check named in a drain reason, with the token and device
// of its failure.
type DrainEntry struct {
	// Check is the check's registered name ("gemm"), or BudgetCheck.
	Check string
	// Reason is the failure's reason token ("GEMMBelowThreshold").
	Reason string
	// Device is the device that failed ("gpu3"), "" for the node.
	Device string
}

// BudgetCheck is the pseudo-check a drain for an expired budget names.
const BudgetCheck = "budget"

// EntryOf is the drain entry of a failed result.
func EntryOf(r Result) DrainEntry {
	return DrainEntry{Check: r.Check, Reason: r.Reason, Device: r.Device}
}

// FormatDrain writes the short, parseable reason vigil drains a node with,
// naming every entry: the first in
// full ("vigil: gemm GEMMBelowThreshold gpu3"), each further one as
// "+check[:Reason][@device]" ("vigil: gemm GEMMBelowThreshold gpu3
// +disk:DiskSlow +copy:CopyBelowThreshold@gpu1"), so that a run which lifts
// one check still sees the others.
// It returns "" for no entries.
func FormatDrain(entries []DrainEntry) string {
	if len(entries) == 0 {
		return ""
	}
	first := entries[0]
	reason := first.Reason
	if reason == "" {
		reason = ReasonFailed
	}
	parts := []string{"vigil:", token(first.Check), token(reason)}
	if first.Device != "" {
		parts = append(parts, strings.TrimLeft(token(first.Device), "+"))
	}
	for _, e := range entries[1:] {
		s := "+" + token(e.Check)
		if e.Reason != "" {
			s += ":" + token(e.Reason)
		}
		if e.Device != "" {
			s += "@" + token(e.Device)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// SlurmNoteSep is how Slurm appends its own notes to a node's reason
// ("vigil: xid XID79 gpu3 : reboot issued : reboot complete").
const SlurmNoteSep = " : "

func token(s string) string {
	return strings.Join(strings.Fields(s), "_")
}

// ParseDrain splits a reason written by FormatDrain into
// its entries. ok is false for reasons vigil did not write. What Slurm
// appends to a reason (" : reboot issued", " : reboot complete") and
// words in parentheses (a NeedsService drain's count) are not entries.
func ParseDrain(s string) (entries []DrainEntry, ok bool) {
	s, _, _ = strings.Cut(s, SlurmNoteSep)
	s, _, _ = strings.Cut(s, " (")
	f := strings.Fields(s)
	if len(f) < 3 || f[0] != "vigil:" {
		return nil, false
	}
	first := DrainEntry{Check: f[1], Reason: f[2]}
	rest := f[3:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "+") {
		first.Device = rest[0]
		rest = rest[1:]
	}
	entries = append(entries, first)
	for _, w := range rest {
		if !strings.HasPrefix(w, "+") || len(w) == 1 {
			continue // words vigil did not write: ignored, never a check
		}
		name, dev, _ := strings.Cut(w[1:], "@")
		check, reason, _ := strings.Cut(name, ":")
		if check == "" {
			continue
		}
		entries = append(entries, DrainEntry{Check: check, Reason: reason, Device: dev})
	}
	return entries, true
}
