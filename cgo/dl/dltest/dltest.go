// Package dltest builds small fake vendor libraries from C source for the
// cgo packages' tests, so that the trampolines are exercised through dlopen
// on machines without the real libraries, and opens the real libraries
// where they are installed (.ci/deps-nvidia puts them on CI machines).
package dltest

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// Build compiles the C file src into a shared library called name in a
// temporary directory and returns that directory; flags are added at the
// end of gcc's command line ("-lm"). It fails the test, naming the Debian
// package, when gcc is missing.
func Build(t testing.TB, src, name string, flags ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc not found: install the Debian package gcc (%v)", err)
	}
	dir := t.TempDir()
	args := append([]string{"-shared", "-fPIC", "-O1", "-o", filepath.Join(dir, name), src}, flags...)
	out, err := exec.Command(gcc, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return dir
}

// OpenReal opens a real vendor library by the loader's own search (no
// directory of fakes), trying names in order. When none opens it fails the
// test, naming the Debian package that provides the library and the script
// that installs it.
func OpenReal(t testing.TB, pkg string, names ...string) *dl.Library {
	t.Helper()
	lib, err := dl.Open(dl.Options{Names: names})
	if err != nil {
		t.Fatalf("real %s not installed: install the Debian non-free package %s (bash .ci/deps-nvidia): %v", names[0], pkg, err)
	}
	t.Cleanup(func() { lib.Close() })
	return lib
}

// CheckSymbols fails the test once for every name that lib does not export.
func CheckSymbols(t testing.TB, lib *dl.Library, names []string) {
	t.Helper()
	if len(names) == 0 {
		t.Fatal("no symbols to check: the binding's symbol table is empty")
	}
	for _, n := range names {
		if _, err := lib.Sym(n); err != nil {
			t.Errorf("%s lacks a symbol vigil binds: %v", lib.Path, err)
		}
	}
}

// ELFFuncs returns the functions whose names start with prefix that the
// shared library at path defines in its ELF dynamic symbol table: what it
// exports, read without loading it (a library built for a newer glibc
// cannot be loaded here, but its exports can be read).
func ELFFuncs(t testing.TB, path, prefix string) map[string]bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v (bash .ci/deps-nvidia installs the real libraries)", path, err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF && strings.HasPrefix(s.Name, prefix) {
			out[s.Name] = true
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s exports no %s function", path, prefix)
	}
	return out
}
