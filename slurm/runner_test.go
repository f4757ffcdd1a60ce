package slurm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExecRunnerStdout(t *testing.T) {
	r := &ExecRunner{}
	out, err := r.Run(context.Background(), []string{"/bin/sh", "-c", "printf 'a b\\n'; echo err >&2"})
	if err != nil || string(out) != "a b\n" {
		t.Fatalf("got %q, %v", out, err)
	}
}

func TestExecRunnerArgvNotSplit(t *testing.T) {
	r := &ExecRunner{}
	// one argument with spaces and quotes stays one argument
	out, err := r.Run(context.Background(), []string{"/bin/sh", "-c", `printf '%s|' "$@"`, "sh", "Reason=a b \"c\"", "x"})
	if err != nil || string(out) != `Reason=a b "c"|x|` {
		t.Fatalf("got %q, %v", out, err)
	}
}

func TestExecRunnerFailure(t *testing.T) {
	r := &ExecRunner{}
	argv := []string{"/bin/sh", "-c", "echo partial; echo 'Node x not found' >&2; exit 3"}
	out, err := r.Run(context.Background(), argv)
	var ce *CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("want *CommandError, got %T %v", err, err)
	}
	if ce.ExitCode != 3 || ce.Stderr != "Node x not found" || ce.Stdout != "partial" || string(out) != "partial\n" {
		t.Errorf("got %+v, out %q", ce, out)
	}
	if strings.Join(ce.Argv, " ") != strings.Join(argv, " ") || !strings.Contains(err.Error(), "Node x not found") {
		t.Errorf("error %q", err)
	}
}

func TestExecRunnerNotFound(t *testing.T) {
	r := &ExecRunner{}
	_, err := r.Run(context.Background(), []string{"/nonexistent/scontrol", "show", "config"})
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != -1 || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
	if _, err := r.Run(context.Background(), nil); err == nil {
		t.Fatal("empty argv accepted")
	}
}

func TestExecRunnerEnv(t *testing.T) {
	r := &ExecRunner{Env: []string{"SLURM_CONF=/tmp/x.conf"}}
	out, err := r.Run(context.Background(), []string{"/bin/sh", "-c", "echo $SLURM_CONF; echo ${PATH:+set}"})
	want := "/tmp/x.conf\n"
	if os.Getenv("PATH") != "" {
		want += "set\n"
	} else {
		want += "\n"
	}
	if err != nil || string(out) != want {
		t.Fatalf("got %q, %v", out, err)
	}
}

// On expiry the whole process group dies, including a grandchild that
// would otherwise outlive its parent.
func TestExecRunnerDeadlineKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r := &ExecRunner{}
	start := time.Now()
	script := "sleep 60 & echo $! > " + pidFile + "; wait"
	_, err := r.Run(ctx, []string{"/bin/sh", "-c", script})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != -1 {
		t.Errorf("got %#v", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("Run returned after %v", el)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// the grandchild is killed; it may linger as a zombie of init briefly
	deadline := time.Now().Add(5 * time.Second)
	for {
		if !alive(pid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still alive after the deadline", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func TestExecRunnerOwnGroup(t *testing.T) {
	r := &ExecRunner{}
	out, err := r.Run(context.Background(), []string{"/bin/sh", "-c", "cat /proc/$$/stat"})
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid pgrp ...
	s := string(out)
	pid, _, _ := strings.Cut(s, " ")
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 3 || f[2] != pid {
		t.Fatalf("child pid %s pgrp %q: not its own group leader (%q)", pid, f, s)
	}
	if f[2] == strconv.Itoa(syscall.Getpgrp()) {
		t.Errorf("child shares the test's process group")
	}
}

func TestExecRunnerCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (&ExecRunner{}).Run(ctx, []string{"/bin/true"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestExecRunnerStderrBounded(t *testing.T) {
	_, err := (&ExecRunner{}).Run(context.Background(), []string{"/bin/sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x >&2; exit 1"})
	var ce *CommandError
	if !errors.As(err, &ce) || len(ce.Stderr) != maxStderr {
		t.Fatalf("stderr len %d, %v", len(ce.Stderr), err)
	}
}
