package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
	"github.com/vigil-hpc/vigil/lifecycle"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestValidateScriptWithoutGPU rehearses benchmarks/gpu/validate.sh with the
// real driver 535 libraries and no GPU: it must end within seconds, exit 3
// and say that nothing was measured and why, without PyTorch.
func TestValidateScriptWithoutGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("builds vigil-prolog")
	}
	dltest.OpenReal(t, "libcuda1", "libcuda.so.1")
	dltest.OpenReal(t, "libnvidia-ml1", "libnvidia-ml.so.1")
	if hw := lifecycle.ProbeAccelerators("/"); hw.Count["nvidia"] > 0 {
		t.Skipf("this machine has NVIDIA GPUs (%+v): the no-device path cannot be shown", hw)
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "benchmarks", "gpu", "validate.sh"), bin, out)
	cmd.Env = append(os.Environ(), "VIGIL_BUDGET=20s", "VIGIL_CHECK_TIMEOUT=10s")
	t0 := time.Now()
	b, err := cmd.CombinedOutput()
	el := time.Since(t0)
	t.Logf("validate.sh in %v: %v\n%s", el, err, b)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("validate.sh: %v, want exit 3", err)
	}
	if el > 15*time.Second {
		t.Errorf("validate.sh took %v without a GPU, want seconds", el)
	}
	for _, want := range []string{
		"validate.sh: no usable GPU on this machine: nothing was measured",
		"NVIDIA driver not loaded: Driver Not Loaded",
		"cuInit: CUDA_ERROR_NO_DEVICE (100)",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(string(b), "== torch.matmul") {
		t.Error("validate.sh went on to torch without a GPU")
	}
}
