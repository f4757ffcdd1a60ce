package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
)

func TestMain(m *testing.M) {
	if benchmarks.IsChild(os.Args) {
		os.Exit(benchmarks.ChildMain(os.Args, os.Stdin, os.NewFile(3, "result"), os.Stderr))
	}
	os.Exit(m.Run())
}

func TestCommandLine(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "vigil.toml")
	if err := os.WriteFile(conf, []byte("[prolog]\nchecks = [\"fault-inject\"]\n[checks.fault-inject]\nmode = \"fail\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"help", []string{"-h"}, 0, "EXIT STATUS"},
		{"bad flag", []string{"--nope"}, 2, "flag provided but not defined"},
		// The epilog drains itself and exits 0 even when a check fails.
		{"dry run fail", []string{"--dry-run", "--config", conf, "--log-level", "error"}, 0, `would drain`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tt.args, &out, &errb)
			all := out.String() + errb.String()
			if code != tt.code || !strings.Contains(all, tt.contains) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, tt.code, tt.contains, all)
			}
		})
	}
}
