package osutil

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	for _, body := range []string{"first\n", "second\n"} {
		if err := WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		if string(got) != body {
			t.Errorf("file = %q, want %q", got, body)
		}
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", st.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "r.json"), []byte("x"), 0o600); err == nil {
		t.Error("writing into a missing directory returned no error")
	}
}

func TestWriteFileRenameFails(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "r.json")
	if err := os.Mkdir(target, 0o755); err != nil { // a directory cannot be replaced by a file
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(target, []byte("x"), 0o644); err == nil {
		t.Fatal("renaming over a non-empty directory returned no error")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
}

func TestCommandKillsGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var out strings.Builder
	cmd := Command(ctx, time.Second, "/bin/sh", "-c", "sleep 30 & sleep 30")
	cmd.Stdout = &out // the background sleep holds the pipe until the group dies
	start := time.Now()
	err := cmd.Run()
	if err == nil {
		t.Fatal("a command past its deadline returned no error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("killing the process group took %v", d)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != -1 {
		t.Errorf("err = %v, want killed by a signal", err)
	}
	if cmd.SysProcAttr == nil || !cmd.SysProcAttr.Setpgid {
		t.Error("the command does not get its own process group")
	}
}

func TestKillGroup(t *testing.T) {
	cmd := Command(context.Background(), 0, "/bin/sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := KillGroup(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a killed group exited cleanly")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the group survived KillGroup")
	}
}
