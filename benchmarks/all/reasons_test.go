package all

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// reasonTrees are the sources whose tokens the checks give: the checks
// themselves, crossnet/judge's culprits' tokens among them (the cross-node
// checks give them as they are).
var reasonTrees = []string{".."}

// camel is a literal shaped like a reason token with two words or more
// ("DiskFull", "GEMMBelowThreshold").
var camel = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*$`)

// notTokens are token-shaped literals of the check sources that are not
// reason tokens: device models, vendor symbols and the like.
var notTokens = []string{"Ascend910B", "Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend910C",
	"InfiniBand", "Ethernet", "LinkUp", "HcclAllReduce", "NetworkHealth", "GPUs", "NPUs", "InDefaultSuite", "Gres", "MiB",
	// devcheck.ReasonLibraryError is a Tally's for a failed library call
	// when it has no Classifier; every shipped check's tally has one.
	"LibraryError"}

// patterns are the declared token families that are numbered, with the
// format that gives them (internal/archtest's numbered).
var patterns = map[string]string{"XID<code>": "XID%d"}

// tokenSource is what the check sources say about reason tokens.
type tokenSource struct {
	// given are the tokens the code can give, with where.
	given map[string]string
	// spelled are the string literals outside the checks' Reasons methods.
	spelled map[string]bool
}

// reasonField reports whether a composite literal's key names a token.
func reasonField(k ast.Expr) bool {
	id, ok := k.(*ast.Ident)
	return ok && slices.Contains([]string{"Reason", "Limit", "Peers", "Slow", "WrongResult"}, id.Name)
}

// readSources parses the non-test Go files of reasonTrees.
func readSources(t *testing.T) tokenSource {
	src := tokenSource{given: map[string]string{}, spelled: map[string]bool{}}
	fset := token.NewFileSet()
	for _, tree := range reasonTrees {
		err := filepath.WalkDir(tree, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			src.file(fset, f)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// file records f's tokens: every token-shaped literal, and every literal
// in a token's place (a Reason field, a tally's reason argument, a
// Reason* constant), which catches one-word tokens ("Canceled").
func (src tokenSource) file(fset *token.FileSet, f *ast.File) {
	give := func(e ast.Expr, always bool) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil || !(always || camel.MatchString(s)) || slices.Contains(notTokens, s) || strings.ContainsAny(s, " %") {
			return
		}
		if _, ok := src.given[s]; !ok {
			src.given[s] = fset.Position(lit.Pos()).String()
		}
	}
	var reasons []ast.Node // bodies of Reasons methods
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Name.Name == "Reasons" {
			reasons = append(reasons, fd)
		}
	}
	inReasons := func(n ast.Node) bool {
		return slices.ContainsFunc(reasons, func(r ast.Node) bool { return n.Pos() >= r.Pos() && n.End() <= r.End() })
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(x.Value); err == nil && x.Kind == token.STRING && !inReasons(x) {
				src.spelled[s] = true
			}
			give(x, false)
		case *ast.KeyValueExpr:
			if reasonField(x.Key) {
				give(x.Value, true)
			}
		case *ast.AssignStmt:
			for i, l := range x.Lhs {
				if s, ok := l.(*ast.SelectorExpr); ok && s.Sel.Name == "Reason" && i < len(x.Rhs) {
					give(x.Rhs[i], true)
				}
			}
		case *ast.CallExpr:
			if s, ok := x.Fun.(*ast.SelectorExpr); ok && slices.Contains([]string{"Fail", "Unknown", "Lost"}, s.Sel.Name) && len(x.Args) >= 3 {
				give(x.Args[1], true)
			}
		case *ast.ValueSpec:
			for i, id := range x.Names {
				if strings.HasPrefix(id.Name, "Reason") && i < len(x.Values) {
					give(x.Values[i], true)
				}
			}
		}
		return true
	})
}

// declared returns every token some registered check declares, and the
// runner's, with the checks that declare each.
func declared() map[string][]string {
	out := map[string][]string{}
	for _, t := range benchmarks.RunnerReasons() {
		out[t] = append(out[t], "(any check)")
	}
	for _, n := range benchmarks.Names() {
		c, _ := benchmarks.Lookup(n)
		for _, t := range benchmarks.Describe(c).Reasons {
			out[t] = append(out[t], n)
		}
	}
	return out
}

// TestEveryCheckDeclaresReasons: every shipped check says which reason
// tokens it gives, for --list-checks and docs/prolog.md.
func TestEveryCheckDeclaresReasons(t *testing.T) {
	for _, n := range benchmarks.Names() {
		c, _ := benchmarks.Lookup(n)
		if len(benchmarks.Describe(c).Reasons) == 0 {
			t.Errorf("%s declares no reason tokens (Reasons)", n)
		}
	}
}

// TestGivenReasonsAreDeclared: a reason token the code of the checks can
// give is declared by some check (or is the runner's), so that what
// sinfo -R may show is listed by vigil-prolog --list-checks.
func TestGivenReasonsAreDeclared(t *testing.T) {
	decl := declared()
	src := readSources(t)
	var missing []string
	for tok, where := range src.given {
		if _, ok := decl[tok]; !ok {
			missing = append(missing, where+": "+tok)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s is given but no check declares it (add it to the check's Reasons, or to notTokens if it is no reason token)", m)
	}
}

// TestDeclaredReasonsAreSpelled: every declared token is spelled whole in
// the checks' code outside their Reasons methods, where grepping for what
// sinfo -R shows finds it; a numbered family by the format that makes it.
func TestDeclaredReasonsAreSpelled(t *testing.T) {
	src := readSources(t)
	for tok, by := range declared() {
		lit := tok
		if f, ok := patterns[tok]; ok {
			lit = f
		} else if strings.ContainsAny(tok, "<>") {
			t.Errorf("%s (declared by %v): a numbered family has no format in patterns", tok, by)
			continue
		}
		if !src.spelled[lit] {
			t.Errorf("%s (declared by %v) is not spelled in the checks' code: a stale declaration?", tok, by)
		}
	}
}
