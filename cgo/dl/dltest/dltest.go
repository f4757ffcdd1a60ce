// Package dltest builds small fake vendor libraries from C source for the
// cgo packages' tests, so that the trampolines are exercised through dlopen
// on machines without the real libraries.
package dltest

import (
	"os/exec"
	"path/filepath"
	"testing"
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
