package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
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
