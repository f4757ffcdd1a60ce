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
		{"list checks", []string{"--list-checks"}, 0, "fault-inject     health  none    no       test aid"},
		{"list check names", []string{"--list-checks=names"}, 0, "\nfault-inject\n"},
		{"list checks table by name", []string{"--list-checks=table"}, 0, "CHECK  "},
		{"list checks bad form", []string{"--list-checks=json"}, 2, `"json": want names or table`},
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

// TestListCheckNames: --list-checks=names prints exactly the registered
// names, one a line, for scripts (benchmarks/gpu/validate.sh greps it).
func TestListCheckNames(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--list-checks=names"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := strings.Join(benchmarks.Names(), "\n") + "\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	run([]string{"--list-checks"}, &out, &errb)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(benchmarks.Names())+1 || !strings.HasPrefix(lines[0], "CHECK ") {
		t.Fatalf("table of %d lines for %d checks:\n%s", len(lines), len(benchmarks.Names()), out.String())
	}
}
