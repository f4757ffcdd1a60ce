package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/lifecycle"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestE2EDefaultSuiteByVendor: a health run with the default suite on a
// node whose Gres says gpu:2. On a machine without accelerators (the
// development and CI machines) the NVIDIA and Ascend checks are not
// applicable, gpu-count still runs, finds the Gres GPUs missing and drains
// the node, saying what it compared. On a machine with accelerators the
// other vendor's checks are not applicable.
func TestE2EDefaultSuiteByVendor(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	s := newSetup(t, `budget = "60s"
check_timeout = "20s"`, "")
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1, GPUsPerNode: 2})
	node := c.Nodes[0]
	out, code, _ := runAs(t, c, bin, "--health", "--config", s.config, "--node", node, "--log-level", "error")

	reps := s.readReports(t)
	if len(reps) != 1 {
		t.Fatalf("%d reports, want 1; output:\n%s", len(reps), out)
	}
	r := reps[0]
	na := map[string]string{}
	for _, n := range r.NotApplicable {
		na[n.Check] = n.Message
	}
	var ran []string
	for _, res := range r.Results {
		ran = append(ran, res.Check)
	}
	hw := lifecycle.ProbeAccelerators("/")
	if hw.Count["ascend"] == 0 && (slices.Contains(ran, "npu-count") || !strings.HasPrefix(na["npu-count"], "no Ascend NPU on this node")) {
		t.Errorf("no Ascend NPU here, yet ran %v, not applicable %v", ran, na)
	}
	if hw.Count["nvidia"] == 0 && (slices.Contains(ran, "ecc") || !strings.HasPrefix(na["ecc"], "no NVIDIA GPU on this node")) {
		t.Errorf("no NVIDIA GPU here, yet ran %v, not applicable %v", ran, na)
	}
	if !slices.Contains(ran, "gpu-count") {
		t.Fatalf("gpu-count did not run: %v", ran)
	}
	if !strings.Contains(out, "n/a:") || !strings.Contains(out, "not applicable)") {
		t.Errorf("the table does not show the checks that are not applicable:\n%s", out)
	}
	if !hw.Count.None() {
		t.Logf("accelerators on this machine (%+v): the Gres mismatch is not checked", hw)
		return
	}
	gc := r.Results[slices.Index(ran, "gpu-count")]
	if gc.Status != "fail" || gc.Reason != "GPUCountMismatch" || !strings.HasPrefix(gc.Message, "fewer GPUs than expected (Gres: 2, PCI: 0, NVML: ") {
		t.Errorf("gpu-count: %+v", gc)
	}
	for _, res := range r.Results { // the vendor-neutral facts (rdma) run too, and pass here
		if res.Check != "gpu-count" && res.Status == "fail" {
			t.Errorf("%s failed: %+v", res.Check, res)
		}
	}
	if r.Verdict != "fail" || code != decide.ExitFail || r.Action.Kind != report.ActionDrain || !r.Action.Done {
		t.Errorf("exit %d, ran %v, report %+v", code, ran, r)
	}
	if n := nodeState(t, c, node); !n.Drained() || n.Reason != "vigil: gpu-count GPUCountMismatch" {
		t.Errorf("node %+v", n)
	}
}
