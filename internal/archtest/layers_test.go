// Package archtest holds the tests that keep vigil's package structure as
// docs/architecture.md draws it: layers point down, and the programs link
// only what they use.
package archtest

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/vigil-hpc/vigil"

// layers are vigil's layers, top first. A package belongs to the first
// entry whose prefix matches its path (relative to the module); it may
// import packages of its own layer or of a layer below, never above.
var layers = []struct {
	name     string
	prefixes []string
}{
	{"programs", []string{"prolog", "epilog", "watcher", "baseline/cmd"}},
	{"node lifecycle and watch loop", []string{"lifecycle", "watcher/loop", "benchmarks/all"}},
	{"checks, their report, and the watch parts", []string{"benchmarks", "report", "baseline", "watcher/"}},
	{"foundation", []string{"slurm", "cgo", "config", "policy", "hangreport", "notify", "rendezvous", "internal"}},
}

// apart are pairs of packages (prefixes) of one layer that must not import
// each other in either direction: each vendor's checks stand on the
// vendor-neutral device code, never on the other vendor's; and a check
// that spans the job's nodes says so in its Descriptor (Scope
// ScopeCrossNode, benchmarks.CollectiveCheck or PeerCheck), never by
// importing the cross-node phase, which finds it in the registry.
var apart = [][2]string{
	{"benchmarks/nvidia", "benchmarks/ascend"},
	{"benchmarks/nvidia", "benchmarks/crossnet"},
	{"benchmarks/ascend", "benchmarks/crossnet"},
	{"benchmarks/node", "benchmarks/crossnet"},
	{"benchmarks/device", "benchmarks/crossnet"},
}

// testOnly are packages that exist for tests (the throwaway Slurm cluster)
// and may use anything.
var testOnly = []string{"slurm/slurmtest", "slurm/spank/spanktest", "internal/archtest", "internal/ostest", "packaging", "rendezvous/rdvtest", "cgo/munge/mungetest", "watcher/hangview/pagetest"}

func rel(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
}

func under(p, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(p, prefix)
	}
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// layerOf returns the layer index of package p (0 is the top), -1 when p
// is in no layer.
func layerOf(p string) int {
	// The most specific prefix wins: "watcher/loop" before "watcher".
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, pre := range l.prefixes {
			if under(p, pre) && len(pre) > bestLen {
				best, bestLen = i, len(pre)
			}
		}
	}
	return best
}

// imports lists every package of the module with its imports of the
// module's own packages (not counting tests).
func imports(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`}, args...)...)
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		var own []string
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module+"/") {
				own = append(own, rel(imp))
			}
		}
		m[rel(f[0])] = own
	}
	return m
}

func root(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// TestLayersPointDown: no package imports a package of a layer above its
// own, and the vendor packages stay apart.
func TestLayersPointDown(t *testing.T) {
	for p, imps := range imports(t, "./...") {
		if slices.ContainsFunc(testOnly, func(pre string) bool { return under(p, pre) }) {
			continue
		}
		lp := layerOf(p)
		if lp < 0 {
			t.Errorf("package %s is in no layer: add it to layers in %s", p, "internal/archtest/layers_test.go")
			continue
		}
		for _, imp := range imps {
			li := layerOf(imp)
			if li >= 0 && li < lp {
				t.Errorf("%s (%s) imports %s (%s): a lower layer must not import an upper one", p, layers[lp].name, imp, layers[li].name)
			}
			for _, a := range apart {
				if (under(p, a[0]) && under(imp, a[1])) || (under(p, a[1]) && under(imp, a[0])) {
					t.Errorf("%s imports %s: %s and %s must stay apart", p, imp, a[0], a[1])
				}
			}
		}
	}
}

// deps lists the module's packages that pkg links (go list -deps).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg)
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var own []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module+"/") {
			own = append(own, rel(p))
		}
	}
	return own
}

// TestProgramsLinkWhatTheyUse: the prolog and epilog link none of the
// watcher's sampling, detection, trace or action code, and vigil-watch
// links no check registry.
func TestProgramsLinkWhatTheyUse(t *testing.T) {
	for _, prog := range []string{"./prolog", "./epilog"} {
		for _, d := range deps(t, prog) {
			if under(d, "watcher") {
				t.Errorf("%s links %s", prog, d)
			}
		}
	}
	for _, d := range deps(t, "./watcher") {
		if under(d, "benchmarks") {
			t.Errorf("./watcher links %s", d)
		}
	}
}
