package spanktest

import (
	"fmt"
	"os"
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
//
// With VIGIL_INSTALLED=deb (or rpm) it tests the vigil package installed on
// this machine instead (.ci/packages installs make deb's): the files that
// dpkg -L vigil lists, the plugin in Slurm's own plugin directory, and the
// installed plugstack.conf line, given to the cluster with config= naming
// the test's file so that /etc/vigil stays as it is.
func TestE2EInstallPrefix(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	dir := sharedDir(t)
	var in installation
	switch pm := os.Getenv("VIGIL_INSTALLED"); pm {
	case "":
		in = makeInstall(t, dir)
	case "deb", "rpm":
		in = installedPackage(t, pm, dir)
	default:
		t.Fatalf("VIGIL_INSTALLED=%s: want deb or rpm (the installed package), or unset (make install)", pm)
	}
	line, err := os.ReadFile(in.snippet)
	if err != nil {
		t.Fatalf("no plugstack.conf line: %v", err)
	}
	want := fmt.Sprintf("required %s config=%s prolog=%s watcher=%s watch=auto\n", in.plugin, in.config, in.prolog, in.watcher)
	if string(line) != want {
		t.Fatalf("%s:\n%s\nwant\n%s", in.snippet, line, want)
	}
	in.checkPrograms(t)
	// The line the cluster runs, with config= at the test's file.
	active := strings.Replace(want, "config="+in.config+" ", "config="+in.testConfig+" ", 1)
	base := in.plugstack(active)
	if err := os.WriteFile(in.testConfig, []byte("[policy]\nchecks = [\"disk\", \"xid\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prolog, watcher := in.prolog, in.watcher

	// After make install, plugstack.conf as Debian ships it: an include of
	// plugstack.conf.d; for a package, its line with the test's config=.
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, PrologFlags: "Alloc,Contain", PlugStack: base})
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
		if !waitFor(20*time.Second, func() bool { ws = watchers(watcher, id, c.Nodes); return len(ws) == 1 }) {
			t.Fatalf("watchers of job %s from %s: %+v, want 1\n%s", id, watcher, ws, c.Dump(id))
		}
		c.WaitJob(t, id, 30*time.Second, "COMPLETED")
	})

	t.Run("an unknown argument on a required line refuses jobs", func(t *testing.T) {
		defer os.WriteFile(c.PlugStackConf, []byte(base), 0o644)
		bad := strings.Replace(active, "watch=auto", "watch=sometimes", 1)
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
		broken := strings.NewReplacer("prolog="+prolog, "prolog="+absentProlog, "watcher="+watcher, "watcher="+absentWatcher).Replace(active)
		if err := os.WriteFile(c.PlugStackConf, []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(c.PlugStackConf, []byte(base), 0o644)
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
