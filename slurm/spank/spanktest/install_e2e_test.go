package spanktest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestE2EInstallPrefix installs vigil the way the README says, with
// `make install` into a prefix other than /usr/local, includes the
// plugstack.conf line that make install wrote, and checks that sbatch runs
// the policy check and watch=auto starts vigil-watch from that prefix. Then
// it breaks the line's paths and checks that sbatch says so at error level.
func TestE2EInstallPrefix(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	for _, tool := range []string{"make", "gcc", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: make install needs it (apt-get install make gcc; Go from go.dev)", tool)
		}
	}
	if _, err := os.Stat("/usr/include/slurm/spank.h"); err != nil {
		t.Fatalf("/usr/include/slurm/spank.h not found: make install needs it for the plugin (apt-get install libslurm-dev)")
	}
	dir := sharedDir(t)
	prefix := filepath.Join(dir, "opt", "vigil")
	etc := filepath.Join(dir, "etc")
	root := filepath.Dir(filepath.Dir(spankDir(t)))
	cmd := exec.Command("make", "install", "PREFIX="+prefix, "SYSCONFDIR="+etc, "DESTDIR=")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	conf := filepath.Join(etc, "slurm", "plugstack.conf.d", "vigil.conf")
	line, err := os.ReadFile(conf)
	if err != nil {
		t.Fatalf("make install wrote no plugstack.conf line: %v\n%s", err, out)
	}
	prolog := filepath.Join(prefix, "bin", "vigil-prolog")
	watcher := filepath.Join(prefix, "bin", "vigil-watch")
	cfg := filepath.Join(etc, "vigil", "vigil.toml")
	want := fmt.Sprintf("required %s config=%s prolog=%s watcher=%s watch=auto\n",
		filepath.Join(prefix, "lib", "vigil", "vigil_spank.so"), cfg, prolog, watcher)
	if string(line) != want {
		t.Fatalf("%s:\n%s\nwant\n%s", conf, line, want)
	}
	if !strings.Contains(string(out), strings.TrimSpace(want)) || !strings.Contains(string(out), "include "+filepath.Dir(conf)+"/*.conf") {
		t.Errorf("make install did not print the line and the include to add:\n%s", out)
	}
	for _, l := range readmeSlurmConf(t) {
		if l = strings.ReplaceAll(l, "/opt/vigil", prefix); !strings.Contains(string(out), "    "+l+"\n") {
			t.Errorf("the README says make install prints %s; it printed:\n%s", l, out)
		}
	}
	for _, f := range []string{prolog, watcher, filepath.Join(prefix, "bin", "vigil-epilog"), filepath.Join(prefix, "bin", "vigil-health"), cfg + ".example"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("make install: %v", err)
		}
	}
	if err := os.WriteFile(cfg, []byte("[policy]\nchecks = [\"disk\", \"xid\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// plugstack.conf as Debian ships it: an include of plugstack.conf.d.
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, PrologFlags: "Alloc,Contain",
		PlugStack: "include " + filepath.Dir(conf) + "/*.conf\n"})
	c.Restart(t) // slurmd loads the plugin only when it starts

	t.Run("sbatch checks the policy", func(t *testing.T) {
		out, err := c.Command(t, "sbatch", "--vigil-checks=disk,nosuch", "--wrap=true")
		if err == nil {
			t.Fatalf("sbatch --vigil-checks=disk,nosuch was accepted: %s", out)
		}
		if want := `vigil: --vigil-checks=disk,nosuch: unknown check "nosuch"`; !strings.Contains(out, want) {
			t.Fatalf("sbatch said:\n%s\nwant %q", out, want)
		}
		out, err = c.Command(t, "sbatch", "--vigil-checks=gpu-count", "--wrap=true")
		if err == nil || !strings.Contains(out, "gpu-count") {
			t.Fatalf("sbatch --vigil-checks=gpu-count (not in [policy] checks): err %v, said:\n%s", err, out)
		}
	})

	t.Run("watch=auto starts the watcher from the prefix", func(t *testing.T) {
		id := c.Sbatch(t, "sleep 6\n")
		var ws []watcherProc
		if !waitFor(20*time.Second, func() bool { ws = watchers(watcher, id); return len(ws) == 1 }) {
			t.Fatalf("watchers of job %s from %s: %+v, want 1\n%s", id, watcher, ws, c.Dump(id))
		}
		c.WaitJob(t, id, 30*time.Second, "COMPLETED")
	})

	t.Run("an unknown argument on a required line refuses jobs", func(t *testing.T) {
		defer os.WriteFile(c.PlugStackConf, []byte("include "+filepath.Dir(conf)+"/*.conf\n"), 0o644)
		bad := strings.Replace(want, "watch=auto", "watch=sometimes", 1)
		msg := `vigil: plugstack.conf: unknown argument "watch=sometimes" (known: config= prolog= watcher= watch=off|auto|config`
		for _, client := range [][]string{{"sbatch", "--wrap=true"}, {"srun", "true"}, {"salloc", "true"}} {
			if err := os.WriteFile(c.PlugStackConf, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := c.Command(t, client[0], client[1:]...)
			if err == nil {
				t.Errorf("%s ran a job under a required plugin with watch=sometimes:\n%s", client[0], out)
			}
			if !strings.Contains(out, msg) {
				t.Errorf("%s said:\n%s\nwant %q", client[0], out, msg)
			}
		}
		// optional: the same error, and the job runs (the argument at its default).
		if err := os.WriteFile(c.PlugStackConf, []byte(strings.Replace(bad, "required ", "optional ", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := c.Command(t, "sbatch", "--wrap=true")
		if err != nil || !strings.Contains(out, msg) {
			t.Errorf("sbatch under an optional plugin with watch=sometimes: err %v, said:\n%s", err, out)
		}
	})

	t.Run("missing binaries are errors at sbatch", func(t *testing.T) {
		absentProlog := filepath.Join(dir, "nowhere", "vigil-prolog")
		absentWatcher := filepath.Join(dir, "nowhere", "vigil-watch")
		broken := strings.NewReplacer("prolog="+prolog, "prolog="+absentProlog, "watcher="+watcher, "watcher="+absentWatcher).Replace(want)
		if err := os.WriteFile(c.PlugStackConf, []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(c.PlugStackConf, []byte("include "+filepath.Dir(conf)+"/*.conf\n"), 0o644)
		out, err := c.Command(t, "sbatch", "--vigil-checks=disk", "--wrap=true")
		if err != nil {
			t.Fatalf("sbatch refused the job: %v\n%s", err, out)
		}
		for _, want := range []string{
			"sbatch: error: vigil: prolog=" + absentProlog + ": No such file or directory in plugstack.conf: the policy is not checked on this host",
			"sbatch: error: vigil: watcher=" + absentWatcher + " in plugstack.conf: No such file or directory: watch=auto starts no vigil-watch",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("sbatch (without -v) said:\n%s\nwant %q", out, want)
			}
		}
	})
}
