package dl

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

func TestOpenLibmAndSym(t *testing.T) {
	l, err := Open(Options{Names: []string{"libvigil-does-not-exist.so.1", "libm.so.6"}})
	if err != nil {
		t.Fatalf("Open libm: %v (libm.so.6 is part of Debian's libc6)", err)
	}
	defer l.Close()
	if l.Name != "libm.so.6" {
		t.Errorf("Name = %q, want libm.so.6", l.Name)
	}
	if !filepath.IsAbs(l.Path) || !strings.Contains(l.Path, "libm") {
		t.Errorf("Path = %q, want the absolute path of libm", l.Path)
	}
	if p, err := l.Sym("cos"); err != nil || p == nil {
		t.Errorf("Sym(cos) = %v, %v", p, err)
	}
	_, err = l.Sym("vigil_no_such_symbol")
	if !errors.Is(err, ErrSymbol) {
		t.Fatalf("Sym(missing) error = %v, want ErrSymbol", err)
	}
	if !strings.Contains(err.Error(), "vigil_no_such_symbol") {
		t.Errorf("error %q does not name the symbol", err)
	}
	// The library stays usable after a failed lookup.
	if _, err := l.Sym("sin"); err != nil {
		t.Errorf("Sym(sin) after a failure: %v", err)
	}
}

func TestSymsReportsAllMissing(t *testing.T) {
	l, err := Open(Options{Names: []string{"libm.so.6"}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var cosp, a, b unsafe.Pointer
	err = l.Syms(map[string]*unsafe.Pointer{"cos": &cosp, "vigil_missing_a": &a, "vigil_missing_b": &b})
	if !errors.Is(err, ErrSymbol) {
		t.Fatalf("err = %v, want ErrSymbol", err)
	}
	for _, n := range []string{"vigil_missing_a", "vigil_missing_b"} {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %s", err, n)
		}
	}
	if cosp == nil {
		t.Error("cos was not resolved")
	}
}

func TestLoad(t *testing.T) {
	var cosp, a unsafe.Pointer
	l, err := Load(Options{}, []string{"libm.so.6"}, map[string]*unsafe.Pointer{"cos": &cosp})
	if err != nil || cosp == nil || l.Name != "libm.so.6" {
		t.Fatalf("Load with the default names: %v, cos %v", err, cosp)
	}
	l.Close()
	if _, err := Load(Options{Names: []string{"libvigil-absent.so"}}, []string{"libm.so.6"}, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("the given names lost to the defaults: %v", err)
	}
	if l, err := Load(Options{}, []string{"libm.so.6"}, map[string]*unsafe.Pointer{"vigil_missing_a": &a}); !errors.Is(err, ErrSymbol) || l != nil {
		t.Errorf("a missing symbol: %v, %v", l, err)
	}
}

func TestOpenMissingNamesCandidates(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(Options{Names: []string{"libcuda.so.1.vigil-test", "libcuda.so.vigil-test"}, Dirs: []string{dir}})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	var nf *NotFoundError
	if !errors.As(err, &nf) || len(nf.Tried) != 4 || nf.Tried[0] != filepath.Join(dir, "libcuda.so.1.vigil-test") {
		t.Errorf("Tried = %v", nf.Tried)
	}
	msg := err.Error()
	for _, want := range []string{"libcuda.so.1.vigil-test not found (searched: libcuda.so.1.vigil-test, libcuda.so.vigil-test in " + dir + " and the loader's search path)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}

func TestOpenAbsolutePathFromDir(t *testing.T) {
	// Find libm's real file and open it through a directory candidate.
	l, err := Open(Options{Names: []string{"libm.so.6"}})
	if err != nil {
		t.Fatal(err)
	}
	path := l.Path
	l.Close()
	l2, err := Open(Options{Names: []string{"libm.so.6"}, Dirs: []string{"/nonexistent-vigil", filepath.Dir(path)}})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.Name != filepath.Join(filepath.Dir(path), "libm.so.6") {
		t.Errorf("Name = %q, want the directory candidate", l2.Name)
	}
}

func TestCandidates(t *testing.T) {
	o := Options{Names: []string{"a.so.2", "/opt/x/b.so", "a.so.1"}, Dirs: []string{"/d1", "/d2"}}
	want := []string{"/d1/a.so.2", "/d2/a.so.2", "/opt/x/b.so", "/d1/a.so.1", "/d2/a.so.1", "a.so.2", "a.so.1"}
	if got := o.Candidates(); !reflect.DeepEqual(got, want) {
		t.Errorf("Candidates = %v, want %v", got, want)
	}
}

func TestClosedLibrary(t *testing.T) {
	l, err := Open(Options{Names: []string{"libm.so.6"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Sym("cos"); err == nil {
		t.Error("Sym on a closed library succeeded")
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestPythonDirs(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{
		"venv/lib/python3.11/site-packages/nvidia/cublas/lib",
		"venv/lib/python3.12/site-packages/nvidia/nccl/lib",
		"usr/lib/python3/dist-packages/nvidia/cublas/lib",
		"venv/lib/python3.11/site-packages/nvidia/cudnn/lib",
	} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got := PythonDirs(root, []string{"/venv", "/usr", ""}, []string{"cublas", "nccl"})
	want := []string{
		filepath.Join(root, "venv/lib/python3.11/site-packages/nvidia/cublas/lib"),
		filepath.Join(root, "venv/lib/python3.12/site-packages/nvidia/nccl/lib"),
		filepath.Join(root, "usr/lib/python3/dist-packages/nvidia/cublas/lib"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PythonDirs = %v, want %v", got, want)
	}
}

func TestOpenBrokenFileShowsLoaderError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "libvigil-broken.so.1"), []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Options{Names: []string{"libvigil-broken.so.1"}, Dirs: []string{dir}})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "); "+filepath.Join(dir, "libvigil-broken.so.1")+": ") {
		t.Errorf("error %q does not carry dlerror's reason", err)
	}
}
