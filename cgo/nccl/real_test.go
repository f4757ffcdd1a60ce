package nccl

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
)

// Debian 12 does not package NCCL; Debian 13's contrib does (libnccl2,
// NCCL 2.22), built for glibc 2.38, so it cannot be loaded on Debian 12.
// .ci/deps-nvidia unpacks it into ncclDir and TestRealNCCLExports reads
// its symbol table. Where a real libnccl.so.2 can be loaded, every symbol
// vigil binds is resolved through it; where none is on the loader's path,
// Open must fail with an error that names what it looked for.

// ncclDir is where .ci/deps-nvidia unpacks Debian 13's libnccl.so.2.
const ncclDir = "/opt/vigil-ci/nccl"

// TestRealNCCLExports: the real NCCL 2.22 exports every function vigil
// binds. Loading it here is tried too: on Debian 12 it fails for want of
// glibc 2.38, and that failure must be a clear error, not a crash.
func TestRealNCCLExports(t *testing.T) {
	so := filepath.Join(ncclDir, "libnccl.so.2")
	if _, err := os.Stat(so); err != nil {
		t.Fatalf("real NCCL not unpacked: bash .ci/deps-nvidia puts Debian 13's libnccl2 in %s (%v)", ncclDir, err)
	}
	funcs := dltest.ELFFuncs(t, so, "nccl")
	for _, n := range boundSymbols() {
		if !funcs[n] {
			t.Errorf("%s does not export %s, which vigil binds", so, n)
		}
	}
	real, _ := filepath.EvalSymlinks(so)
	t.Logf("%s exports all %d functions vigil binds (of %d nccl* functions)", filepath.Base(real), len(boundSymbols()), len(funcs))
	l, err := Open(dl.Options{Dirs: []string{ncclDir}})
	if err != nil {
		if !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "libnccl.so.2") {
			t.Errorf("loading NCCL 2.22 here: %v, want a not-found error naming libnccl.so.2 and why", err)
		}
		t.Logf("not loadable here: %v", err)
		return
	}
	defer l.Close()
	// Loadable (a newer glibc, as in the Debian 13 root): every symbol
	// resolved, and ncclGetVersion needs no GPU.
	v, err := l.Version()
	if err != nil || v/10000 != 2 {
		t.Errorf("ncclGetVersion = %d, %v; want 2xxxx", v, err)
	}
	t.Logf("loaded %s: all %d symbols resolved, ncclGetVersion %d", l.Path(), len(boundSymbols()), v)
}

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
		t.Logf("real NCCL at %s: all %d symbols resolved", l.Path(), len(boundSymbols()))
		return
	}
	if errors.Is(err, dl.ErrSymbol) {
		t.Fatalf("the installed NCCL lacks symbols vigil binds: %v", err)
	}
	if !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "libnccl.so.2 not found") {
		t.Fatalf("Open without NCCL: %v, want an error naming libnccl.so.2", err)
	}
}

// boundSymbols lists, sorted, every symbol Open looks up in NCCL, to
// check them against a real library.
func boundSymbols() []string { return dl.Names(new(ncclFuncs).symbols()) }
