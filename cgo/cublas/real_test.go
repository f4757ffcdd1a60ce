package cublas

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
)

// Tests against the real cuBLASLt. Debian 12 non-free ships only CUDA
// 11.8's libcublasLt.so.11 (libcublaslt11; .ci/deps-nvidia installs it),
// while GPU nodes usually carry 12 or 13 (toolkit or PyTorch wheels). Every
// function vigil calls exists with the same name and prototype in 11, 12
// and 13, so DefaultNames can fall back from .so.13 to .so.12 to .so.11.

func TestSymbolTableCoversEveryFunction(t *testing.T) {
	var f ltFuncs
	if n, got := reflect.TypeOf(f).NumField(), len(f.symbols()); got != n {
		t.Fatalf("symbol table has %d names for %d functions", got, n)
	}
}

func TestRealCuBLASLt11HasEverySymbol(t *testing.T) {
	lib := dltest.OpenReal(t, "libcublaslt11", "libcublasLt.so.11")
	dltest.CheckSymbols(t, lib, Symbols())
}

func TestRealCuBLASLtFallsBackTo11(t *testing.T) {
	dltest.OpenReal(t, "libcublaslt11", "libcublasLt.so.11")
	l, err := Open(dl.Options{})
	if err != nil {
		t.Fatalf("Open with DefaultNames %v: %v", DefaultNames, err)
	}
	t.Cleanup(func() { l.Close() })
	base := filepath.Base(l.Path())
	t.Logf("opened %s, cublasLtGetVersion %d", l.Path(), l.Version())
	newer := false
	for _, n := range DefaultNames[:2] {
		if other, err := dl.Open(dl.Options{Names: []string{n}}); err == nil {
			other.Close()
			newer = true
		}
	}
	if newer {
		t.Logf("a newer cuBLASLt is installed: fallback to .so.11 not shown")
		return
	}
	if !strings.HasPrefix(base, "libcublasLt.so.11") {
		t.Errorf("only .so.11 is installed, opened %s", l.Path())
	}
	if v := l.Version(); v/10000 != 11 {
		t.Errorf("cublasLtGetVersion = %d, want 11xxxx", v)
	}
}

func TestRealCuBLASLtCreateWithoutDevice(t *testing.T) {
	dltest.OpenReal(t, "libcublaslt11", "libcublasLt.so.11")
	l, err := Open(dl.Options{Names: []string{"libcublasLt.so.11"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	m, _ := filepath.Glob("/dev/nvidia[0-9]*")
	h, err := l.Create()
	if len(m) > 0 {
		if err != nil {
			t.Fatalf("a GPU is present and cublasLtCreate failed: %v", err)
		}
		l.Destroy(h)
		return
	}
	// Without a device cuBLASLt 11.11 refuses a handle with
	// CUBLAS_STATUS_NOT_INITIALIZED, not a crash.
	if err == nil {
		l.Destroy(h)
		t.Fatal("cublasLtCreate succeeded without a GPU")
	}
	if !strings.Contains(err.Error(), "CUBLAS_STATUS_NOT_INITIALIZED") {
		t.Errorf("cublasLtCreate: %v, want CUBLAS_STATUS_NOT_INITIALIZED", err)
	}
	t.Logf("cublasLtCreate without a device: %v", err)
}
