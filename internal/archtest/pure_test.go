package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// pure are the packages that decide without acting: they read what they
// are given and return a value, with no file, process, network or clock of
// their own and no Slurm call. lifecycle/decide is the drain rule, the
// guard and the repair ladder (Decide(Inputs) Plan).
var pure = []string{"lifecycle/decide"}

// impureImports are the imports a pure package may not have: files,
// processes, the network, logging, randomness, notifications.
var impureImports = []string{
	"os", "os/exec", "os/signal", "os/user", "net", "syscall", "io/fs", "io/ioutil",
	"math/rand", "math/rand/v2", "crypto/rand", "log", "log/slog",
	"github.com/sirupsen/logrus", module + "/notify",
}

// impurePrefixes are import path prefixes a pure package may not have.
var impurePrefixes = []string{"net/", "golang.org/x/sys/", module + "/internal/osutil", module + "/cgo/"}

// clockReads are the time functions that read or wait on the clock: a pure
// package gets the time as an input.
var clockReads = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}

// slurmData lists the names package slurm declares as types and
// constants: a pure package may name those (a node as scontrol showed it,
// a reboot request) but no function or variable of slurm (the client, the
// commands, the parsers of files).
func slurmData(t *testing.T) map[string]bool {
	t.Helper()
	data := map[string]bool{}
	for _, f := range parseDir(t, filepath.Join(root(t), "slurm")) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || (g.Tok != token.TYPE && g.Tok != token.CONST) {
				continue
			}
			for _, s := range g.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					data[s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						data[n.Name] = true
					}
				}
			}
		}
	}
	delete(data, "Client") // the scontrol client is a type, and Slurm's I/O
	delete(data, "Runner")
	return data
}

// parseDir parses the production Go files of dir.
func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no Go files in %s (%v)", dir, err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// impurity is one thing that makes a file impure, and where.
type impurity struct {
	pos  token.Position
	what string
}

func (i impurity) String() string { return i.pos.String() + ": " + i.what }

// impurities lists what makes the production files of dir impure: an
// import of impureImports or impurePrefixes, a clock read, and a use of
// package slurm other than its types and constants (slurmData).
func impurities(t *testing.T, dir string, slurmOK map[string]bool) []impurity {
	t.Helper()
	fset := token.NewFileSet()
	var out []impurity
	names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		local := map[string]string{} // name in the file -> import path
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := filepath.Base(p)
			if p == "math/rand/v2" {
				name = "rand"
			}
			if im.Name != nil {
				name = im.Name.Name
			}
			local[name] = p
			if slices.Contains(impureImports, p) || slices.ContainsFunc(impurePrefixes, func(pre string) bool { return strings.HasPrefix(p, pre) }) {
				out = append(out, impurity{fset.Position(im.Pos()), "imports " + p})
			}
		}
		ast.Inspect(f, func(x ast.Node) bool {
			sel, ok := x.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok || id.Obj != nil { // a local variable, not a package
				return true
			}
			switch local[id.Name] {
			case "time":
				if slices.Contains(clockReads, sel.Sel.Name) {
					out = append(out, impurity{fset.Position(sel.Pos()), "reads the clock: time." + sel.Sel.Name})
				}
			case module + "/slurm":
				if !slurmOK[sel.Sel.Name] {
					out = append(out, impurity{fset.Position(sel.Pos()), "uses slurm." + sel.Sel.Name + ": only Slurm's types and constants"})
				}
			}
			return true
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// TestDecisionIsPure: the pure packages (Decide and its rules) import no
// file, process, network or logging package, read no clock and call no
// Slurm: everything they decide on is in their inputs, so a table of cases
// is the whole test of the drain rule.
func TestDecisionIsPure(t *testing.T) {
	ok := slurmData(t)
	for _, p := range pure {
		for _, bad := range impurities(t, filepath.Join(root(t), p), ok) {
			t.Errorf("%s must stay pure (docs/architecture.md): %s", p, bad)
		}
	}
}

// TestImpuritiesFound: the checker finds each kind of impurity in a
// fixture that has all of them, and nothing in one that has none.
func TestImpuritiesFound(t *testing.T) {
	ok := slurmData(t)
	got := impurities(t, filepath.Join("testdata", "impure"), ok)
	var found []string
	for _, g := range got {
		found = append(found, g.what)
	}
	want := []string{
		"imports os",
		"imports os/exec",
		"imports net/http",
		"reads the clock: time.Now",
		"reads the clock: time.Since",
		"uses slurm.Client: only Slurm's types and constants",
		"uses slurm.ReadConfFile: only Slurm's types and constants",
	}
	for _, w := range want {
		if !slices.Contains(found, w) {
			t.Errorf("impurity %q not found in testdata/impure; found %q", w, found)
		}
	}
	if len(found) != len(want) {
		t.Errorf("found %d impurities, want %d: %q", len(found), len(want), found)
	}
	for _, g := range got {
		if filepath.Base(g.pos.Filename) != "impure.go" {
			t.Errorf("pure.go has no impurity, found %s", g)
		}
	}
}
