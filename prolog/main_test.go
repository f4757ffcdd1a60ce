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
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[prolog]\nbudget = 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.toml")
	if err := os.WriteFile(good, []byte("[prolog]\nchecks = [\"fault-inject\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"help", []string{"--help"}, 0, "EXIT STATUS"},
		{"bad flag", []string{"--nope"}, 2, "flag provided but not defined"},
		{"stray argument", []string{"now"}, 2, "unexpected argument"},
		{"list checks", []string{"--list-checks"}, 0, "fault-inject"},
		{"check-config invalid", []string{"--check-config", "--config", bad}, 3, "bad.toml:2: prolog.budget: invalid value"},
		{"check-config valid", []string{"--check-config", "--config", good}, 0, "[checks.fault-inject]"},
		{"check-config flag override", []string{"--check-config", "--config", good, "--budget", "7m"}, 0, `budget = "7m0s"`},
		{"explicit missing config", []string{"--dry-run", "--config", filepath.Join(dir, "none.toml")}, 3, "INVALID"},
		{"dry run", []string{"--dry-run", "--config", good, "--log-level", "error"}, 0, "ran:          fault-inject"},
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
