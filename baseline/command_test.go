package baseline

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test ./baseline -update to accept):\n%s", path, got)
	}
}

// TestCommandGolden: the table, outliers and TOML of six nodes' reports
// with one slow GPU, one slow launch and one slow disk; a file that is not
// a report is skipped and named.
func TestCommandGolden(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Command([]string{"--model", "NVIDIA H100 80GB HBM3", "testdata/reports"}, &out, &errb); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	golden(t, "baseline.golden", out.Bytes())
	if !strings.Contains(errb.String(), "broken.json: not a report") {
		t.Errorf("stderr: %s", errb.String())
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"help", []string{"--help"}, ExitOK, "REPORT_DIR"},
		{"no dir", nil, ExitUsage, "no REPORT_DIR"},
		{"bad flag", []string{"--nope", "x"}, ExitUsage, "not defined"},
		{"missing dir", []string{"H100=testdata/none"}, ExitError, "testdata/none"},
		{"flags after dirs", []string{"testdata/reports", "--model", "H100"}, ExitOK, `[checks.gemm.thresholds."H100"]`},
		{"no model", []string{"testdata/reports"}, ExitOK, `[checks.gemm.thresholds."MODEL"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Command(tt.args, &out, &errb)
			if all := out.String() + errb.String(); code != tt.code || !strings.Contains(all, tt.contains) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, tt.code, tt.contains, all)
			}
		})
	}
}

func TestParseSource(t *testing.T) {
	for arg, want := range map[string]Source{
		"/srv/r":                 {Model: "H100", Dir: "/srv/r"},
		"H200=/srv/r":            {Model: "H200", Dir: "/srv/r"},
		"NVIDIA H100 PCIe=rel/d": {Model: "NVIDIA H100 PCIe", Dir: "rel/d"},
	} {
		if got := ParseSource(arg, "H100"); got != want {
			t.Errorf("ParseSource(%q) = %+v, want %+v", arg, got, want)
		}
	}
}
