package cublas

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
)

// Tests against the real cuBLASLt. Debian 12 non-free ships CUDA 11.8's
// libcublasLt.so.11 (libcublaslt11; .ci/deps-nvidia installs it); GPU nodes
// usually carry 12 or 13 (toolkit or PyTorch wheels), and .ci/deps-nvidia
// unpacks Debian 13's libcublasLt.so.12 (CUDA 12.4) into cublasLt12Dir.
// Every function vigil calls exists under the same name in 11 and 12, so
// DefaultNames can fall back from .so.13 to .so.12 to .so.11.

// cublasLt12Dir is where .ci/deps-nvidia unpacks libcublasLt.so.12.
const cublasLt12Dir = "/opt/vigil-ci/cublaslt12"

func TestSymbolTableCoversEveryFunction(t *testing.T) {
	var f ltFuncs
	if n, got := reflect.TypeOf(f).NumField(), len(f.symbols()); got != n {
		t.Fatalf("symbol table has %d names for %d functions", got, n)
	}
}

func TestRealCuBLASLt11HasEverySymbol(t *testing.T) {
	lib := dltest.OpenReal(t, "libcublaslt11", "libcublasLt.so.11")
	dltest.CheckSymbols(t, lib, boundSymbols())
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

// TestRealCuBLASLt12: the cuBLASLt that GPU nodes carry. With its directory
// first, DefaultNames opens .so.12 before the system's .so.11, every symbol
// of the table resolves, and a handle without a device is an error, not a
// crash.
func TestRealCuBLASLt12(t *testing.T) {
	so := filepath.Join(cublasLt12Dir, "libcublasLt.so.12")
	if _, err := os.Stat(so); err != nil {
		t.Fatalf("real cuBLASLt 12 not unpacked: bash .ci/deps-nvidia puts Debian 13's libcublaslt12 in %s (%v)", cublasLt12Dir, err)
	}
	lib, err := dl.Open(dl.Options{Names: []string{so}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lib.Close() })
	dltest.CheckSymbols(t, lib, boundSymbols())

	l, err := Open(dl.Options{Dirs: []string{cublasLt12Dir}})
	if err != nil {
		t.Fatalf("Open with DefaultNames %v in %s: %v", DefaultNames, cublasLt12Dir, err)
	}
	t.Cleanup(func() { l.Close() })
	if !strings.HasPrefix(filepath.Base(l.Path()), "libcublasLt.so.12") || l.Version()/10000 != 12 {
		t.Errorf("opened %s, cublasLtGetVersion %d; want .so.12, 12xxxx", l.Path(), l.Version())
	}
	t.Logf("opened %s, cublasLtGetVersion %d", l.Path(), l.Version())
	if m, _ := filepath.Glob("/dev/nvidia[0-9]*"); len(m) > 0 {
		return
	}
	if h, err := l.Create(); err == nil {
		l.Destroy(h)
		t.Fatal("cublasLtCreate succeeded without a GPU")
	} else {
		t.Logf("cublasLtCreate without a device: %v", err)
	}
}

// TestCuBLASLt11And12Differ lists what the two real libraries export
// differently (from their ELF dynamic symbol tables) and checks that none
// of it is a function vigil binds.
func TestCuBLASLt11And12Differ(t *testing.T) {
	lib11 := dltest.OpenReal(t, "libcublaslt11", "libcublasLt.so.11")
	only11, only12 := symbolDiff(t, lib11.Path, filepath.Join(cublasLt12Dir, "libcublasLt.so.12"))
	t.Logf("cublasLt functions only in 11: %d %v", len(only11), only11)
	t.Logf("cublasLt functions only in 12: %d %v", len(only12), only12)
	for _, n := range boundSymbols() {
		if slices.Contains(only11, n) || slices.Contains(only12, n) {
			t.Errorf("vigil binds %s, which only one of cuBLASLt 11 and 12 exports", n)
		}
	}
}

// symbolDiff returns the cublasLt* functions that only a exports and that
// only b exports, sorted.
func symbolDiff(t *testing.T, a, b string) (onlyA, onlyB []string) {
	t.Helper()
	sa, sb := dltest.ELFFuncs(t, a, "cublasLt"), dltest.ELFFuncs(t, b, "cublasLt")
	for n := range sa {
		if !sb[n] {
			onlyA = append(onlyA, n)
		}
	}
	for n := range sb {
		if !sa[n] {
			onlyB = append(onlyB, n)
		}
	}
	slices.Sort(onlyA)
	slices.Sort(onlyB)
	return onlyA, onlyB
}

// boundSymbols lists, sorted, every symbol Open looks up in cuBLASLt, to
// check them against a real library.
func boundSymbols() []string { return dl.Names(new(ltFuncs).symbols()) }
