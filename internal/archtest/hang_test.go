package archtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// hangFamily are watcher/hang and the packages cut from it along its
// seams (docs/architecture.md), each with the packages of the family it
// may import. The imports point one way, down this list: the detector
// and the job's episodes (watcher/hang) call the digest and the
// straggler rule, which are pure functions of what they are given and
// never call back; all three write numbers and durations through
// hangfmt, which imports none of them.
var hangFamily = []struct {
	pkg     string
	imports []string
}{
	{"watcher/hang", []string{"watcher/hang/digest", "watcher/hang/straggler", "watcher/hang/hangfmt"}},
	{"watcher/hang/digest", []string{"watcher/hang/hangfmt"}},
	{"watcher/hang/straggler", []string{"watcher/hang/hangfmt"}},
	{"watcher/hang/hangfmt", nil},
}

// TestHangPackageSizes: watcher/hang and each package cut from it hold at
// most maxPackageLines lines of Go outside tests.
func TestHangPackageSizes(t *testing.T) {
	for _, f := range hangFamily {
		n := 0
		for _, file := range productionFiles(t, filepath.Join(root(t), f.pkg)) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			n += strings.Count(string(b), "\n")
		}
		t.Logf("%s: %d lines", f.pkg, n)
		if n == 0 {
			t.Errorf("%s: no Go files: update hangFamily", f.pkg)
		}
		if n > maxPackageLines {
			t.Errorf("%s: %d lines of Go outside tests, more than %d: cut it along a seam", f.pkg, n, maxPackageLines)
		}
	}
}

// TestHangImportsPointDown: within watcher/hang and the packages under
// it, each imports only what hangFamily allows it (so the digest and the
// straggler rule never import the detector, nor each other), and every
// package under watcher/hang has its entry.
func TestHangImportsPointDown(t *testing.T) {
	for _, msg := range hangImportErrors(imports(t, "./watcher/hang/...")) {
		t.Error(msg)
	}
}

// hangImportErrors lists, for the module's imports (package -> the
// module's packages it imports), each import within watcher/hang that
// hangFamily does not allow, and each package under watcher/hang that
// hangFamily leaves out.
func hangImportErrors(imps map[string][]string) []string {
	allowed := map[string][]string{}
	for _, f := range hangFamily {
		allowed[f.pkg] = f.imports
	}
	var errs []string
	for p, ps := range imps {
		if !under(p, "watcher/hang") {
			continue
		}
		ok, known := allowed[p]
		if !known {
			errs = append(errs, fmt.Sprintf("%s is under watcher/hang but not in hangFamily (internal/archtest/hang_test.go): give it its place and its imports", p))
			continue
		}
		for _, imp := range ps {
			if under(imp, "watcher/hang") && !slices.Contains(ok, imp) {
				errs = append(errs, fmt.Sprintf("%s imports %s: within watcher/hang, %s may import only %v", p, imp, p, ok))
			}
		}
	}
	sort.Strings(errs)
	return errs
}

// TestHangImportErrorsFound: the check finds an import back up (the
// digest importing the detector), one across (the straggler rule
// importing the digest), and a package it does not know.
func TestHangImportErrorsFound(t *testing.T) {
	got := hangImportErrors(map[string][]string{
		"watcher/hang":           {"watcher/hang/digest", "watcher/trace"},
		"watcher/hang/digest":    {"watcher/hang", "watcher/hang/hangfmt"},
		"watcher/hang/straggler": {"watcher/hang/digest"},
		"watcher/hang/extra":     nil,
		"watcher/loop":           {"watcher/hang"},
	})
	want := []string{
		"watcher/hang/digest imports watcher/hang:",
		"watcher/hang/extra is under watcher/hang but not in hangFamily",
		"watcher/hang/straggler imports watcher/hang/digest:",
	}
	if len(got) != len(want) {
		t.Fatalf("found %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d: %q, want it to begin %q", i, got[i], want[i])
		}
	}
}
