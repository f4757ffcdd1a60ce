package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// healthRun runs bin in health mode for node the way slurmd runs
// HealthCheckProgram: without SLURM_CONF (and with a plain PATH).
func healthRun(t *testing.T, bin, config, node string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, "--health", "--node", node, "--config", config)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SLURM_CONF=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return string(out), code
}

// TestE2EHealthSlurmConf: the cluster's slurm.conf is not at Slurm's
// default path and health mode gets no SLURM_CONF; with [prolog]
// slurm_conf it still drains a failing node and resumes it once it
// passes, and without it the failing scontrol is logged at error level.
func TestE2EHealthSlurmConf(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1})
	node := c.Nodes[0]
	s := newSetup(t, "", "")
	write := func(slurmConf, gpus string) {
		s.write(t, fmt.Sprintf("suite = \"health\"\nchecks = [\"gpu-count\"]\ncheck_timeout = \"20s\"\nbudget = \"60s\"\n%s", slurmConf), gpus)
	}

	// Without slurm_conf scontrol reads Slurm's default slurm.conf, which is
	// not this cluster's: the run cannot drain, and says so as an error.
	write("", "[checks.gpu-count]\nexpected = 1\n")
	out, code := healthRun(t, bin, s.config, node)
	if code != 4 || !strings.Contains(out, `level=error msg="scontrol failed draining the node`) {
		t.Errorf("health run without slurm_conf, exit %d; want 4 (a check failed, nothing drained) and scontrol's failure at error level:\n%s", code, out)
	}
	if n := nodeState(t, c, node); n.Drained() {
		t.Fatalf("%s drained through some other cluster's slurm.conf: %+v", node, n)
	}

	write(fmt.Sprintf("slurm_conf = %q", c.Conf), "[checks.gpu-count]\nexpected = 1\n")
	out, code = healthRun(t, bin, s.config, node)
	if code != 1 {
		t.Errorf("failing health run, exit %d, want 1:\n%s", code, out)
	}
	n := c.WaitNode(t, node, 10*time.Second, func(n slurm.Node) bool { return n.Drained() })
	if !n.OwnedByVigil() || !strings.Contains(n.Reason, "gpu-count") {
		t.Fatalf("%s drained with %q, want vigil's gpu-count reason", node, n.Reason)
	}

	write(fmt.Sprintf("slurm_conf = %q", c.Conf), "")
	out, code = healthRun(t, bin, s.config, node)
	if code != 0 {
		t.Errorf("passing health run, exit %d:\n%s", code, out)
	}
	c.WaitNode(t, node, 10*time.Second, func(n slurm.Node) bool { return !n.Drained() })
}
