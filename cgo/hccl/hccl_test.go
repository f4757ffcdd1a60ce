package hccl

import (
	"errors"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

func TestNewError(t *testing.T) {
	tests := []struct {
		name string
		code Result
		text func(Result) string
		want string
		link bool
	}{
		{"roce", 12, func(Result) string { return "roce connect fail" }, "HcclAllReduce: HCCL_E_ROCE_CONNECT (12): roce connect fail", true},
		{"timeout", 9, nil, "HcclAllReduce: HCCL_E_TIMEOUT (9)", true},
		{"param", 1, nil, "HcclAllReduce: HCCL_E_PARA (1)", false},
		{"unknown", 77, func(Result) string { return "" }, "HcclAllReduce: HcclResult(77) (77)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := dl.NewError("HcclAllReduce", tt.code, nil, tt.text)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if errors.Is(err, ErrLink) != tt.link {
				t.Errorf("Is(ErrLink) = %v", !tt.link)
			}
		})
	}
	if dl.NewError[Result]("x", Success, nil, nil) != nil {
		t.Error("success is an error")
	}
}

func TestOpenMissing(t *testing.T) {
	_, err := Open(dl.Options{Names: []string{"libhccl.so.vigil-absent"}})
	if !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "libhccl.so.vigil-absent not found") {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenWrongLibrary(t *testing.T) {
	_, err := Open(dl.Options{Names: []string{"libc.so.6"}})
	if !errors.Is(err, dl.ErrSymbol) || !strings.Contains(err.Error(), "HcclAllReduce") || !strings.Contains(err.Error(), "HcclCommInitAll") {
		t.Fatalf("err = %v", err)
	}
}
