package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindPython(t *testing.T) {
	dir := t.TempDir()
	py := filepath.Join(dir, "python3")
	if err := os.WriteFile(py, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(dir, "python-data")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := pythonDirs
	t.Cleanup(func() { pythonDirs = old })
	pythonDirs = []string{filepath.Join(dir, "none"), dir}

	t.Setenv("PATH", "")
	if got, searched, err := findPython("python3"); err != nil || got != py {
		t.Errorf("no PATH: got %q, %v (searched %v), want %s from the usual places", got, err, searched, py)
	}
	if _, searched, err := findPython("python9"); err == nil || !strings.Contains(strings.Join(searched, ", "), "PATH unset") {
		t.Errorf("a name nowhere: err %v, searched %v; want an error that says PATH was unset", err, searched)
	}
	if got, _, err := findPython(py); err != nil || got != py {
		t.Errorf("a path: got %q, %v", got, err)
	}
	if _, _, err := findPython(notExec); err == nil {
		t.Errorf("a path that is not executable: want an error")
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "python3"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", other)
	if got, _, _ := findPython("python3"); got != filepath.Join(other, "python3") {
		t.Errorf("PATH set: got %q, want PATH's first", got)
	}
	s := Settings{Python: "python9"}
	if n := s.ConfigNote(); !strings.Contains(n, "none found") {
		t.Errorf("ConfigNote for a missing interpreter: %q", n)
	}
}
