package main

import (
	"bytes"
	"fmt"
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

// TestCulpritRecheck: a hang report of vigil-watch that names this node
// is noted, and the epilog runs the health facts only, as on another node
// of the same job: the report is the job's user's file, so it never runs
// the performance probes (the disk check).
func TestCulpritRecheck(t *testing.T) {
	work := t.TempDir()
	hang := `{"v":1,"event":"hung","job":"4242","host":"gpu07","time":"2026-11-29T10:30:00Z","since":"2026-11-29T10:00:00Z",` +
		`"window":"30m0s","reason":"FlatUsageIdle","flat":["io"],"culprits":["gpu07"],"actions":["log","report"]}`
	if err := os.WriteFile(filepath.Join(work, "vigil-hang-4242-gpu07-20261129T103000Z.json"), []byte(hang), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "vigil.toml")
	body := fmt.Sprintf("[prolog]\nchecks = [\"gpu-count\", \"disk\"]\n[checks.disk]\npath = %q\n", t.TempDir())
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLURM_JOB_ID", "4242")
	t.Setenv("SLURM_JOB_WORK_DIR", work)
	// The report (the job's user's file) is noted on the node it names and
	// runs nothing more: the disk probe runs on neither node.
	for node, named := range map[string]bool{"gpu07": true, "gpu08": false} {
		t.Run(node, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run([]string{"--dry-run", "--node", node, "--config", conf, "--log-level", "error"}, &out, &errb)
			if code != 0 {
				t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
			}
			ranDisk := strings.Contains(out.String(), "\ndisk ")
			noted := strings.Contains(out.String(), "recheck: named as culprit by vigil-watch in "+work)
			if ranDisk || noted != named {
				t.Fatalf("disk check ran %v, culprit note %v, want false, %v:\n%s", ranDisk, noted, named, out.String())
			}
		})
	}
}

// TestFlagErrors: a bad command line is one line on stderr that names the
// flag and points at --help, exit 2; --help goes to stdout, exit 0.
func TestFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
		{[]string{"--check-timeout", "1ms"}, `flag --check-timeout="1ms": invalid value: 1ms: want at least 100ms`},
		{[]string{"--on-budget-expiry", "drain"}, `flag --on-budget-expiry="drain": invalid value`},
		{[]string{"--skip", "nosuch"}, `unknown check "nosuch" in skip`},
	} {
		var out, errb bytes.Buffer
		code := run(tt.args, &out, &errb)
		msg := errb.String()
		if code != 2 || out.Len() != 0 || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tt.want) ||
			!strings.HasSuffix(msg, " (see vigil-epilog --help)\n") || strings.Contains(msg, ".toml") {
			t.Errorf("%v: exit %d, want 2 and one line with %q and a pointer to --help; stderr:\n%s", tt.args, code, tt.want, msg)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb); code != 0 || errb.Len() != 0 || !strings.Contains(out.String(), "vigil-epilog - clean up") {
		t.Errorf("--help: exit %d, stderr %q", code, errb.String())
	}
}
