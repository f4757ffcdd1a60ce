package spanktest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeSlurmConf returns the slurm.conf lines that the README's install
// section says make install prints (the code block after "It prints the
// lines for `slurm.conf`"), for PREFIX /opt/vigil.
func readmeSlurmConf(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(spankDir(t))), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "lines for `slurm.conf`")
	if i < 0 {
		t.Fatal("README: no install section that shows the slurm.conf lines")
	}
	s = s[i:]
	start := strings.Index(s, "```\n")
	end := strings.Index(s[start+4:], "```")
	if start < 0 || end < 0 {
		t.Fatal("README: no code block after the slurm.conf sentence")
	}
	return strings.Fields(s[start+4 : start+4+end])
}

// TestInstallPrintsWhatTheREADMESays: every slurm.conf line of the
// README's install section is among what make install prints, with the
// prefix's paths (make -n: nothing is built or installed).
func TestInstallPrintsWhatTheREADMESays(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make not found (apt-get install make)")
	}
	cmd := exec.Command("make", "-n", "install", "PREFIX=/opt/vigil", "DESTDIR=/nonexistent")
	cmd.Dir = filepath.Dir(filepath.Dir(spankDir(t)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n install: %v\n%s", err, out)
	}
	lines := readmeSlurmConf(t)
	if len(lines) < 4 {
		t.Fatalf("README shows %q", lines)
	}
	for _, l := range lines {
		if !strings.Contains(string(out), `echo "    `+l+`"`) {
			t.Errorf("README says make install prints %s; it does not:\n%s", l, out)
		}
	}
}

// TestPrologDocFlags: the slurm.conf block of docs/prolog.md sets the
// PrologFlags that make install prints (Alloc,Contain: watch=auto, the
// plugstack.conf line make install writes, needs the extern step).
func TestPrologDocFlags(t *testing.T) {
	root := filepath.Dir(filepath.Dir(spankDir(t)))
	b, err := os.ReadFile(filepath.Join(root, "docs", "prolog.md"))
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "PrologFlags=") {
			flags = append(flags, l)
		}
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), `@echo "    PrologFlags=Alloc,Contain"`) || len(flags) == 0 {
		t.Fatalf("Makefile or docs/prolog.md lost its PrologFlags line: %q", flags)
	}
	for _, l := range flags {
		if l != "PrologFlags=Alloc,Contain" {
			t.Errorf("docs/prolog.md sets %s; make install prints PrologFlags=Alloc,Contain (watch=auto needs Contain)", l)
		}
	}
}
