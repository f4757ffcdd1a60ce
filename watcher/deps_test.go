package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoCheckRegistry: vigil-watch links neither the check registry nor
// the checks (the policy takes what it needs of them as a parameter).
func TestNoCheckRegistry(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list the dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/vigil-hpc/vigil/benchmarks" || strings.HasPrefix(p, "github.com/vigil-hpc/vigil/benchmarks/") {
			t.Errorf("vigil-watch links %s", p)
		}
	}
}
