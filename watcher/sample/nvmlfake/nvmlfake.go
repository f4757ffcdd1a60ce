// Package nvmlfake builds, for tests, a fake libnvidia-ml.so.1 from C
// (testdata/fakenvml.c) that go-nvml loads as it loads the driver's: the
// calls vigil-watch's NVML sampler makes (devices, readings, the event
// API), with its GPUs' readings and fault events driven by files of a
// directory the test writes (Dir). A test points the loader at it with
// LD_LIBRARY_PATH (or nvml.WithLibraryPath) and at its files with
// VIGIL_FAKE_NVML_DIR.
//
// go-nvml binds its C calls lazily and process-wide: once a process has
// called into one copy of the fake, its calls stay bound to that copy,
// whichever copy it opens later. Every copy is built from the same
// source and reads VIGIL_FAKE_NVML_DIR at every call, so a test points
// the fake at other GPUs by the variable, never by another copy.
package nvmlfake

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
)

// Name is the library's file name, the one go-nvml opens.
const Name = "libnvidia-ml.so.1"

// EnvDir is the variable that names the fake's directory (Dir).
const EnvDir = "VIGIL_FAKE_NVML_DIR"

//go:embed testdata/fakenvml.c
var source []byte

// Build compiles the fake into a temporary directory and returns the
// directory, which holds Name.
func Build(t testing.TB) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "fakenvml.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		t.Fatal(err)
	}
	return dltest.Build(t, src, Name)
}

// Dir is the directory of one fake node's GPUs: the files the fake reads
// at every call (gpus, util, events).
type Dir string

// NewDir makes dir (readable by anyone: the job's user reads it) for a
// node of gpus GPUs.
func NewDir(t testing.TB, dir string, gpus int) Dir {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := Dir(dir)
	d.write(t, "gpus", fmt.Sprintf("%d\n", gpus), os.O_TRUNC)
	return d
}

// Env is the variable that points the fake at d, as NAME=VALUE.
func (d Dir) Env() string { return EnvDir + "=" + string(d) }

// XID reports fault code on GPU gpu: the fake gives it to the event sets
// created before, at their next wait.
func (d Dir) XID(t testing.TB, gpu, code int) {
	t.Helper()
	d.write(t, "events", fmt.Sprintf("%d %d\n", gpu, code), os.O_APPEND)
}

// Util sets GPU gpu's utilisation, in percent, from the next reading on.
func (d Dir) Util(t testing.TB, gpu, percent int) {
	t.Helper()
	d.write(t, "util", fmt.Sprintf("%d %d\n", gpu, percent), os.O_APPEND)
}

// write writes s to d's file name, in one write (the fake reads only
// complete lines).
func (d Dir) write(t testing.TB, name, s string, flag int) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(string(d), name), os.O_WRONLY|os.O_CREATE|flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
