package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/internal/textutil"
)

// Reasons of the command check.
const (
	// ReasonCommandNotConfigured: [checks.command] has no command (unknown).
	ReasonCommandNotConfigured = "CommandNotConfigured"
	// ReasonCommandNotStarted: the command could not be started (unknown).
	ReasonCommandNotStarted = "CommandNotStarted"
	// ReasonCommandFailed: the command exited non-zero or reported failure (fail).
	ReasonCommandFailed = "CommandFailed"
	// ReasonCommandTimedOut: the command ran past its timeout (fail).
	ReasonCommandTimedOut = "CommandTimedOut"
	// ReasonCommandBadOutput: its output was not the JSON expected (unknown).
	ReasonCommandBadOutput = "CommandBadOutput"
	// ReasonCommandValueMissing: a value with a threshold was not reported (unknown).
	ReasonCommandValueMissing = "CommandValueMissing"
	// ReasonCommandBelowThreshold / AboveThreshold: a reported value broke its limit (fail).
	ReasonCommandBelowThreshold = "CommandBelowThreshold"
	ReasonCommandAboveThreshold = "CommandAboveThreshold"
)

// CommandSettings are the settings of [checks.command].
type CommandSettings struct {
	// Command is the argv to run, e.g. ["/opt/bench/train_step.py", "--json"].
	Command []string `toml:"command"`
	// Timeout is how long it may run; it is killed (with its process group) after.
	Timeout time.Duration `toml:"timeout"`
	// Env are extra KEY=VALUE environment entries.
	Env []string `toml:"env"`
	// Dir is the working directory; empty means vigil's.
	Dir string `toml:"dir"`
	// Min and Max are limits on the reported values by name.
	Min map[string]float64 `toml:"min"`
	Max map[string]float64 `toml:"max"`
}

// DefaultCommandSettings are the shipped settings: no command.
func DefaultCommandSettings() CommandSettings {
	return CommandSettings{Timeout: 5 * time.Minute}
}

// commandOutput is the JSON a command prints: either this shape or a flat
// object of numbers ({"tokens_per_s": 1234, "loss": 2.1}).
type commandOutput struct {
	// Values are the measurements.
	Values []commandValue `json:"values"`
	// Status, when "fail", fails the check whatever the values; "pass" or
	// empty lets the thresholds decide.
	Status string `json:"status"`
	// Reason and Message describe a failure.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type commandValue struct {
	Device string   `json:"device"`
	Name   string   `json:"name"`
	Value  *float64 `json:"value"`
	Unit   string   `json:"unit"`
}

// parseCommandOutput reads the command's stdout: the whole of it as one
// JSON object, or else its last non-empty line (so a command may log
// before printing its result).
func parseCommandOutput(out []byte) (commandOutput, error) {
	var errFirst error
	for i, cand := range [][]byte{bytes.TrimSpace(out), lastLine(out)} {
		if len(cand) == 0 || (i == 1 && bytes.Equal(cand, bytes.TrimSpace(out))) {
			continue
		}
		co, err := parseJSONObject(cand)
		if err == nil {
			return co, nil
		}
		if errFirst == nil {
			errFirst = err
		}
	}
	if errFirst == nil {
		errFirst = errors.New("no output")
	}
	return commandOutput{}, errFirst
}

func lastLine(out []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return bytes.TrimSpace(lines[len(lines)-1])
}

func parseJSONObject(b []byte) (commandOutput, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return commandOutput{}, fmt.Errorf("not a JSON object: %w", err)
	}
	var co commandOutput
	if _, ok := raw["values"]; ok {
		if err := json.Unmarshal(b, &co); err != nil {
			return commandOutput{}, err
		}
		for i, v := range co.Values {
			if v.Name == "" || v.Value == nil {
				return commandOutput{}, fmt.Errorf("values[%d]: name and value are required", i)
			}
		}
		return co, nil
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "status", "reason", "message":
			var s string
			if err := json.Unmarshal(raw[k], &s); err != nil {
				return commandOutput{}, fmt.Errorf("%s: %w", k, err)
			}
			*map[string]*string{"status": &co.Status, "reason": &co.Reason, "message": &co.Message}[k] = s
			continue
		}
		var f float64
		if err := json.Unmarshal(raw[k], &f); err != nil || k == "" {
			continue // not a named number: ignored
		}
		co.Values = append(co.Values, commandValue{Name: k, Value: &f})
	}
	if len(co.Values) == 0 && co.Status == "" {
		return commandOutput{}, errors.New("the object holds no numeric values")
	}
	return co, nil
}

