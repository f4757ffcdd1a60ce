package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// reasonTrees are where drain reasons' tokens are made: the checks, and
// the lifecycle that writes them into scontrol's Reason=.
var reasonTrees = []string{"benchmarks", "lifecycle"}

// numbered are the formats of the one token family that is numbered, not
// named: the xid check's "XID79", NVIDIA's own name of the XID it found
// (any code a site's [checks.xid] makes a fault), found under that name in
// NVIDIA's catalogue and internal/xid.
var numbered = []string{`"XID%d"`}

// builtToken reports whether e builds a string at run time (a + b, or a
// fmt.Sprintf) rather than naming a token whole.
func builtToken(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.BinaryExpr:
		return x.Op == token.ADD
	case *ast.CallExpr:
		if s, ok := x.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(s.Sel.Name, "Sprint") {
			if len(x.Args) > 0 {
				if lit, ok := x.Args[0].(*ast.BasicLit); ok && slices.Contains(numbered, lit.Value) {
					return false
				}
			}
			return true
		}
	case *ast.ParenExpr:
		return builtToken(x.X)
	}
	return false
}

// reasonExprs returns the expressions of n that become a reason token: a
// Reason, Limit or Peers field of a composite literal, and the reason
// argument of a tally's Fail or Unknown (device, reason, format, ...).
func reasonExprs(n ast.Node) []ast.Expr {
	switch x := n.(type) {
	case *ast.KeyValueExpr:
		if k, ok := x.Key.(*ast.Ident); ok && (k.Name == "Reason" || k.Name == "Limit" || k.Name == "Peers" || k.Name == "Slow" || k.Name == "WrongResult") {
			return []ast.Expr{x.Value}
		}
	case *ast.CallExpr:
		if s, ok := x.Fun.(*ast.SelectorExpr); ok && (s.Sel.Name == "Fail" || s.Sel.Name == "Unknown") && len(x.Args) >= 3 {
			return []ast.Expr{x.Args[1]}
		}
	}
	return nil
}

// TestReasonTokensAreWhole: every reason token an admin can see in
// sinfo -R is spelled whole in the source, so that grepping for it finds
// where it is given; none is built by concatenation or Sprintf.
func TestReasonTokensAreWhole(t *testing.T) {
	dir := root(t)
	fset := token.NewFileSet()
	for _, tree := range reasonTrees {
		err := filepath.WalkDir(filepath.Join(dir, tree), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
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
			ast.Inspect(f, func(n ast.Node) bool {
				for _, e := range reasonExprs(n) {
					if builtToken(e) {
						t.Errorf("%s:%d: a reason token is built at run time: spell it whole (a constant) so that what sinfo -R shows can be grepped",
							name, fset.Position(e.Pos()).Line)
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
}
