package health

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
)

// Tests against the real libnvidia-ml.so.1 of Debian's driver 535
// (libnvidia-ml1, .ci/deps-nvidia) on a machine without the kernel module.

const nvmlGoPkg = "github.com/NVIDIA/go-nvml/pkg/nvml"

// goNVMLOnly are methods of go-nvml's Interface with no C function
// behind them: Extensions gives the loaded library itself, through which
// the sampler asks whether the driver has a symbol before calling it.
var goNVMLOnly = map[string]bool{"Extensions": true}

// nvmlCalls returns the C function names behind the go-nvml methods that
// vigil's own (non-test) code calls, found in the source of every file of
// the module that imports go-nvml: nvml.Interface's method M is nvmlM,
// nvml.Device's method M is nvmlDeviceM.
func nvmlCalls(t *testing.T, root string) []string {
	t.Helper()
	methods := map[string]string{}
	for prefix, typ := range map[string]reflect.Type{
		"nvml":       reflect.TypeOf((*nvml.Interface)(nil)).Elem(),
		"nvmlDevice": reflect.TypeOf((*nvml.Device)(nil)).Elem(),
	} {
		for i := 0; i < typ.NumMethod(); i++ {
			if name := typ.Method(i).Name; !goNVMLOnly[name] {
				methods[name] = prefix + name
			}
		}
	}
	found := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		if !importsPkg(f, nvmlGoPkg) {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok && methods[sel.Sel.Name] != "" {
					found[methods[sel.Sel.Name]] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(found))
	for n := range found {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// moduleRoot is the module's directory (where go.mod is), above the test's.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

func importsPkg(f *ast.File, path string) bool {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == path {
			return true
		}
	}
	return false
}

func TestRealNVMLHasEverySymbolVigilCalls(t *testing.T) {
	dltest.OpenReal(t, "libnvidia-ml1", "libnvidia-ml.so.1")
	calls := nvmlCalls(t, moduleRoot(t))
	if len(calls) < 10 {
		t.Fatalf("found only %v in vigil's source: the scan is broken", calls)
	}
	lib := nvml.New()
	ret := lib.Init() // loads the library whether or not the driver answers
	if ret == nvml.SUCCESS {
		defer lib.Shutdown()
	}
	ext := lib.Extensions()
	for _, c := range calls {
		if ext.LookupSymbol(c) == nil || ext.LookupSymbol(c+"_v2") == nil || ext.LookupSymbol(c+"_v3") == nil {
			continue
		}
		t.Errorf("libnvidia-ml.so.1 has no %s (nor _v2, _v3), which vigil calls through go-nvml", c)
	}
	t.Logf("%d NVML functions vigil calls, all present: %v", len(calls), calls)
}

func TestRealNVMLWithoutDriver(t *testing.T) {
	dltest.OpenReal(t, "libnvidia-ml1", "libnvidia-ml.so.1")
	l := &library{open: func() nvml.Interface { return nvml.New() }}
	defer l.shutdown()
	_, err := l.get()
	if m, _ := filepath.Glob("/dev/nvidia[0-9]*"); len(m) > 0 {
		if err != nil {
			t.Fatalf("a GPU is present and NVML init failed: %v", err)
		}
		return
	}
	if !errors.Is(err, ErrDriverNotLoaded) || !errors.Is(err, nvml.ERROR_DRIVER_NOT_LOADED) {
		t.Fatalf("NVML init: %v, want ErrDriverNotLoaded wrapping NVML_ERROR_DRIVER_NOT_LOADED", err)
	}
	if err.Error() != "NVIDIA driver not loaded: Driver Not Loaded" {
		t.Errorf("message %q: the text comes from the real nvmlErrorString", err)
	}
}
