// Package report records what a vigil run found: one JSON report per run,
// a Prometheus textfile for node_exporter's textfile collector, and a
// readable table for people. Files are written atomically (temp file, fsync,
// rename) so readers never see half a report.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/osutil"
)

// Version is the JSON report's format version (field "v").
const Version = 1

// Report is one run of vigil-prolog, vigil-epilog or a health run.
type Report struct {
	// V is the format version.
	V int `json:"v"`
	// Program is the binary that ran ("vigil-prolog").
	Program string `json:"program"`
	// Mode is "prolog", "epilog", "health" or "validate".
	Mode string `json:"mode"`
	// Node is the Slurm node name.
	Node string `json:"node"`
	// Job is the job ID, empty outside a job.
	Job string `json:"job,omitempty"`
	// Start is when the run began.
	Start time.Time `json:"start"`
	// Duration is the run's wall time.
	Duration time.Duration `json:"duration_ns"`
	// DryRun is set when vigil changed nothing on purpose.
	DryRun bool `json:"dry_run,omitempty"`
	// Config says which config the run used and whether it was valid.
	Config ConfigInfo `json:"config"`
	// Accelerators is what the host shows of each vendor's devices.
	Accelerators Accelerators `json:"accelerators"`
	// Components are the parts the run's checks identified (GPUs by UUID
	// and serial, NPUs by serial, HCA ports by GUID), each once, under the
	// names results give them: a result's Device "gpu3" is the component
	// named "gpu3" (TakeComponents). Absent when no check identified any.
	Components []benchmarks.Component `json:"components,omitempty"`
	// Results has one entry per check, in run order.
	Results []benchmarks.Result `json:"results"`
	// NotApplicable lists the checks of the default suite left out because
	// the node shows none of their vendor's devices. They are not results:
	// they never drain and never count toward unknown.
	NotApplicable []benchmarks.NotApplicable `json:"not_applicable,omitempty"`
	// Verdict is the node's verdict over Results.
	Verdict benchmarks.Status `json:"verdict"`
	// BudgetExpired is set when the run's budget ran out.
	BudgetExpired bool `json:"budget_expired,omitempty"`
	// Skipped says why the suite did not run (timing), empty when it ran.
	Skipped string `json:"skipped,omitempty"`
	// Dropped lists the checks the job asked for (--vigil-checks) that did
	// not run, each with the reason.
	Dropped []Dropped `json:"dropped,omitempty"`
	// Action is what vigil did (or, in a dry run, would do) about the node and job.
	Action Action `json:"action"`
	// BadLinks are the bad links of the job's cross-node phase that
	// blame neither end ("n2-n3 (link-fault)"): nobody is drained for
	// them. Each end's report lists those it is an end of; the
	// coordinator's lists all.
	BadLinks []BadLink `json:"bad_links,omitempty"`
	// Notes are things a reader should know (missing pieces, warnings).
	Notes []string `json:"notes,omitempty"`
	// ExitCode is the program's exit code.
	ExitCode int `json:"exit_code"`
	// CheckerMaxRSSKiB is the largest peak memory of a checker child
	// process, in KiB (0 when none ran).
	CheckerMaxRSSKiB int64 `json:"checker_max_rss_kib,omitempty"`
	// Guarded lists the failed checks that did not drain the node because
	// too many nodes were drained for them already ([guard]).
	Guarded []Guarded `json:"guarded,omitempty"`
	// Notices are the admin notifications the run sent or tried ([notify]).
	Notices []Notice `json:"notices,omitempty"`
}

// Guarded is a failed check for which the guard stopped vigil draining.
type Guarded struct {
	// Check is the check's name.
	Check string `json:"check"`
	// Drained is how many nodes vigil drained for the check within the
	// guard's window, this node included as if it were drained.
	Drained int `json:"drained"`
	// Nodes is how many nodes the cluster has.
	Nodes int `json:"nodes"`
	// MaxShare is the [guard] max_share it went above (0.1 is 10%).
	MaxShare float64 `json:"max_share"`
	// Message says it in words, with what to do.
	Message string `json:"message"`
}

// Notice is one admin notification.
type Notice struct {
	// Kind is "drain" (one node), "summary" (the burst is over) or
	// "guard" (the guard stopped draining for a check).
	Kind string `json:"kind"`
	// Checks are the checks it is about.
	Checks []string `json:"checks"`
	// To is "webhook" or "mail:RECIPIENT".
	To string `json:"to"`
	// Sent is true when the message went out.
	Sent bool `json:"sent"`
	// Error is why it did not.
	Error string `json:"error,omitempty"`
}

// Dropped is a check the job asked for that did not run.
type Dropped struct {
	// Check is the check's name as the job gave it.
	Check string `json:"check"`
	// Reason says why it did not run ("removed by [prolog] skip").
	Reason string `json:"reason"`
}

// ConfigInfo describes the config a run used.
type ConfigInfo struct {
	// Path of the config file.
	Path string `json:"path"`
	// Found is false when the default file did not exist and defaults were used.
	Found bool `json:"found"`
	// Valid is false when the file could not be parsed or validated.
	Valid bool `json:"valid"`
	// Errors are the config errors, each naming key and line.
	Errors []string `json:"errors,omitempty"`
}

// Action kinds.
const (
	ActionNone   = "none"   // nothing to do
	ActionDrain  = "drain"  // drain the node
	ActionResume = "resume" // resume a node vigil drained earlier
	ActionHold   = "hold"   // hold (requeue-hold) the job, leave the node alone
	ActionKeep   = "keep"   // someone else's drain, down or maintenance state is left in place
	ActionStay   = "stay"   // vigil's drain stays: the run did not clear every check it names
)

