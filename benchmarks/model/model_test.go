package model

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// python is Debian's interpreter with python3-torch (the python3 first in
// PATH may be another).
const python = "/usr/bin/python3"

// needTorch fails the test loudly when Debian's PyTorch is missing: CI
// installs it (make deps), so it is never skipped there.
func needTorch(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("trains real models with PyTorch: not in -short")
	}
	// A loaded CI machine can take half a minute to import torch: the
	// probe here gets its longest wait, a minute.
	s := gptCheck.defaults()
	s.Budget = 2 * time.Minute
	p := &prepared{c: gptCheck, s: s, python: python, kind: "cpu", devices: []int{0, 1}}
	if v := p.probe(context.Background()); v.status != "" {
		t.Fatalf("%s: %s\nDebian's PyTorch is needed: apt-get install -y --no-install-recommends python3-torch (make deps does)", v.reason, v.msg)
	}
}

// settingsEnv is an Env whose [checks.NAME] table is the TOML text.
func settingsEnv(t *testing.T, text string) *benchmarks.Env {
	t.Helper()
	return &benchmarks.Env{Node: "n1", Settings: func(v any) error {
		_, err := toml.Decode(text, v)
		return err
	}}
}

// faultyScript writes a copy of the shipped script whose hook does body
// (Python, indented 4) and returns its path.
func faultyScript(t *testing.T, body string) string {
	t.Helper()
	const shipped = "def hook(loss, rank, step):\n    \"\"\"The identity; a test copy of this script replaces it to inject a fault.\"\"\"\n    return loss\n"
	s := string(trainScript)
	if !strings.Contains(s, shipped) {
		t.Fatal("the shipped script's hook changed: update faultyScript")
	}
	s = strings.Replace(s, shipped, "def hook(loss, rank, step):\n    import time, math\n"+body+"\n    return loss\n", 1)
	path := filepath.Join(t.TempDir(), "train_fault.py")
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// small are settings that keep a CPU run to a few seconds. The budget
// is the resnet's shipped one for both models, so that the PyTorch probe
// may wait its full minute on a loaded CI machine.
const small = `python = "/usr/bin/python3"
ranks = 2
threads = 1
budget = "2m"
`

func run(t *testing.T, c *check, conf string) benchmarks.Result {
	t.Helper()
	t0 := time.Now()
	r := c.Run(context.Background(), settingsEnv(t, conf))
	t.Logf("%s %s %s (%s) in %v: %s", c.spec.Name, r.Status, r.Reason, r.Device, time.Since(t0).Round(time.Millisecond), r.Message)
	return r
}

func TestHealthyRuns(t *testing.T) {
	needTorch(t)
	for _, c := range []*check{gptCheck, resnetCheck} {
		t.Run(c.spec.Name, func(t *testing.T) {
			r := run(t, c, small)
			if r.Status != benchmarks.StatusPass {
				t.Fatalf("a healthy node: %s %s: %s", r.Status, r.Reason, r.Message)
			}
			if !strings.Contains(r.Message, "the shipped cpu float32 reference") {
				t.Errorf("the default shape on CPU is judged against the shipped reference: %s", r.Message)
			}
			names := map[string]bool{}
			for _, v := range r.Values {
				names[v.Name] = true
			}
			for _, want := range []string{"step_ms", "final_loss", "compute_ms", "loss_step_10"} {
				if !names[want] {
					t.Errorf("no %s among the values %+v", want, r.Values)
				}
			}
		})
	}
}

func TestInjectedFaults(t *testing.T) {
	needTorch(t)
	for _, tc := range []struct {
		name, hook, extra string
		status            benchmarks.Status
		reason, device    string
	}{
		{"nan", "    if rank == 1 and step >= 5:\n        loss = loss * float('nan')", "",
			benchmarks.StatusFail, ReasonModelLossAbnormal, "cpu1"},
		{"slow", "    if rank == 1:\n        time.sleep(0.25)", "steps = 20\n",
			benchmarks.StatusFail, ReasonModelStepSlow, "cpu1"},
		{"hang", "    if rank == 1 and step == 6:\n        time.sleep(3600)", "step_timeout = \"4s\"\n",
			benchmarks.StatusFail, ReasonModelHang, "cpu1"},
		{"error", "    if rank == 1 and step == 4:\n        raise RuntimeError('CUDA error: an illegal memory access was encountered')", "",
			benchmarks.StatusFail, ReasonModelError, "cpu1"},
		{"wrong numbers", "    loss = loss * 1.4", "reference = [2.3464, 2.2491, 2.1275, 1.8485, 1.5442, 1.2652]\n",
			benchmarks.StatusFail, ReasonModelLossAbnormal, ""},
		{"every rank alike", "    if step == 3:\n        raise ValueError('bad shape in the site script')", "",
			benchmarks.StatusUnknown, ReasonModelScriptError, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := small + tc.extra + "script = \"" + faultyScript(t, tc.hook) + "\"\n"
			t0 := time.Now()
			r := run(t, resnetCheck, conf)
			if r.Status != tc.status || r.Reason != tc.reason || r.Device != tc.device {
				t.Fatalf("got %s %s on %q (%s), want %s %s on %q", r.Status, r.Reason, r.Device, r.Message, tc.status, tc.reason, tc.device)
			}
			if d := time.Since(t0); d > resnetCheck.defaults().Budget {
				t.Errorf("took %v, past the budget", d)
			}
		})
	}
}

func TestNoPyTorch(t *testing.T) {
	needTorch(t)
	noSite := filepath.Join(t.TempDir(), "python-without-torch")
	// -S leaves out site-packages, where Debian's torch is.
	if err := os.WriteFile(noSite, []byte("#!/bin/sh\nexec "+python+" -S \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, py := range []string{noSite, "/nonexistent/python3"} {
		r := run(t, gptCheck, "python = \""+py+"\"\n")
		if r.Status != benchmarks.StatusUnknown || r.Reason != ReasonModelNoPyTorch || !strings.Contains(r.Message, py) {
			t.Errorf("python %s: got %s %s: %s; want unknown %s naming it", py, r.Status, r.Reason, r.Message, ReasonModelNoPyTorch)
		}
	}
}

// TestProbeTimeoutSaysSo: an interpreter that never answers is reported
// as slow, with the key to raise, not as a missing PyTorch.
func TestProbeTimeoutSaysSo(t *testing.T) {
	hangs := filepath.Join(t.TempDir(), "python-that-hangs")
	if err := os.WriteFile(hangs, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := gptCheck.defaults()
	s.Budget = 2 * time.Second
	p := &prepared{c: gptCheck, s: s, python: hangs, kind: "cpu", devices: []int{0}}
	t0 := time.Now()
	v := p.probe(context.Background())
	if v.reason != ReasonModelNoPyTorch || !strings.Contains(v.msg, "did not say within 1s") || !strings.Contains(v.msg, "budget") {
		t.Errorf("got %s %s: %s", v.status, v.reason, v.msg)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("the probe took %v, past its 1s wait and the 2s kill delay", d)
	}
}
