package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/internal/vendors"
)

// The places outside a vendor's own packages that docs/architecture.md
// says a new vendor touches ("A new vendor"): the row of the vendor
// table, the import that links its checks, and its sampler.
var vendorPlaces = map[string]string{
	vendorTable:       "its row of the vendor table",
	"benchmarks/all":  "the import that links its checks",
	samplerHome + "/": "its sampler",
}

// shippedOnly are the files outside the vendors' packages that name a
// shipped vendor where a new vendor has nothing to add, each with why.
var shippedOnly = map[string]string{
	"benchmarks/vendor.go": "VendorNVIDIA and VendorAscend name the shipped vendors for the tests of the packages that " +
		"select by vendor; a new vendor's package declares its own benchmarks.Vendor, the name of its row",
	"cgo/dl/paths.go": "the layout of NVIDIA's pip wheels (site-packages/nvidia/PKG/lib), searched by NVIDIA's bindings only",
	"watcher/trace/device.go": "the sources of the shipped samplers' device events (DeviceNVML, DeviceDCMI); " +
		"a new sampler's events name their source with its own sampler's name",
}

// TestNewVendorTouchesThreeFiles counts, for each vendor of the table,
// the Go files outside its own packages (benchmarks/NAME, the packages
// under it, and the library bindings only they import) whose code names
// it: imports one of its packages or one of its bindings, or spells its name or its sampler's in a string.
// They must be one file in each place of vendorPlaces, and none anywhere
// else, so that the three files docs/architecture.md counts are all a new
// vendor touches; the files of shippedOnly name a shipped vendor where a
// new one adds nothing. Tests, testdata/ and the test-only packages are
// fixtures; comments and help text may name any vendor.
func TestNewVendorTouchesThreeFiles(t *testing.T) {
	dir := root(t)
	own := vendorOwnImports(t, dir)
	seen := map[string]bool{}
	defer func() {
		for f := range shippedOnly {
			if !seen[f] {
				t.Errorf("%s names no vendor any more: take it out of shippedOnly", f)
			}
		}
	}()
	for _, r := range vendors.Table {
		byPlace := map[string][]string{}
		eachSourceFile(t, testOnly, func(name string, src []byte) {
			if ownedBy(name, own[r.Name]) {
				return
			}
			why := namesVendor(t, name, src, r, own[r.Name])
			if why == "" {
				return
			}
			byPlace[placeOf(name)] = append(byPlace[placeOf(name)], name+" ("+why+")")
		})
		for place, what := range vendorPlaces {
			files := byPlace[place]
			switch {
			case len(files) == 0:
				t.Errorf("vendor %s: nothing in %s (%s); is the search still right?", r.Name, place, what)
			case len(files) > 1 && place != samplerHome+"/":
				t.Errorf("vendor %s: %d files in %s (%s), want 1: %s", r.Name, len(files), place, what, strings.Join(files, ", "))
			}
		}
		// A sampler may keep its device faults in a file of their own
		// (sample.FaultReporter); a new vendor writes one.
		if files := byPlace[samplerHome+"/"]; len(files) > 2 {
			t.Errorf("vendor %s: %d files in %s, want its sampler and its fault reader at most: %s", r.Name, len(files), samplerHome, strings.Join(files, ", "))
		}
		for _, f := range byPlace[""] {
			if _, ok := shippedOnly[strings.Fields(f)[0]]; ok {
				seen[strings.Fields(f)[0]] = true
				continue
			}
			t.Errorf("vendor %s is named in %s: a new vendor would touch that file too; read it from the vendor table or register it from the vendor's package", r.Name, f)
		}
		t.Logf("vendor %s outside its packages: %v", r.Name, byPlace)
	}
}

// placeOf is the place of vendorPlaces file name is in, "" for none.
func placeOf(name string) string {
	for p := range vendorPlaces {
		if under(name, strings.TrimSuffix(p, "/")) {
			return p
		}
	}
	return ""
}

