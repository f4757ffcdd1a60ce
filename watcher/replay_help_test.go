package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
)

// TestHelpSaysWhenTheFirstVerdictComes checks that --help states the grace
// and window rule with the shipped defaults, so that it cannot drift from
// them.
func TestHelpSaysWhenTheFirstVerdictComes(t *testing.T) {
	def := watchcfg.DefaultHang()
	var stdout bytes.Buffer
	if code := realMain(context.Background(), []string{"--help"}, env(), &stdout, &bytes.Buffer{}); code != exitOK {
		t.Fatalf("--help exit %d", code)
	}
	help := strings.Join(strings.Fields(stdout.String()), " ") // unwrap the lines
	for _, want := range []string{
		"a job that stops making progress is reported one window after its last progress, however long it has run",
		"no verdict comes before the job is --grace old",
		"The first verdict is possible at the longer of grace and window after the watcher starts",
		fmt.Sprintf("(defaults: grace %s, window %s, so %d minutes;", hangfmt.ShortDuration(def.Grace), hangfmt.ShortDuration(def.Window), int(def.FirstVerdict().Minutes())),
		"-grace duration start-up grace: how old the job must be before any verdict; it does not add to the window",
		fmt.Sprintf("(default %v)", def.Grace),
		"A job is reported one window after its last progress (default " + def.Window.String() + ")",
		"vigil-watch replay [OPTIONS] FILE... (- for standard input)",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	stdout.Reset()
	if code := realMain(context.Background(), []string{"replay", "--help"}, env(), &stdout, &bytes.Buffer{}); code != exitOK {
		t.Fatalf("replay --help exit %d", code)
	}
	help = strings.Join(strings.Fields(stdout.String()), " ")
	for _, want := range []string{
		"vigil-watch replay [OPTIONS] FILE...",
		"- reads standard input",
		"several files give the same events as one file of their sorted lines",
		"No verdict comes before a host's samples of a job span the longer of --grace and --window",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("replay --help lacks %q", want)
		}
	}
}

func TestReplaySeveralFilesAndStdin(t *testing.T) {
	a := flatTrace(t, "gpu01", 60, time.Minute, 20*time.Minute)
	b := flatTrace(t, "gpu02", 60, time.Minute, 20*time.Minute)
	ab := filepath.Join(t.TempDir(), "merged.jsonl")
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	var merged []string
	la, lb := strings.SplitAfter(string(da), "\n"), strings.SplitAfter(string(db), "\n")
	for i := range la {
		merged = append(merged, la[i], lb[i]) // same times: gpu01 before gpu02
	}
	if err := os.WriteFile(ab, []byte(strings.Join(merged, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	replay := func(in []byte, args ...string) (string, string) {
		t.Helper()
		old := stdin
		stdin = bytes.NewReader(in)
		defer func() { stdin = old }()
		var stdout, stderr bytes.Buffer
		if code := realMain(context.Background(), append([]string{"replay", "--window", "10m", "--period", "1m"}, args...), env(), &stdout, &stderr); code != exitOK {
			t.Fatalf("replay %v: exit %d: %s", args, code, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	want, _ := replay(nil, ab)
	if strings.Count(want, `"event":"hung"`) != 2 {
		t.Fatalf("merged: want two hung events:\n%s", want)
	}
	if got, _ := replay(nil, a, b); got != want {
		t.Errorf("two files: events differ from the merged file's:\n got:\n%s\nwant:\n%s", got, want)
	}
	if got, _ := replay(db, a, "-"); got != want {
		t.Errorf("a file and stdin: events differ from the merged file's:\n got:\n%s\nwant:\n%s", got, want)
	}

	// Too short for any verdict: 59 minutes of samples, a 1h window.
	out, msg := replay(nil, "--window", "1h", a)
	if out != "" || msg != "vigil-watch: replay: trace covers 59m; first verdict needs 1h of one host's samples (the longer of grace 10m and window 1h): no window verdict was possible\n" {
		t.Errorf("too short: stdout %q, stderr %q", out, msg)
	}

	var stderr bytes.Buffer
	if code := realMain(context.Background(), []string{"replay", "-", "-"}, env(), &bytes.Buffer{}, &stderr); code != exitError || !strings.Contains(stderr.String(), "twice") {
		t.Errorf("stdin twice: exit %d, %q", code, stderr.String())
	}
}
