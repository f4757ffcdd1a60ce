package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks/model"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// modelConf keeps model-gpt-multinode to a few seconds on CPUs: Debian's
// PyTorch, one rank of one thread per node, a small model. Its timeout
// covers its budget and the PyTorch probe before it (the cross-node
// setup's check_timeout, 20 s, cut it short on a loaded machine, where
// importing torch twice takes that long).
const modelConf = "[prolog.timeouts]\n\"model-gpt-multinode\" = \"70s\"\n[checks.model-gpt-multinode]\npython = \"/usr/bin/python3\"\nwidth = 32\nlayers = 1\nsteps = 20\nthreads = 1\nbudget = \"40s\"\nstep_timeout = \"10s\"\n"

// TestE2EModelMultinode: model-gpt-multinode trains one GPT across a
// 3-node job's prologs on the real cluster (the ranks meet at the
// coordinator's address, gloo between the nodes' loopback addresses) and
// passes on every node; then a test copy of the script whose rank on one
// node produces a NaN loss drains exactly that node
// ("vigil: model-gpt-multinode ModelLossAbnormal"), and the requeued job
// completes on healthy nodes.
func TestE2EModelMultinode(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Fatal("no /usr/bin/python3: install Debian's python3-torch (make deps)")
	}
	script := filepath.Join(t.TempDir(), "train_nan.py")
	c, s, _ := crossSetupWith(t, 4, `"`+model.GPTMultinode+`"`, modelConf, slurmtest.Flavour{Name: "host"})
	job := c.Sbatch(t, "echo ok\n", "-N", "3")
	c.WaitJob(t, job, 60*time.Second, "COMPLETED")
	passed := 0
	for _, r := range nodeReports(t, s) {
		for _, res := range r.Results {
			if r.Job != job || res.Check != model.GPTMultinode {
				continue
			}
			if res.Status != "pass" {
				t.Errorf("no fault: %s: %s %s: %s", r.Node, res.Status, res.Reason, res.Message)
			}
			t.Logf("%s: %s", r.Node, res.Message)
			passed++
		}
	}
	if passed != 3 {
		t.Fatalf("no fault: %d passing %s results, want 3", passed, model.GPTMultinode)
	}

	faulty := c.Nodes[1]
	writeFaultyScript(t, script, "    import os\n    if os.environ.get('SLURMD_NODENAME') == '"+faulty+"' and step >= 4:\n        loss = loss * float('nan')\n")
	// modelConf is the config's last section: a line appended is its.
	f, err := os.OpenFile(s.config, os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString("script = \"" + script + "\"\n")
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	faultRun(t, c, s, 3, faulty, "vigil: "+model.GPTMultinode+" ModelLossAbnormal")
}

// writeFaultyScript writes the shipped training script with its hook's
// body replaced by body (Python, indented 4, ending in a newline).
func writeFaultyScript(t *testing.T, path, body string) {
	t.Helper()
	const hook = "    return loss\n"
	src := string(model.Script())
	i := strings.Index(src, "def hook(loss, rank, step):")
	j := strings.Index(src[i:], hook)
	if i < 0 || j < 0 {
		t.Fatal("the shipped script's hook changed: update writeFaultyScript")
	}
	src = src[:i+j] + body + src[i+j:]
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestModelChecksPerJob: users may ask for the model benchmarks per job,
// before every job or only after a requeue, where [policy] checks lists
// them; the shipped policy (the checks the prolog runs, which has no model
// benchmark) and a [policy] that lists other checks refuse them (what the
// SPANK plugin asks on the submit host).
func TestModelChecksPerJob(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open.toml")
	narrow := filepath.Join(dir, "narrow.toml")
	shipped := filepath.Join(dir, "shipped.toml")
	for p, body := range map[string]string{open: "[policy]\nchecks = [\"model-gpt\", \"model-resnet\", \"model-gpt-multinode\"]\n",
		narrow: "[policy]\nchecks = [\"disk\", \"gemm\"]\n", shipped: "[policy]\n"} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		config, checks, timing string
		want                   int
	}{
		{open, "model-gpt,model-resnet", "after-requeue", 0},
		{open, "model-gpt-multinode", "before", 0},
		{narrow, "model-gpt", "before", 1},
		{shipped, "model-gpt", "before", 1},
		{shipped, "gemm", "before", 0},
	} {
		var out, errb strings.Builder
		code := run([]string{"policy-check", "--config", tc.config, "--checks", tc.checks, "--timing", tc.timing}, &out, &errb)
		if code != tc.want {
			t.Errorf("%s --checks %s --timing %s: exit %d, want %d\n%s%s", filepath.Base(tc.config), tc.checks, tc.timing, code, tc.want, out.String(), errb.String())
		}
	}
}
