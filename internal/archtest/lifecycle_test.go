package archtest

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The node lifecycle stays a package a reader can hold: at most
// maxPackageLines lines of Go outside tests in lifecycle and each package
// cut from it, fewer than maxLifecycleExported exported names in
// lifecycle itself, and fewer than maxBackArrows back-arrows between its
// files (see lifecycleFiles).
const (
	maxPackageLines      = 3000
	maxLifecycleExported = 40
	maxBackArrows        = 10
)

// lifecyclePackages are lifecycle and the packages cut from it along its
// seams (docs/architecture.md): the run's Slurm session, the epilog's
// leftovers, the notices, the records, the settings, the decision, the
// idle sweep.
var lifecyclePackages = []string{"lifecycle", "lifecycle/decide", "lifecycle/idle", "lifecycle/leftovers",
	"lifecycle/notice", "lifecycle/record", "lifecycle/settings", "slurm/session"}

// lifecycleFiles are the files of package lifecycle in their layer order,
// top first, as docs/architecture.md lists them: a file uses what the
// files below it declare. A use of something a file above declares is a
// back-arrow (one per pair of files, however many names it uses).
var lifecycleFiles = []string{
	"lifecycle.go",    // Run: the run from its settings to its report
	"validate.go",     // the validate mode's suite and its records
	"crossnode.go",    // the cross-node phase
	"culprit.go",      // the epilog's hang reports
	"apply.go",        // carry the plan out
	"apply_repair.go", // the repair ladder's remedies
	"inputs.go",       // what the decision reads
	"run.go",          // one run's state and options
	"jobpolicy.go",    // the job's own choices
	"faileddrain.go",  // the failed drains' record
	"remedies.go",     // the remedies' history
	"accel.go",        // the node's accelerators
	"notes.go",        // the report's notes
}

// productionFiles lists the non-test Go files of the package in dir.
func productionFiles(t *testing.T, dir string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	return files
}

// TestLifecyclePackageSizes: lifecycle and each package cut from it hold at
// most maxPackageLines lines of Go outside tests.
func TestLifecyclePackageSizes(t *testing.T) {
	for _, p := range lifecyclePackages {
		n := productionLines(t, filepath.Join(root(t), p))
		t.Logf("%s: %d lines", p, n)
		if n == 0 {
			t.Errorf("%s: no Go files: update lifecyclePackages", p)
		}
		if n > maxPackageLines {
			t.Errorf("%s: %d lines of Go outside tests, more than %d: cut it along a seam", p, n, maxPackageLines)
		}
	}
}

// checkLifecycle type-checks package lifecycle (its production files)
// against the export data of its dependencies.
func checkLifecycle(t *testing.T) (*token.FileSet, []*ast.File, *types.Package, *types.Info) {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", "./lifecycle")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	export := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, "\t"); ok && file != "" {
			export[path] = file
		}
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range productionFiles(t, filepath.Join(root(t), "lifecycle")) {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := export[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := (&types.Config{Importer: imp}).Check(module+"/lifecycle", fset, files, info)
	if err != nil {
		t.Fatalf("type-checking lifecycle: %v", err)
	}
	return fset, files, pkg, info
}

// TestLifecycleSeams: package lifecycle exports fewer than
// maxLifecycleExported names (package-level functions, types, variables
// and constants), and its files reach up the order of lifecycleFiles
// fewer than maxBackArrows times.
func TestLifecycleSeams(t *testing.T) {
	fset, files, pkg, info := checkLifecycle(t)
	var exported []string
	for _, name := range pkg.Scope().Names() {
		if token.IsExported(name) {
			exported = append(exported, name)
		}
	}
	t.Logf("lifecycle exports %d names: %s", len(exported), strings.Join(exported, " "))
	if len(exported) >= maxLifecycleExported {
		t.Errorf("lifecycle exports %d names, want fewer than %d: move a part with its names to a package of its own", len(exported), maxLifecycleExported)
	}

	rank := map[string]int{}
	for i, f := range lifecycleFiles {
		rank[f] = i
	}
	var names []string
	for _, f := range files {
		name := filepath.Base(fset.File(f.Pos()).Name())
		names = append(names, name)
		if _, ok := rank[name]; !ok {
			t.Errorf("lifecycle/%s is not in lifecycleFiles: give it its place in the order (and in docs/architecture.md)", name)
		}
	}
	for _, f := range lifecycleFiles {
		if !slices.Contains(names, f) {
			t.Errorf("lifecycleFiles names %s, which lifecycle does not have", f)
		}
	}
	arrows := backArrows(fset, pkg, info, rank)
	t.Logf("%d back-arrows in lifecycle", len(arrows))
	for _, a := range arrows {
		t.Log("  " + a)
	}
	if len(arrows) >= maxBackArrows {
		t.Errorf("%d back-arrows between lifecycle's files, want fewer than %d", len(arrows), maxBackArrows)
	}
}

// backArrows lists the pairs of files "from -> to: names" where from uses
// a name (function, type, variable, constant, method or field) of
// package pkg that to declares, to being above from in rank.
func backArrows(fset *token.FileSet, pkg *types.Package, info *types.Info, rank map[string]int) []string {
	uses := map[[2]string]map[string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() || obj.Parent() != nil && obj.Parent() != pkg.Scope() {
			continue // another package's, a builtin, or a local
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		rf, okf := rank[from]
		rt, okt := rank[to]
		if from == to || !okf || !okt || rt > rf {
			continue
		}
		k := [2]string{from, to}
		if uses[k] == nil {
			uses[k] = map[string]bool{}
		}
		uses[k][obj.Name()] = true
	}
	var out []string
	for k, set := range uses {
		var ns []string
		for n := range set {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		out = append(out, k[0]+" -> "+k[1]+": "+strings.Join(ns, " "))
	}
	sort.Strings(out)
	return out
}

// TestBackArrowsFound: the count sees the arrows of lifecycle's files
// when their order is turned upside down (Run's file at the bottom).
func TestBackArrowsFound(t *testing.T) {
	fset, _, pkg, info := checkLifecycle(t)
	rank := map[string]int{}
	for i, f := range lifecycleFiles {
		rank[f] = len(lifecycleFiles) - 1 - i
	}
	arrows := backArrows(fset, pkg, info, rank)
	if !slices.ContainsFunc(arrows, func(a string) bool { return strings.HasPrefix(a, "run.go -> notes.go: ") }) || len(arrows) < maxBackArrows {
		t.Errorf("upside down, found only %d back-arrows: %q", len(arrows), arrows)
	}
}
