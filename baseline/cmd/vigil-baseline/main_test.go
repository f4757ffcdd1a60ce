package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/baseline"
)

// TestCommand: vigil-baseline prints the proposal for a directory of
// reports, and a bad command line is exit 2.
func TestCommand(t *testing.T) {
	var out, errb bytes.Buffer
	code := baseline.Command([]string{"--model", "H100", filepath.Join("..", "..", "testdata", "reports")}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), `[checks.gemm.thresholds."H100"]`) {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := baseline.Command(nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "vigil-baseline: no REPORT_DIR") {
		t.Fatalf("no directory: exit %d, %q", code, errb.String())
	}
}
