package nccl

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
	}{
		{"with text", 2, func(Result) string { return "unhandled system error" }, "ncclAllReduce: ncclSystemError (2): unhandled system error"},
		{"no text", 6, nil, "ncclAllReduce: ncclRemoteError (6)"},
		{"unknown", 42, func(Result) string { return "" }, "ncclAllReduce: ncclResult(42) (42)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := dl.NewError("ncclAllReduce", tt.code, nil, tt.text)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			var ne *Error
			if !errors.As(err, &ne) || ne.Code != tt.code {
				t.Errorf("errors.As = %v", ne)
			}
		})
	}
	if dl.NewError[Result]("x", Success, nil, nil) != nil {
		t.Error("success is an error")
	}
}

func TestOpenMissing(t *testing.T) {
	_, err := Open(dl.Options{Names: []string{"libnccl.so.vigil-absent"}})
	if !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "libnccl.so.vigil-absent not found") {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenWrongLibrary(t *testing.T) {
	_, err := Open(dl.Options{Names: []string{"libm.so.6"}})
	if !errors.Is(err, dl.ErrSymbol) || !strings.Contains(err.Error(), "ncclAllReduce") {
		t.Fatalf("err = %v", err)
	}
}