type commandCheck struct{}

func init() { benchmarks.Register(commandCheck{}) }

// Spec describes the check: off by default, it runs only when [prolog]
// checks names it.
func (commandCheck) Spec() benchmarks.Descriptor {
	return benchmarks.Descriptor{Name: "command", Kind: benchmarks.KindPerf, Vendor: benchmarks.VendorNone, Isolated: true,
		Description: "an admin-configured command; its JSON output is held against thresholds",
		Settings:    func() any { s := DefaultCommandSettings(); return &s },
		Reasons: []string{ReasonCommandNotConfigured, ReasonCommandNotStarted, ReasonCommandFailed, ReasonCommandTimedOut,
			ReasonCommandBadOutput, ReasonCommandValueMissing, ReasonCommandBelowThreshold, ReasonCommandAboveThreshold}}
}

func (c commandCheck) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := DefaultCommandSettings()
	if err := devcheck.Decode(env, &s); err != nil {
		return unknown(c.Spec().Name, devcheck.ReasonInvalidSettings, "%v", err)
	}
	if len(s.Command) == 0 || s.Command[0] == "" {
		return unknown(c.Spec().Name, ReasonCommandNotConfigured, "no command set in [checks.command]")
	}
	if err := s.Validate(); err != nil {
		return unknown(c.Spec().Name, devcheck.ReasonInvalidSettings, "%v", err)
	}
	stdout, stderr, err := runCommand(ctx, s, vigilEnv(env))
	var exitErr *exec.ExitError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return benchmarks.Result{Check: c.Spec().Name, Status: benchmarks.StatusFail, Reason: ReasonCommandTimedOut,
			Message: fmt.Sprintf("%s did not finish within %v%s", s.Command[0], s.Timeout, tail(stderr))}
	case errors.As(err, &exitErr):
		return benchmarks.Result{Check: c.Spec().Name, Status: benchmarks.StatusFail, Reason: ReasonCommandFailed,
			Message: fmt.Sprintf("%s: %v%s", s.Command[0], err, tail(stderr))}
	case err != nil:
		return unknown(c.Spec().Name, ReasonCommandNotStarted, "%v", err)
	}
	co, err := parseCommandOutput(stdout)
	if err != nil {
		return unknown(c.Spec().Name, ReasonCommandBadOutput, "%s: output is not vigil's JSON: %v", s.Command[0], err)
	}
	return evaluateCommand(c.Spec().Name, s, co)
}

