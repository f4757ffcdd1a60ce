package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/internal/vendors"
)

// Sizes a reader can hold in mind: functions of at most maxFuncLines lines
// (from func to the closing brace) and files of at most maxFileLines, in
// the module's Go code outside tests and testdata.
const (
	maxFuncLines = 80
	maxFileLines = 600
)

// TestSizes keeps functions and files small enough to read whole.
func TestSizes(t *testing.T) {
	dir := root(t)
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || (strings.HasPrefix(name, ".") && path != dir) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		name, _ := filepath.Rel(dir, path)
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s: %d lines, more than %d: split it along its seams", name, n, maxFileLines)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			what := "a function literal"
			switch x := n.(type) {
			case *ast.FuncDecl:
				body, what = x.Body, x.Name.Name
			case *ast.FuncLit:
				body = x.Body
			}
			if body != nil {
				start := fset.Position(n.Pos()).Line
				if lines := fset.Position(body.End()).Line - start + 1; lines > maxFuncLines {
					t.Errorf("%s:%d: %s is %d lines, more than %d", name, start, what, lines, maxFuncLines)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// productionLines counts the lines of the package in dir's Go files
// outside tests.
func productionLines(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	for _, f := range productionFiles(t, dir) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(b), "\n")
	}
	return n
}

// TestVendorPackageSizes: each vendor's package (benchmarks/NAME, for each
// row of the vendor table) and each package cut from it (benchmarks/NAME/...:
// NVIDIA's health facts) hold at most maxPackageLines lines of Go outside
// tests, as lifecycle's packages do; a package that grows past it is cut
// along a seam, with its tests.
func TestVendorPackageSizes(t *testing.T) {
	dir := root(t)
	for _, r := range vendors.Table {
		home := "benchmarks/" + r.Name
		var pkgs []string
		for p := range imports(t, "./"+home+"/...") {
			pkgs = append(pkgs, p)
		}
		slices.Sort(pkgs)
		if !slices.Contains(pkgs, home) {
			t.Errorf("vendor %s: no package %s (go list found %v)", r.Name, home, pkgs)
		}
		for _, p := range pkgs {
			n := productionLines(t, filepath.Join(dir, p))
			t.Logf("%s: %d lines", p, n)
			if n > maxPackageLines {
				t.Errorf("%s: %d lines of Go outside tests, more than %d: cut it along a seam (docs/architecture.md)", p, n, maxPackageLines)
			}
		}
	}
}