// vendorOwn is what a vendor owns: its package and the imports only it
// makes (its library bindings, in the module or not).
type vendorOwn struct {
	pkg     string
	imports []string // import paths
}

// ownedBy reports whether file name (from the module's root) is in one of
// the vendor's own packages.
func ownedBy(name string, o vendorOwn) bool {
	if under(name, o.pkg) {
		return true
	}
	for _, imp := range o.imports {
		if strings.HasPrefix(imp, module+"/") && under(name, rel(imp)) {
			return true
		}
	}
	return false
}

// vendorOwnImports returns each vendor's package (benchmarks/NAME) and its
// library bindings: the packages it or a package under it
// (benchmarks/NAME/...) imports, in cgo/ (but cgo/dl, every binding's
// helper) or outside the module, that no other package imports but its
// sampler's and the bindings themselves (logrus is nobody's).
func vendorOwnImports(t *testing.T, dir string) map[string]vendorOwn {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imps := map[string][]string{} // package (from the module's root) → its imports
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imps[rel(f[0])] = f[1:]
	}
	byOthers := func(p, pkg string) bool {
		for q, is := range imps {
			if !under(q, pkg) && !under(q, samplerHome) && !under(q, "cgo") && slices.Contains(is, p) {
				return true
			}
		}
		return false
	}
	res := map[string]vendorOwn{}
	for _, r := range vendors.Table {
		o := vendorOwn{pkg: "benchmarks/" + r.Name}
		if _, ok := imps[o.pkg]; !ok {
			t.Fatalf("vendor %s has no package %s", r.Name, o.pkg)
		}
		var is []string
		for q, qis := range imps {
			if under(q, o.pkg) {
				is = append(is, qis...)
			}
		}
		slices.Sort(is)
		for _, p := range slices.Compact(is) {
			inModule := strings.HasPrefix(p, module+"/")
			third := !inModule && strings.Contains(strings.Split(p, "/")[0], ".")
			binding := inModule && under(rel(p), "cgo") && rel(p) != "cgo/dl"
			if (third || binding) && !byOthers(p, o.pkg) {
				o.imports = append(o.imports, p)
			}
		}
		sort.Strings(o.imports)
		res[r.Name] = o
	}
	return res
}

// namesVendor says how file name (its text src) names vendor r in code,
// "" when it does not.
func namesVendor(t *testing.T, name string, src []byte, r vendors.Row, o vendorOwn) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if (strings.HasPrefix(p, module+"/") && under(rel(p), o.pkg)) || slices.Contains(o.imports, p) {
			return "imports " + p
		}
	}
	var why string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING || why != "" {
			return why == ""
		}
		if v, err := strconv.Unquote(lit.Value); err == nil && (v == r.Name || v == string(r.Sampler)) {
			why = fmt.Sprintf("spells %q", v)
		}
		return true
	})
	return why
}

// TestNewVendorSearchFinds: the search of TestNewVendorTouchesThreeFiles
// finds a vendor's package or one under it imported, a binding imported
// and its name spelt, and leaves comments and other vendors alone.
func TestNewVendorSearchFinds(t *testing.T) {
	r := vendors.Row{Name: "acme", Sampler: "acmesmi"}
	o := vendorOwn{pkg: "benchmarks/acme", imports: []string{module + "/cgo/acmelib", "example.com/acme/go-acme"}}
	for _, c := range []struct{ src, want string }{
		{`package p; import _ "` + module + `/benchmarks/acme"`, "imports " + module + "/benchmarks/acme"},
		{`package p; import _ "` + module + `/benchmarks/acme/health"`, "imports " + module + "/benchmarks/acme/health"},
		{`package p; import _ "` + module + `/benchmarks/acmex"`, ""},
		{`package p; import "example.com/acme/go-acme"`, "imports example.com/acme/go-acme"},
		{`package p; import "` + module + `/cgo/acmelib"`, "imports " + module + "/cgo/acmelib"},
		{`package p; var v = map[string]int{"acme": 1}`, `spells "acme"`},
		{`package p; const s = "acmesmi"`, `spells "acmesmi"`},
		{"package p\n// acme's devices, read with acmesmi\nconst help = `the acme table`", ""},
		{`package p; import _ "` + module + `/benchmarks/other"; var v = "nvidia-acme"`, ""},
	} {
		if got := namesVendor(t, "x.go", []byte(c.src), r, o); got != c.want {
			t.Errorf("%s: %q, want %q", c.src, got, c.want)
		}
	}
	if !ownedBy("cgo/acmelib/lib.go", o) || !ownedBy("benchmarks/acme/x.go", o) || !ownedBy("benchmarks/acme/health/x.go", o) ||
		ownedBy("benchmarks/all/all.go", o) {
		t.Error("ownedBy")
	}
	if placeOf("watcher/sample/acme.go") != samplerHome+"/" || placeOf("benchmarks/all/all.go") != "benchmarks/all" || placeOf("prolog/main.go") != "" {
		t.Error("placeOf")
	}
}

