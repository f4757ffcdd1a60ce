package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestModelCheckWithoutPath runs the model check as slurmd runs the
// Prolog, with an empty environment (env -i: no PATH): the shipped
// python = "python3" must still find Debian's /usr/bin/python3 (which has
// python3-torch), train, and say which interpreter it used; and
// --check-config must say which one it would use.
func TestModelCheckWithoutPath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds vigil-prolog and trains a model")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Fatalf("/usr/bin/python3: %v (apt-get install python3-torch; make deps does)", err)
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	dir := t.TempDir()
	conf := filepath.Join(dir, "vigil.toml")
	body := "[prolog]\nchecks = [\"model-resnet\"]\n" +
		"run_dir = \"" + dir + "/run\"\nreport_dir = \"" + dir + "/reports\"\ntextfile_dir = \"" + dir + "/prom\"\n" +
		"[checks.model-resnet]\nsteps = 20\nbatch = 8\n"
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("env", "-i", bin, "--check-config", "--config", conf).CombinedOutput()
	if err != nil {
		t.Fatalf("env -i vigil-prolog --check-config: %v\n%s", err, out)
	}
	if want := `# [checks.model-resnet] python "python3": would run /usr/bin/python3`; !strings.Contains(string(out), want) {
		t.Errorf("--check-config without PATH does not say %q:\n%s", want, out)
	}
	out, err = exec.Command("env", "-i", bin, "--dry-run", "--config", conf, "--checks", "model-resnet").CombinedOutput()
	if err != nil {
		t.Fatalf("env -i vigil-prolog --dry-run --checks model-resnet: %v\n%s", err, out)
	}
	s := string(out)
	if strings.Contains(s, "ModelNoPyTorch") || !strings.Contains(s, "verdict:      pass (1 passed") {
		t.Errorf("the model check without PATH did not pass:\n%s", s)
	}
	if !strings.Contains(s, "(python /usr/bin/python3, PyTorch ") {
		t.Errorf("the model check's message does not name the interpreter it used:\n%s", s)
	}
}
