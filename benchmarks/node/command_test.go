package node

import (
	"context"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
)

func commandEnv(t *testing.T, script string, extra string) *benchmarks.Env {
	t.Helper()
	text := "[checks.command]\ncommand = [\"/bin/sh\", \"-c\", '''" + script + "''']\n" + extra
	return envWith(t, "command", text)
}

func TestCommandCheck(t *testing.T) {
	tests := []struct {
		name   string
		script string
		extra  string
		status benchmarks.Status
		reason string
		msg    string
	}{
		{"flat object passes", `echo '{"tokens_per_s": 1234.5, "step_ms": 80}'`,
			"[checks.command.min]\ntokens_per_s = 1000\n[checks.command.max]\nstep_ms = 100\n",
			benchmarks.StatusPass, "", "2 values within limits"},
		{"logs before the result line", `echo "loading model"; echo "step 1 done"; echo '{"tokens_per_s": 1500}'`,
			"[checks.command.min]\ntokens_per_s = 1000\n", benchmarks.StatusPass, "", "1 values"},
		{"below min", `echo '{"tokens_per_s": 900}'`, "[checks.command.min]\ntokens_per_s = 1000\n",
			benchmarks.StatusFail, ReasonCommandBelowThreshold, "tokens_per_s 900 < 1000"},
		{"above max", `echo '{"values": [{"device": "gpu1", "name": "step_ms", "value": 130, "unit": "ms"}]}'`,
			"[checks.command.max]\nstep_ms = 100\n", benchmarks.StatusFail, ReasonCommandAboveThreshold, "gpu1 step_ms 130 > 100"},
		{"command reports failure", `echo '{"status": "fail", "reason": "LossIsNaN", "message": "loss became NaN at step 3"}'`, "",
			benchmarks.StatusFail, "LossIsNaN", "loss became NaN"},
		{"non-zero exit", `echo oops >&2; exit 3`, "", benchmarks.StatusFail, ReasonCommandFailed, "exit status 3 (stderr: oops)"},
		{"bad JSON", `echo 'not json at all'`, "", benchmarks.StatusUnknown, ReasonCommandBadOutput, "not vigil's JSON"},
		{"no numbers", `echo '{"a": "b"}'`, "", benchmarks.StatusUnknown, ReasonCommandBadOutput, "no numeric values"},
		{"threshold value missing", `echo '{"other": 1}'`, "[checks.command.min]\ntokens_per_s = 1000\n",
			benchmarks.StatusUnknown, ReasonCommandValueMissing, "did not report tokens_per_s"},
		{"times out", `sleep 30`, "timeout = \"300ms\"\n", benchmarks.StatusFail, ReasonCommandTimedOut, "did not finish within 300ms"},
		{"grandchild holding the pipe is killed too", `sleep 30 & sleep 30`, "timeout = \"300ms\"\n", benchmarks.StatusFail, ReasonCommandTimedOut, ""},
		{"env and dir", `test "$VIGIL_X" = 42 && test "$(pwd)" = /tmp && echo '{"ok": 1}'`, "env = [\"VIGIL_X=42\"]\ndir = \"/tmp\"\n",
			benchmarks.StatusPass, "", "1 values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Now()
			r := commandCheck{}.Run(context.Background(), commandEnv(t, tt.script, tt.extra))
			if r.Status != tt.status || r.Reason != tt.reason {
				t.Fatalf("result %+v, want %s %s", r, tt.status, tt.reason)
			}
			if !strings.Contains(r.Message, tt.msg) {
				t.Errorf("message %q lacks %q", r.Message, tt.msg)
			}
			if d := time.Since(t0); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestCommandNotConfigured(t *testing.T) {
	r := commandCheck{}.Run(context.Background(), nil)
	if r.Status != benchmarks.StatusUnknown || r.Reason != ReasonCommandNotConfigured {
		t.Errorf("%+v", r)
	}
	if (commandCheck{}).Spec().Default {
		t.Error("the command check must be off unless configured")
	}
	r = commandCheck{}.Run(context.Background(), envWith(t, "command", "[checks.command]\ncommand = [\"/nonexistent/vigil-bench\"]\n"))
	if r.Status != benchmarks.StatusUnknown || r.Reason != ReasonCommandNotStarted {
		t.Errorf("%+v", r)
	}
}

func TestCommandValues(t *testing.T) {
	r := commandCheck{}.Run(context.Background(), commandEnv(t,
		`echo '{"values": [{"device": "gpu0", "name": "tokens_per_s", "value": 1200, "unit": "tok/s"}, {"device": "gpu1", "name": "tokens_per_s", "value": 1300, "unit": "tok/s"}]}'`,
		"[checks.command.min]\ntokens_per_s = 1000\n"))
	if r.Status != benchmarks.StatusPass {
		t.Fatalf("%+v", r)
	}
	if len(r.Values) != 2 {
		t.Fatalf("values %+v, want one per device", r.Values)
	}
	v := r.Values[1]
	if v.Device != "gpu1" || v.Name != "tokens_per_s" || v.Value != 1300 || v.Unit != "tok/s" || v.Threshold == nil || *v.Threshold != 1000 || v.Op != ">=" {
		t.Errorf("%+v", v)
	}
}

func FuzzParseCommandOutput(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, "log\n{\"values\": [{\"name\": \"x\", \"value\": 2}]}", `{"status": "fail"}`, ``, `[1]`, `{"values": [{}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		co, err := parseCommandOutput(b)
		if err != nil {
			return
		}
		for _, v := range co.Values {
			if v.Name == "" || v.Value == nil {
				t.Fatalf("accepted a value without name or number: %+v", v)
			}
		}
	})
}

// The command is told the node, the job and the job's devices.
func TestCommandToldTheJobsDevices(t *testing.T) {
	env := commandEnv(t, `test "$VIGIL_NODE" = n1 && test "$VIGIL_JOB_ID" = 9 && test "$VIGIL_DEVICES" = 1,3 && echo '{"n": 1}'`, "")
	env.Node, env.JobID, env.Devices = "n1", "9", []int{1, 3}
	r := commandCheck{}.Run(context.Background(), env)
	if r.Status != benchmarks.StatusPass {
		t.Fatalf("result %+v", r)
	}
	env = commandEnv(t, `test -z "$VIGIL_DEVICES" && test "${VIGIL_DEVICES+set}" = set && echo '{"n": 1}'`, "")
	if r := (commandCheck{}).Run(context.Background(), env); r.Status != benchmarks.StatusPass {
		t.Fatalf("a job without devices: %+v", r)
	}
}

// envWith is an Env whose settings of check name are those of the
// vigil.toml text.
func envWith(t *testing.T, name, text string) *benchmarks.Env {
	t.Helper()
	f, err := config.Parse(strings.NewReader(text), "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	return &benchmarks.Env{Node: "node1", Settings: benchmarks.SettingsFrom(f, name)}
}

func TestCommandSettings(t *testing.T) {
	c, _ := benchmarks.Lookup("command")
	if d := c.Spec().Settings; d == nil || d() == nil {
		t.Fatal("command has no settings")
	}
	r := c.Run(context.Background(), envWith(t, "command", "[checks.command]\ntimeout = \"0s\"\ncommand = [\"true\"]\n"))
	if r.Status != benchmarks.StatusUnknown || r.Reason != devcheck.ReasonInvalidSettings {
		t.Errorf("result %+v, want unknown %s", r, devcheck.ReasonInvalidSettings)
	}
}
