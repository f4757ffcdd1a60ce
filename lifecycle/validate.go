package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
	"github.com/vigil-hpc/vigil/slurm"
)

// The validate mode runs the deep suite of [idle] on a node, inside one of
// the validation jobs that `vigil-prolog idle-sweep` submits, and acts on
// its verdict like health mode: the same Decide and apply, so a failure
// drains the node with the usual "vigil: <check> <Reason>" and never
// touches a node someone else holds. What differs is the suite ([idle]
// checks and skip, health facts and performance probes), its budget and
// deadlines, and the record it leaves for the sweep (Validation).

// suite is what a run runs: the checks named (empty: the default suite),
// those left out, and whether only the health facts run.
type suite struct {
	checks, skip []string
	healthOnly   bool
}

// validateSuite is the deep suite of [idle].
func validateSuite(s *settings.Settings) suite {
	return suite{checks: s.Idle.Checks, skip: s.Idle.Skip}
}

// runBudgetOf is the whole run's budget in mode: [idle] budget for the
// validate mode, [prolog] budget for the others.
func runBudgetOf(mode decide.Mode, s *settings.Settings) time.Duration {
	if mode == decide.ModeValidate {
		return s.Idle.Budget
	}
	return s.Prolog.Budget
}

// timeoutOf is a check's deadline in mode: in the validate mode [idle]
// check_timeout, or the check's [prolog.timeouts] entry when longer.
func timeoutOf(mode decide.Mode, s *settings.Settings, name string) time.Duration {
	if mode != decide.ModeValidate {
		return s.Prolog.TimeoutOf(name)
	}
	return max(s.Idle.CheckTimeout, s.Prolog.Timeouts[name])
}

// Outcomes of a Validation besides the verdicts (pass, fail, unknown).
const (
	// OutcomeInterrupted: the run was stopped before its suite ended
	// (Slurm preempted or cancelled the job): the node is not validated.
	OutcomeInterrupted = "interrupted"
)

// ValidationVersion is the version of the Validation record.
const ValidationVersion = 1

// Validation is one node's last validation run, as the validate mode
// writes it to [idle] state_dir/nodes/NODE.json for the sweep.
type Validation struct {
	// V is ValidationVersion.
	V int `json:"v"`
	// Node is the node's name.
	Node string `json:"node"`
	// Job is the validation job's id ("" outside a job).
	Job string `json:"job,omitempty"`
	// Start and End bound the run.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Outcome is the run's verdict (pass, fail, unknown), or interrupted.
	Outcome string `json:"outcome"`
	// Checks are the checks that ran.
	Checks []string `json:"checks"`
	// Action is what the run did to the node (none, drain, resume ...).
	Action string `json:"action"`
}

// Completed reports whether the run went through its suite: a node's
// validation stands from its End on, whatever it found.
func (v Validation) Completed() bool { return v.Outcome != OutcomeInterrupted }

// ValidationsDir is where the validate runs write their records under
// [idle] state_dir.
func ValidationsDir(stateDir string) string { return filepath.Join(stateDir, "nodes") }

// writeValidation records the run for the sweep: its outcome, or
// interrupted when the run was stopped (ctx ended, a check canceled).
func (r *run) writeValidation(ctx context.Context) {
	rep := r.rep
	v := Validation{V: ValidationVersion, Node: rep.Node, Job: rep.Job, Start: rep.Start.UTC(),
		End: rep.Start.Add(rep.Duration).UTC(), Outcome: string(rep.Verdict), Action: string(rep.Action.Kind)}
	for _, res := range rep.Results {
		v.Checks = append(v.Checks, res.Check)
		if res.Reason == benchmarks.ReasonCanceled {
			v.Outcome = OutcomeInterrupted
		}
	}
	if ctx.Err() != nil {
		v.Outcome = OutcomeInterrupted
	}
	path, err := WriteValidation(r.s.Idle.StateDir, v)
	if err != nil {
		r.notes.add("recording the validation for idle-sweep: %v", err)
		r.log.WithError(err).Error("recording the validation for idle-sweep ([idle] state_dir): the sweep will validate this node again")
		return
	}
	r.log.WithField("record", path).WithField("outcome", v.Outcome).Info("validation recorded")
}

// WriteValidation writes v atomically to ValidationsDir(stateDir)/NODE.json
// and returns its path.
func WriteValidation(stateDir string, v Validation) (string, error) {
	if err := slurmName(v.Node); err != nil {
		return "", err
	}
	dir := ValidationsDir(stateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, v.Node+".json")
	return path, osutil.WriteFile(path, append(b, '\n'), 0o644)
}

// maxValidationSize bounds a record the sweep reads, in bytes.
const maxValidationSize = 64 << 10

// ReadValidations reads every node's record under
// ValidationsDir(stateDir), by node. A missing directory is no record; a
// record that cannot be read, is not valid JSON of this version or names
// another node than its file is left out and reported in errs.
func ReadValidations(stateDir string) (map[string]Validation, []error) {
	dir := ValidationsDir(stateDir)
	out := map[string]Validation{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, []error{err}
	}
	var errs []error
	for _, e := range entries {
		node, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		v, err := readValidation(filepath.Join(dir, e.Name()))
		switch {
		case err != nil:
			errs = append(errs, err)
		case v.Node != node:
			errs = append(errs, fmt.Errorf("%s: the record is of node %q", filepath.Join(dir, e.Name()), v.Node))
		default:
			out[node] = v
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return out, errs
}

func readValidation(path string) (Validation, error) {
	var v Validation
	f, err := os.Open(path)
	if err != nil {
		return v, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxValidationSize+1))
	if err != nil {
		return v, err
	}
	if len(b) > maxValidationSize {
		return v, fmt.Errorf("%s: over %d bytes", path, maxValidationSize)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	if v.V != ValidationVersion {
		return v, fmt.Errorf("%s: record version %d, want %d", path, v.V, ValidationVersion)
	}
	return v, nil
}

// slurmName refuses a node name that could leave its directory.
func slurmName(node string) error {
	if node == "" || node == "." || node == ".." || strings.ContainsAny(node, "/\x00") {
		return fmt.Errorf("%w: node %q", slurm.ErrBadName, node)
	}
	return nil
}
