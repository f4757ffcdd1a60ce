package nccl

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// Debian does not package NCCL, so CI has only the fake under testdata.
// Where a real libnccl.so.2 is installed, every symbol vigil binds is
// checked against it; where none is, Open must fail with an error that
// names what it looked for.

func TestSymbolTableCoversEveryFunction(t *testing.T) {
	var f ncclFuncs
	if n, got := reflect.TypeOf(f).NumField(), len(f.symbols()); got != n {
		t.Fatalf("symbol table has %d names for %d functions", got, n)
	}
}

func TestRealNCCL(t *testing.T) {
	l, err := Open(dl.Options{})
	if err == nil {
		defer l.Close()
		t.Logf("real NCCL at %s: all %d symbols resolved", l.Path(), len(Symbols()))
		return
	}
	if errors.Is(err, dl.ErrSymbol) {
		t.Fatalf("the installed NCCL lacks symbols vigil binds: %v", err)
	}
	if !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "libnccl.so.2 not found") {
		t.Fatalf("Open without NCCL: %v, want an error naming libnccl.so.2", err)
	}
}
