package cuda

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
)

// Tests against the real libcuda.so.1 of the NVIDIA driver (Debian 12
// non-free ships the 535 series; .ci/deps-nvidia installs it). CI machines
// have no GPU and no kernel module: the library loads, every symbol is
// there, and cuInit reports that there is no device.

// ptxasPath is where .ci/deps-nvidia puts CUDA 11.8's ptxas.
const ptxasPath = "/opt/vigil-ci/ptxas/usr/bin/ptxas"

// ptxArchs are the targets vigil's PTX must assemble for: the PTX's own
// .target (the oldest vigil claims, docs/compute.md), A100 and H100/H200.
var ptxArchs = []string{"sm_70", "sm_80", "sm_90"}

func TestSymbolTableCoversEveryFunction(t *testing.T) {
	var f driverFuncs
	table := f.symbols()
	if n := reflect.TypeOf(f).NumField(); len(table) != n {
		t.Fatalf("symbol table has %d names for %d functions", len(table), n)
	}
	seen := map[*unsafe.Pointer]string{}
	for name, p := range table {
		if other, ok := seen[p]; ok {
			t.Errorf("%s and %s fill the same function", name, other)
		}
		seen[p] = name
	}
	if got := boundSymbols(); len(got) != len(table) || !strings.Contains(strings.Join(got, " "), "cuMemAlloc_v2") {
		t.Errorf("boundSymbols() = %v", got)
	}
}

func TestRealDriverHasEverySymbol(t *testing.T) {
	lib := dltest.OpenReal(t, "libcuda1", DefaultNames...)
	dltest.CheckSymbols(t, lib, boundSymbols())
	t.Logf("%d symbols found in %s", len(boundSymbols()), lib.Path)
}

// gpuPresent reports whether the node has NVIDIA device nodes, where the
// real driver finds a device instead of failing.
func gpuPresent() bool {
	m, _ := filepath.Glob("/dev/nvidia[0-9]*")
	return len(m) > 0
}

func TestRealDriverWithoutDevice(t *testing.T) {
	dltest.OpenReal(t, "libcuda1", DefaultNames...)
	drv, err := Open(dl.Options{})
	if gpuPresent() {
		if err != nil {
			t.Fatalf("a GPU is present and Open failed: %v", err)
		}
		t.Logf("a GPU is present: %s opened, no-device path not shown here", drv.Path())
		return
	}
	// Without the kernel module the 535 driver's cuInit returns
	// CUDA_ERROR_NO_DEVICE, not CUDA_ERROR_NOT_INITIALIZED or an unknown error.
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != 100 {
		t.Fatalf("Open: %v, want cuInit failing with CUDA_ERROR_NO_DEVICE (100)", err)
	}
	want := "cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected"
	if err.Error() != want {
		t.Errorf("error = %q, want %q (names from the real cuGetErrorName/cuGetErrorString)", err, want)
	}
	if errors.Is(err, ErrDevice) {
		t.Errorf("no device is not a device fault: %v", err)
	}
}

// findPtxas returns CUDA's ptxas: the copy .ci/deps-nvidia extracts, else
// one on $PATH.
func findPtxas(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(ptxasPath); err == nil {
		return ptxasPath
	}
	p, err := exec.LookPath("ptxas")
	if err != nil {
		t.Fatalf("ptxas not found at %s nor on $PATH: run bash .ci/deps-nvidia (it extracts ptxas from Debian non-free's nvidia-cuda-toolkit)", ptxasPath)
	}
	return p
}

func TestPTXAssembles(t *testing.T) {
	ptxas := findPtxas(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "vigil.ptx")
	if err := os.WriteFile(src, []byte(PTX), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arch := range ptxArchs {
		t.Run(arch, func(t *testing.T) {
			out := filepath.Join(dir, arch+".cubin")
			b, err := exec.Command(ptxas, "-arch="+arch, "-v", "-o", out, src).CombinedOutput()
			if err != nil {
				t.Fatalf("%s -arch=%s: %v\n%s", ptxas, arch, err, b)
			}
			for _, k := range []string{KernelEmpty, KernelFill} {
				if !strings.Contains(string(b), "'"+k+"'") {
					t.Errorf("ptxas output does not mention kernel %s:\n%s", k, b)
				}
			}
			t.Logf("%s", b)
		})
	}
}

// boundSymbols lists, sorted, every symbol Open looks up in libcuda, to
// check them against a real library.
func boundSymbols() []string { return dl.Names(new(driverFuncs).symbols()) }
