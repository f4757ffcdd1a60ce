package spanktest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// selftest builds the plugin's C with its VIGIL_SPANK_SELFTEST driver.
func selftest(t *testing.T) string {
	t.Helper()
	return buildSelftest(t, t.TempDir())
}

// buildSelftest builds the driver in dir.
func buildSelftest(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatalf("gcc not found: the SPANK plugin needs it (apt-get install gcc)")
	}
	bin := filepath.Join(dir, "selftest")
	src := filepath.Join(spankDir(t), "vigil_spank.c")
	if out, err := exec.Command("gcc", "-Wall", "-Wextra", "-Werror", "-DVIGIL_SPANK_SELFTEST", "-o", bin, src).CombinedOutput(); err != nil {
		if strings.Contains(string(out), "spank.h") {
			t.Fatalf("<slurm/spank.h> not found (apt-get install libslurm-dev):\n%s", out)
		}
		t.Fatalf("building the selftest driver: %v\n%s", err, out)
	}
	return bin
}

// handoffVars runs the driver's reader on path and returns the variables
// the watcher would get, in order.
func handoffVars(t *testing.T, bin, path string) ([]string, string) {
	t.Helper()
	cmd := exec.Command(bin, "handoff-read", path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("handoff-read: %v\n%s", err, stderr.String())
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), stderr.String()
}

// longDir is a 5000-byte work directory (the user's --chdir) with
// KEY=VALUE-looking text where a 2048-byte line buffer would cut it.
func longDir() string {
	var b strings.Builder
	b.WriteString("/home/u/")
	for b.Len() < 2040 {
		b.WriteString("d/")
	}
	b.WriteString("VIGIL_HANG_ACTION=requeue/")
	for b.Len() < 4090 {
		b.WriteString("e/")
	}
	b.WriteString("LD_PRELOAD=/tmp/x.so/X=Y/")
	for b.Len() < 5000 {
		b.WriteString("f")
	}
	return b.String()
}

// TestHandoffLongValue writes the prolog's hand-off with a 5000-byte work
// directory that holds X=Y-looking text and reads it back: the value
// arrives whole, and no part of it becomes a variable.
func TestHandoffLongValue(t *testing.T) {
	bin := selftest(t)
	dir := longDir()
	if len(dir) != 5000 {
		t.Fatalf("test value of %d bytes", len(dir))
	}
	path := filepath.Join(t.TempDir(), "job7-n1.env")
	w := exec.Command(bin, "handoff-write", path)
	w.Env = []string{"SLURM_JOB_WORK_DIR=" + dir, "SPANK_VIGIL_HANG_ACTION=notify", "SLURM_JOB_USER=u"}
	if out, err := w.CombinedOutput(); err != nil {
		t.Fatalf("handoff-write: %v\n%s", err, out)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("hand-off mode %v, want 0600", st.Mode().Perm())
	}
	got, _ := handoffVars(t, bin, path)
	want := []string{"VIGIL_HANG_ACTION=notify", "SLURM_JOB_USER=u", "SLURM_JOB_WORK_DIR=" + dir}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the watcher would get %d variables:\n%.300q\nwant %d:\n%.300q", len(got), got, len(want), want)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the reader left the hand-off file: %v", err)
	}
}

// TestHandoffRefusesWhole gives the writer a value over its limit, and the
// reader a file with an over-long line and a variable the hand-off does not
// carry (as a file written by anything but the plugin could hold): each is
// left out whole, with a line that says so.
func TestHandoffRefusesWhole(t *testing.T) {
	bin := selftest(t)
	path := filepath.Join(t.TempDir(), "job8-n1.env")
	huge := "/w/" + strings.Repeat("x", 40000) + "/VIGIL_HANG_ACTION=cancel"
	w := exec.Command(bin, "handoff-write", path)
	w.Env = []string{"SLURM_JOB_WORK_DIR=" + huge, "SLURM_JOB_USER=u"}
	out, err := w.CombinedOutput()
	if err != nil {
		t.Fatalf("handoff-write: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "SLURM_JOB_WORK_DIR (40028 bytes) not handed to the watcher") {
		t.Errorf("the writer does not say it left the value out: %q", out)
	}
	got, _ := handoffVars(t, bin, path)
	if strings.Join(got, "\n") != "SLURM_JOB_USER=u" {
		t.Fatalf("the watcher would get %.200q, want only SLURM_JOB_USER=u", got)
	}

	crafted := "SLURM_JOB_USER=u\n" + "SLURM_JOB_WORK_DIR=" + huge + "\nLD_PRELOAD=/tmp/x.so\nVIGIL_NOTIFY=mail\n"
	if err := os.WriteFile(path, []byte(crafted), 0o600); err != nil {
		t.Fatal(err)
	}
	got, stderr := handoffVars(t, bin, path)
	if strings.Join(got, "\n") != "SLURM_JOB_USER=u\nVIGIL_NOTIFY=mail" {
		t.Fatalf("the watcher would get %.200q", got)
	}
	for _, want := range []string{"a line of 40048 bytes skipped", "unexpected variable skipped"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the reader does not say %q: %q", want, stderr)
		}
	}
}
