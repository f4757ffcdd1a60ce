package cublas

import (
	"errors"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

func TestNewError(t *testing.T) {
	tests := []struct {
		name        string
		code        Status
		nameFn      func(Status) string
		textFn      func(Status) string
		want        string
		unsupported bool
	}{
		{"table", 15, nil, nil, "cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED (15)", true},
		{"library strings", 13, func(Status) string { return "CUBLAS_STATUS_EXECUTION_FAILED" },
			func(Status) string { return "the GPU program failed to execute" },
			"cublasLtMatmul: CUBLAS_STATUS_EXECUTION_FAILED (13): the GPU program failed to execute", false},
		{"arch mismatch", 8, nil, nil, "cublasLtMatmul: CUBLAS_STATUS_ARCH_MISMATCH (8)", true},
		{"unknown", 99, func(Status) string { return "" }, nil, "cublasLtMatmul: cublasStatus(99) (99)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := dl.NewError("cublasLtMatmul", tt.code, tt.nameFn, tt.textFn)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if errors.Is(err, ErrUnsupported) != tt.unsupported {
				t.Errorf("errors.Is(ErrUnsupported) = %v", !tt.unsupported)
			}
		})
	}
	if dl.NewError[Status]("x", StatusSuccess, nil, nil) != nil {
		t.Error("success is an error")
	}
}

func TestOpenMissing(t *testing.T) {
	_, err := Open(dl.Options{Names: []string{"libcublasLt.so.vigil-absent"}, Dirs: []string{"/nonexistent"}})
	if !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "libcublasLt.so.vigil-absent not found") {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenWrongLibrary(t *testing.T) {
	_, err := Open(dl.Options{Names: []string{"libm.so.6"}})
	if !errors.Is(err, dl.ErrSymbol) || !strings.Contains(err.Error(), "cublasLtMatmul") {
		t.Fatalf("err = %v", err)
	}
}