// Action is what vigil did about the node and job.
type Action struct {
	// Kind is one of the Action* constants.
	Kind string `json:"kind"`
	// Reason is the drain reason set, or the reason found.
	Reason string `json:"reason,omitempty"`
	// Done is true when the action was carried out (false in a dry run or on error).
	Done bool `json:"done"`
	// Error is why the action failed, if it did.
	Error string `json:"error,omitempty"`
	// State is the node's Slurm state when another party holds it
	// ("DOWN+DRAIN", "IDLE+DRAIN+MAINTENANCE"), for ActionKeep.
	State string `json:"state,omitempty"`
	// Lifted are the checks of vigil's earlier drain reason that this run
	// ran and passed.
	Lifted []string `json:"lifted,omitempty"`
	// Kept says, for each check left on vigil's drain reason, why this run
	// did not clear it ("disk not run by the epilog").
	Kept []string `json:"kept,omitempty"`
	// Killed lists processes the epilog killed (PIDs).
	Killed []int `json:"killed,omitempty"`
	// Requeue says what became of the job after this node was drained in
	// its prolog: "requeued" (vigil put it back in the queue, unheld),
	// "held" (Slurm holds it: [prolog] max_requeues reached or 0), or why
	// the requeue failed.
	Requeue string `json:"requeue,omitempty"`
	// Remedy is what the [repair] ladder did (or, in a dry run, would do)
	// about the failure beyond the drain; nil when nothing. The fleet view
	// reads it (docs/operations.md, "A memory per component"): a later run
	// that passes the check a drain named tells nothing about the drain
	// when a remedy came between them; a later failure confirms it.
	Remedy *Remedy `json:"remedy,omitempty"`
}

// Remedy kinds.
const (
	RemedyReset        = "reset"         // the device was reset with the vendor's tool
	RemedyReboot       = "reboot"        // Slurm was asked to reboot the node
	RemedyNeedsService = "needs-service" // the ladder is spent: drained for service, never resumed by vigil
)

// Remedy is one step of the repair ladder for one failed component.
type Remedy struct {
	// Kind is one of the Remedy* constants.
	Kind string `json:"kind"`
	// Check and Reason are the failure the remedy is for.
	Check  string `json:"check"`
	Reason string `json:"reason,omitempty"`
	// Device is the component ("gpu3"), "" for the node.
	Device string `json:"device,omitempty"`
	// ID is the component's stable id (a serial, a UUID) when the check
	// reported one.
	ID string `json:"id,omitempty"`
	// Attempt is this remedy's number for the component within the
	// window, 1 for the first; for needs-service, the remedies made.
	Attempt int `json:"attempt"`
	// Max is [repair] max_remedies.
	Max int `json:"max"`
	// Window is [repair] window ("168h0m0s").
	Window string `json:"window"`
	// At is when it was done (or planned).
	At time.Time `json:"at"`
	// Command is the reset's argv, or the scontrol reboot arguments.
	Command []string `json:"command,omitempty"`
	// Done is true when the command succeeded (false in a dry run).
	Done bool `json:"done"`
	// Error is why it failed, or was not tried.
	Error string `json:"error,omitempty"`
	// Note says more: the fallback taken, what the node needs.
	Note string `json:"note,omitempty"`
}

// BadLink is one bad link between two nodes of the job.
type BadLink struct {
	A string `json:"a"`
	B string `json:"b"`
	// State is "link-fault" (both ends work with the others: the path
	// between them is at fault) or "undecided" (the measurements could
	// not tell).
	State string `json:"state"`
}

// Counts returns how many results passed, failed and were unknown.
func (r *Report) Counts() (pass, fail, unknown int) {
	for _, res := range r.Results {
		switch res.Status {
		case benchmarks.StatusPass:
			pass++
		case benchmarks.StatusFail:
			fail++
		default:
			unknown++
		}
	}
	return
}

// FileName is the report's file name: start time (UTC), mode, node and
// job, e.g. 20261129T151000.123Z-prolog-gpu07-job42.json. The node keeps
// the reports of several nodes apart in a shared directory (the prologs of
// one job start in the same millisecond); names still sort by time.
func (r *Report) FileName() string {
	job := "nojob"
	if r.Job != "" {
		job = "job" + sanitize(r.Job)
	}
	ts := r.Start.UTC().Format("20060102T150405.000Z")
	if r.Node == "" {
		return fmt.Sprintf("%s-%s-%s.json", ts, sanitize(r.Mode), job)
	}
	return fmt.Sprintf("%s-%s-%s-%s.json", ts, sanitize(r.Mode), sanitize(r.Node), job)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == ' ' {
			return '_'
		}
		return r
	}, s)
}

// JSON returns the report as indented JSON with a trailing newline.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return append(b, '\n'), nil
}

// WriteJSON writes the report atomically into dir (created when missing)
// and returns its path.
func WriteJSON(dir string, r *Report) (string, error) {
	b, err := r.JSON()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	path := filepath.Join(dir, r.FileName())
	if err := WriteAtomic(path, b, 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// WriteAtomic writes data to path through a temp file in the same
// directory, fsyncs it, renames it into place and fsyncs the directory
// (osutil.WriteFile).
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	if err := osutil.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Prune removes the oldest JSON reports in dir so that at most keep remain
// (keep <= 0 keeps all). Report names sort by time.
func Prune(dir string, keep int) error {
	if keep <= 0 {
		return nil
	}
	m, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	sort.Strings(m)
	for len(m) > keep {
		if err := os.Remove(m[0]); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("report: %w", err)
		}
		m = m[1:]
	}
	return nil
}