// forwardingHomes are the packages of the compute checks whose forwarding
// names (type X = pkg.Y, const or var X = pkg.Y) are counted.
var forwardingHomes = []string{"benchmarks/device", "benchmarks/nvidia", "benchmarks/nvidia/health", "benchmarks/ascend", "benchmarks/node"}

// TestFewForwardingNames: the vendor packages and package device forward
// fewer than 10 names of other packages, each with a comment that says it
// is an alias and why, so that a name has one home and code says it there.
func TestFewForwardingNames(t *testing.T) {
	dir := root(t)
	var all []string
	for _, home := range forwardingHomes {
		files, _ := filepath.Glob(filepath.Join(dir, home, "*.go"))
		if len(files) == 0 {
			t.Fatalf("no Go files in %s", home)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range forwarded(af, true) {
				all = append(all, home+"/"+filepath.Base(f)+": "+name)
			}
		}
	}
	if len(all) >= 10 {
		t.Errorf("%d forwarding names, want fewer than 10: %s", len(all), strings.Join(all, "; "))
	}
	for _, a := range all {
		if strings.HasSuffix(a, " (no alias comment)") {
			t.Errorf("%s: say in its comment that it is an alias, and why", a)
		}
	}
	// The search finds what the packages held before: aliases of types,
	// constants and variables, with and without a comment that says so.
	src := "package p\n// Node is the node.\ntype Node = device.Node\n// An alias: one home.\ntype T = x.T\n" +
		"type Own struct{}\nconst (\n\tA = device.A\n\tb = \"b\"\n)\nvar ErrHung = devcheck.ErrHung\nvar n = len(x)\n"
	af, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Node (no alias comment)", "T", "A (no alias comment)", "ErrHung (no alias comment)"}
	if got := forwarded(af, true); !slices.Equal(got, want) {
		t.Errorf("forwarded %q, want %q", got, want)
	}
}

// forwarded lists the names f declares as another package's (a type alias
// or a const or var set to a selector); with say, those whose comment (or
// their group's) does not say "alias" are marked so.
func forwarded(f *ast.File, say bool) []string {
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			var names []string
			var doc *ast.CommentGroup
			switch s := s.(type) {
			case *ast.TypeSpec:
				if _, sel := s.Type.(*ast.SelectorExpr); s.Assign != 0 && sel {
					names, doc = []string{s.Name.Name}, s.Doc
				}
			case *ast.ValueSpec:
				for i, v := range s.Values {
					if sel, ok := v.(*ast.SelectorExpr); ok {
						if _, ok := sel.X.(*ast.Ident); ok {
							names, doc = append(names, s.Names[i].Name), s.Doc
						}
					}
				}
			}
			if doc == nil {
				doc = g.Doc
			}
			for _, n := range names {
				if say && (doc == nil || !strings.Contains(strings.ToLower(doc.Text()), "alias")) {
					n += " (no alias comment)"
				}
				out = append(out, n)
			}
		}
	}
	return out
}
