package cublas

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
)

// TestFakeLt runs a plan against a fake cuBLASLt (testdata/fakecublaslt.c)
// that accepts only the documented TN layout and argument values.
func TestFakeLt(t *testing.T) {
	dir := dltest.Build(t, "testdata/fakecublaslt.c", "libcublasLt.so.12")
	l, err := Open(dl.Options{Names: DefaultNames, Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(l.Path(), "/libcublasLt.so.12") || l.Version() != 120304 {
		t.Errorf("Path %q Version %d", l.Path(), l.Version())
	}
	h, err := l.Create()
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{M: 64, N: 32, K: 128, A: R16BF, B: R16BF, D: R16BF, Compute: Compute32F, Scale: R32F, Workspace: 32 << 20}
	p, err := l.NewPlan(h, spec)
	if err != nil {
		t.Fatal(err)
	}
	if p.WorkspaceNeeded != 1234 {
		t.Errorf("WorkspaceNeeded = %d, want the heuristic's 1234", p.WorkspaceNeeded)
	}
	var stream byte // any non-nil pointer stands for a stream
	if err := p.Run(0xa000, 0xb000, 0xd000, 0xe000, 32<<20, unsafe.Pointer(&stream)); err != nil {
		t.Errorf("Run: %v", err)
	}
	err = p.Run(0xa000, 0xb000, 0xd000, 0xe000, 1<<20, unsafe.Pointer(&stream))
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != StatusInvalidValue ||
		err.Error() != "cublasLtMatmul: CUBLAS_STATUS_INVALID_VALUE (7): an invalid value was used as an argument" {
		t.Errorf("Run with a short workspace: %v", err)
	}
	p.Close()
	p.Close() // twice is harmless

	fp8 := spec
	fp8.A, fp8.B = R8FE4M3, R8FE4M3
	if _, err := l.NewPlan(h, fp8); !errors.Is(err, ErrUnsupported) {
		t.Errorf("fp8 plan error = %v, want ErrUnsupported", err)
	}
	if err := l.Destroy(h); err != nil {
		t.Error(err)
	}
}
