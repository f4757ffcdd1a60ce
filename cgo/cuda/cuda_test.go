package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

func TestNewError(t *testing.T) {
	driverName := func(r Result) string {
		if r == 2 {
			return "CUDA_ERROR_OUT_OF_MEMORY"
		}
		return ""
	}
	driverText := func(r Result) string {
		if r == 2 {
			return "out of memory"
		}
		return ""
	}
	tests := []struct {
		name       string
		code       Result
		nameFn     func(Result) string
		textFn     func(Result) string
		want       string
		wantDevice bool
	}{
		{"from driver", 2, driverName, driverText, "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", false},
		{"table fallback", 700, nil, nil, "cuMemAlloc: CUDA_ERROR_ILLEGAL_ADDRESS (700)", true},
		{"driver fails, table", 100, driverName, driverText, "cuMemAlloc: CUDA_ERROR_NO_DEVICE (100)", false},
		{"unknown code", 12345, nil, nil, "cuMemAlloc: CUresult(12345) (12345)", false},
		{"launch failed is a device fault", 719, nil, nil, "cuMemAlloc: CUDA_ERROR_LAUNCH_FAILED (719)", true},
		{"ecc", 214, nil, nil, "cuMemAlloc: CUDA_ERROR_ECC_UNCORRECTABLE (214)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := dl.NewError("cuMemAlloc", tt.code, tt.nameFn, tt.textFn)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if got := errors.Is(err, ErrDevice); got != tt.wantDevice {
				t.Errorf("errors.Is(ErrDevice) = %v, want %v", got, tt.wantDevice)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Code != tt.code {
				t.Errorf("errors.As: %v", ce)
			}
		})
	}
	if err := dl.NewError[Result]("cuInit", Success, nil, nil); err != nil {
		t.Errorf("success gave %v", err)
	}
}

func TestOpenWithoutDriver(t *testing.T) {
	_, err := Open(dl.Options{Names: []string{"libcuda.so.1.vigil-absent"}, Dirs: []string{t.TempDir()}})
	if !errors.Is(err, dl.ErrNotFound) {
		t.Fatalf("err = %v, want dl.ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "libcuda.so.1.vigil-absent not found") {
		t.Errorf("err = %q", err)
	}
}

func TestOpenWrongLibraryIsSymbolError(t *testing.T) {
	// libm opens but holds none of the driver's symbols: an error, not a crash.
	_, err := Open(dl.Options{Names: []string{"libm.so.6"}})
	if !errors.Is(err, dl.ErrSymbol) {
		t.Fatalf("err = %v, want dl.ErrSymbol", err)
	}
	if !strings.Contains(err.Error(), "cuInit") {
		t.Errorf("err %q does not name cuInit", err)
	}
}

func TestPTXDeclaresKernels(t *testing.T) {
	for _, k := range []string{KernelEmpty, KernelFill} {
		if !strings.Contains(PTX, ".visible .entry "+k+"(") {
			t.Errorf("PTX lacks entry %s", k)
		}
	}
	if !strings.HasPrefix(PTX, ".version 7.0\n.target sm_70\n.address_size 64") {
		t.Error("PTX header changed: keep ISA 7.0 / sm_70 for driver compatibility")
	}
}