// evaluateCommand turns parsed output into a Result.
func evaluateCommand(check string, s CommandSettings, co commandOutput) benchmarks.Result {
	r := &result{check: check}
	seen := map[string]bool{}
	for _, v := range co.Values {
		seen[v.Name] = true
		val := benchmarks.Value{Device: v.Device, Name: v.Name, Value: *v.Value, Unit: v.Unit, Status: benchmarks.StatusPass}
		who := v.Name
		if v.Device != "" {
			who = v.Device + " " + v.Name
		}
		if lim, ok := s.Min[v.Name]; ok {
			l := lim
			val.Threshold, val.Op = &l, ">="
			if *v.Value < lim || math.IsNaN(*v.Value) {
				val.Status = benchmarks.StatusFail
				r.fail(ReasonCommandBelowThreshold, v.Device, "%s %g < %g", who, *v.Value, lim)
			}
		}
		if lim, ok := s.Max[v.Name]; ok {
			l := lim
			if val.Threshold == nil {
				val.Threshold, val.Op = &l, "<="
			}
			if *v.Value > lim || math.IsNaN(*v.Value) {
				val.Status = benchmarks.StatusFail
				r.fail(ReasonCommandAboveThreshold, v.Device, "%s %g > %g", who, *v.Value, lim)
			}
		}
		r.values = append(r.values, val)
	}
	if strings.EqualFold(co.Status, "fail") {
		reason := ReasonCommandFailed
		if co.Reason != "" {
			reason = co.Reason
		}
		msg := co.Message
		if msg == "" {
			msg = "the command reported failure"
		}
		r.fails = append([]failure{{reason, "", msg}}, r.fails...)
	}
	var missing []string
	for _, lims := range []map[string]float64{s.Min, s.Max} {
		for name := range lims {
			if !seen[name] {
				missing = append(missing, name)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		r.unknowns = append(r.unknowns, failure{ReasonCommandValueMissing, "", "the command did not report " + strings.Join(missing, ", ")})
	}
	pass := fmt.Sprintf("%d values within limits", len(co.Values))
	if co.Message != "" && len(r.fails) == 0 {
		pass += ": " + co.Message
	}
	return r.done(pass)
}

// vigilEnv is what the command is told of its run: VIGIL_NODE, and for
// a job VIGIL_JOB_ID and VIGIL_DEVICES, the indices of the job's
// accelerators ("1,3", from SLURM_JOB_GPUS; "" when the job named none:
// every device of the node is the command's).
func vigilEnv(env *benchmarks.Env) []string {
	devs := make([]string, len(env.Devices))
	for i, d := range env.Devices {
		devs[i] = strconv.Itoa(d)
	}
	return []string{"VIGIL_NODE=" + env.Node, "VIGIL_JOB_ID=" + env.JobID, "VIGIL_DEVICES=" + strings.Join(devs, ",")}
}

// runCommand runs s.Command in its own process group, killed with the
// whole group at the timeout or when ctx ends, with vigil's variables
// (vigilEnv) and then the configured env added to the environment.
func runCommand(ctx context.Context, s CommandSettings, vigil []string) (stdout, stderr []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	cmd := osutil.Command(ctx, 2*time.Second, s.Command...)
	cmd.Dir = s.Dir
	cmd.Env = append(append(os.Environ(), vigil...), s.Env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil && err != nil {
		return o.Bytes(), e.Bytes(), fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
	}
	return o.Bytes(), e.Bytes(), err
}

// tail is the end of a command's stderr for messages.
func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	return " (stderr: " + textutil.Tail(s, 300, "…") + ")"
}

// Validate reports out-of-range settings, naming the key. An empty command
// is not an error here: the check then reports CommandNotConfigured.
func (s *CommandSettings) Validate() error {
	return positive("timeout", s.Timeout)
}

// result assembles a check's Result from its values and findings. prefix
// names the reasons: prefix+"BelowThreshold", prefix+"BelowPeers" (or
// "Above…" for lower-is-better metrics).
type result struct {
	check    string
	values   []benchmarks.Value
	fails    []failure
	unknowns []failure
	notes    []string
}

type failure struct {
	reason, device, msg string
}

func (r *result) fail(reason, device, format string, args ...any) {
	r.fails = append(r.fails, failure{reason, device, fmt.Sprintf(format, args...)})
}

func (r *result) done(pass string) benchmarks.Result {
	res := benchmarks.Result{Check: r.check, Values: r.values, Status: benchmarks.StatusPass}
	if len(r.fails) > 0 {
		res.Status = benchmarks.StatusFail
		res.Reason = r.fails[0].reason
		res.Device = r.fails[0].device
		var msgs []string
		for _, f := range r.fails {
			msgs = append(msgs, f.msg)
		}
		res.Message = strings.Join(append(msgs, r.notes...), "; ")
		return res
	}
	if len(r.unknowns) > 0 {
		res.Status = benchmarks.StatusUnknown
		res.Reason = r.unknowns[0].reason
		var msgs []string
		for _, f := range r.unknowns {
			msgs = append(msgs, f.msg)
		}
		res.Message = strings.Join(append(msgs, r.notes...), "; ")
		return res
	}
	res.Message = strings.Join(append([]string{pass}, r.notes...), "; ")
	return res
}

// positive checks a duration setting.
func positive(name string, d time.Duration) error {
	if d <= 0 {
		return benchmarks.BadSetting(name, "%v: must be positive", d)
	}
	return nil
}
