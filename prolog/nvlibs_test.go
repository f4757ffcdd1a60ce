package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
	"github.com/vigil-hpc/vigil/lifecycle"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/report"
)

// noDeviceBudget is what a run of every NVIDIA check may take on a node
// with the real driver libraries and no GPU: each check gives up within
// milliseconds (cuInit or nvmlInit fails), far inside any prolog budget.
const noDeviceBudget = 5 * time.Second

// driverFree are the NVIDIA checks that read no vendor library's device
// state and pass on a node without a GPU: gpu-count compares the PCI bus
// (and Gres) with NVML and says why NVML had nothing; xid reads the kernel log.
var driverFree = map[string]string{"gpu-count": "(driver not loaded)", "xid": "no fault XIDs"}

// TestRealNVIDIALibrariesWithoutGPU runs every NVIDIA check of the default
// suite, forced on, through the prolog with the real libcuda.so.1 and
// libnvidia-ml.so.1 of Debian's driver 535 (.ci/deps-nvidia) and no GPU:
// NVML init fails with Driver Not Loaded, cuInit with CUDA_ERROR_NO_DEVICE,
// each check is unknown with that reason, nothing fails or drains, nothing
// crashes, and the run is quick.
func TestRealNVIDIALibrariesWithoutGPU(t *testing.T) {
	dltest.OpenReal(t, "libcuda1", "libcuda.so.1")
	dltest.OpenReal(t, "libnvidia-ml1", "libnvidia-ml.so.1")
	if hw := lifecycle.ProbeAccelerators("/"); hw.Count["nvidia"] > 0 {
		t.Skipf("this machine has NVIDIA GPUs (%+v): the no-device path cannot be shown", hw)
	}
	var names []string
	for _, i := range benchmarks.Infos() {
		if i.Vendor == benchmarks.VendorNVIDIA && i.Default {
			names = append(names, fmt.Sprintf("%q", i.Name))
		}
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "vigil.toml")
	body := fmt.Sprintf("[prolog]\nchecks = [%s]\nbudget = \"30s\"\ncheck_timeout = \"20s\"\nrun_dir = %q\n",
		strings.Join(names, ", "), filepath.Join(dir, "run"))
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	t0 := time.Now()
	// A dry run writes its report only where a flag says.
	code := run([]string{"--dry-run", "--config", conf, "--report-dir", filepath.Join(dir, "reports"), "--log-level", "error"}, &out, &errb)
	el := time.Since(t0)
	t.Logf("exit %d in %v:\n%s%s", code, el, out.String(), errb.String())
	if el > noDeviceBudget {
		t.Errorf("the run took %v, want under %v", el, noDeviceBudget)
	}
	r := readOneReport(t, filepath.Join(dir, "reports"))
	if len(r.Results) != len(names) {
		t.Fatalf("%d results for %d checks asked for", len(r.Results), len(names))
	}
	for _, res := range r.Results {
		checkNoDeviceResult(t, res)
	}
	if r.Verdict != benchmarks.StatusUnknown || r.Action.Kind != report.ActionNone || code != decide.ExitOK {
		t.Errorf("verdict %s, action %+v, exit %d: want unknown, none, %d", r.Verdict, r.Action, code, decide.ExitOK)
	}
}

// checkNoDeviceResult says whether one check's result is what the real
// libraries give without a GPU.
func checkNoDeviceResult(t *testing.T, res benchmarks.Result) {
	t.Helper()
	if want, ok := driverFree[res.Check]; ok {
		if res.Status != benchmarks.StatusPass || !strings.Contains(res.Message, want) {
			t.Errorf("%s: %s %s %q, want pass saying %q", res.Check, res.Status, res.Reason, res.Message, want)
		}
		return
	}
	switch {
	case res.Status != benchmarks.StatusUnknown:
		t.Errorf("%s: %s %s %q, want unknown", res.Check, res.Status, res.Reason, res.Message)
	case res.Reason == "NVMLDriverNotLoaded":
		if res.Message != "NVIDIA driver not loaded: Driver Not Loaded" {
			t.Errorf("%s: message %q", res.Check, res.Message)
		}
	case res.Reason == "NoDevices":
		if res.Message != "cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected" {
			t.Errorf("%s: message %q", res.Check, res.Message)
		}
	default:
		t.Errorf("%s: unknown for %s %q, want NVMLDriverNotLoaded or NoDevices", res.Check, res.Reason, res.Message)
	}
}

func readOneReport(t *testing.T, dir string) report.Report {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(m) != 1 {
		t.Fatalf("%d reports in %s, want 1", len(m), dir)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", m[0], err)
	}
	return r
}
