package spanktest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// installation is where an install put vigil's files: make install into a
// prefix, or an installed package.
type installation struct {
	prolog, epilog, watcher, baseline, health string
	plugin                                    string // vigil_spank.so
	snippet                                   string // the plugstack.conf.d file with the plugin's line
	example                                   string // vigil.toml.example
	config                                    string // the line's config=
	// testConfig is the config the test writes and the cluster's line
	// names: config itself in make install's throwaway prefix, a file of the
	// test's own for an installed package.
	testConfig string
	// include is the plugstack.conf.d directory the cluster's plugstack.conf
	// includes; "" gives the cluster the line itself.
	include string
}

// plugstack is the cluster's plugstack.conf, for the line it runs.
func (in installation) plugstack(line string) string {
	if in.include != "" {
		return "include " + in.include + "/*.conf\n"
	}
	return line
}

// checkPrograms: the programs are there, vigil-health is vigil-prolog, and
// both run on the example config (--check-config, --dry-run).
func (in installation) checkPrograms(t *testing.T) {
	t.Helper()
	for _, f := range []string{in.prolog, in.epilog, in.watcher, in.baseline, in.plugin, in.example} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}
	if l, err := os.Readlink(in.health); err != nil || l != "vigil-prolog" {
		t.Errorf("%s: link %q, %v; want a link to vigil-prolog", in.health, l, err)
	}
	for _, args := range [][]string{
		{in.prolog, "--check-config", "--config", in.example},
		{in.prolog, "--dry-run", "--config", in.example},
		{in.health, "--dry-run", "--config", in.example},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// makeInstall runs `make install` into a prefix under dir, checks what it
// printed, and returns where it put things.
func makeInstall(t *testing.T, dir string) installation {
	t.Helper()
	for _, tool := range []string{"make", "gcc", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: make install needs it (apt-get install make gcc; Go from go.dev)", tool)
		}
	}
	if _, err := os.Stat("/usr/include/slurm/spank.h"); err != nil {
		t.Fatalf("/usr/include/slurm/spank.h not found: make install needs it for the plugin (apt-get install libslurm-dev)")
	}
	prefix := filepath.Join(dir, "opt", "vigil")
	etc := filepath.Join(dir, "etc")
	cmd := exec.Command("make", "install", "PREFIX="+prefix, "SYSCONFDIR="+etc, "DESTDIR=")
	cmd.Dir = filepath.Dir(filepath.Dir(spankDir(t)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	bin := filepath.Join(prefix, "bin")
	cfg := filepath.Join(etc, "vigil", "vigil.toml")
	in := installation{
		prolog: filepath.Join(bin, "vigil-prolog"), epilog: filepath.Join(bin, "vigil-epilog"),
		watcher: filepath.Join(bin, "vigil-watch"), baseline: filepath.Join(bin, "vigil-baseline"),
		health:  filepath.Join(bin, "vigil-health"),
		plugin:  filepath.Join(prefix, "lib", "vigil", "vigil_spank.so"),
		snippet: filepath.Join(etc, "slurm", "plugstack.conf.d", "vigil.conf"),
		example: cfg + ".example", config: cfg, testConfig: cfg,
	}
	in.include = filepath.Dir(in.snippet)
	want := fmt.Sprintf("required %s config=%s prolog=%s watcher=%s watch=auto", in.plugin, cfg, in.prolog, in.watcher)
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "include "+in.include+"/*.conf") {
		t.Errorf("make install did not print the line and the include to add:\n%s", out)
	}
	for _, l := range readmeSlurmConf(t) {
		if l = strings.ReplaceAll(l, "/opt/vigil", prefix); !strings.Contains(string(out), "    "+l+"\n") {
			t.Errorf("the README says make install prints %s; it printed:\n%s", l, out)
		}
	}
	return in
}

// installedPackage returns where the vigil package installed on this
// machine (pm: deb or rpm) put things, from the package manager's own
// list, and checks the paths the packages promise (docs/operations.md).
func installedPackage(t *testing.T, pm, dir string) installation {
	t.Helper()
	list, conffiles := []string{"dpkg", "-L", "vigil"}, []string{"dpkg-query", "-W", "-f", "${Conffiles}\n", "vigil"}
	if pm == "rpm" {
		list, conffiles = []string{"rpm", "-ql", "vigil"}, []string{"rpm", "-qc", "vigil"}
	}
	out, err := exec.Command(list[0], list[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("VIGIL_INSTALLED=%s, but %s: %v\n%s(install it first: apt-get install ./dist/vigil_*.deb, as .ci/packages does)", pm, strings.Join(list, " "), err, out)
	}
	files := strings.Fields(string(out))
	in := installation{
		prolog: "/usr/bin/vigil-prolog", epilog: "/usr/bin/vigil-epilog", watcher: "/usr/bin/vigil-watch",
		baseline: "/usr/bin/vigil-baseline", health: "/usr/bin/vigil-health",
		snippet: "/etc/slurm/plugstack.conf.d/vigil.conf", example: "/etc/vigil/vigil.toml.example",
		config: "/etc/vigil/vigil.toml", testConfig: filepath.Join(dir, "vigil.toml"),
	}
	for _, f := range files {
		if strings.HasSuffix(f, "/vigil_spank.so") {
			in.plugin = f
		}
	}
	for _, f := range []string{in.prolog, in.epilog, in.watcher, in.baseline, in.health, in.snippet, in.example, in.plugin} {
		if !slices.Contains(files, f) {
			t.Errorf("the package does not install %q:\n%s", f, out)
		}
	}
	if slices.Contains(files, in.config) {
		t.Errorf("the package owns %s, the admin's file", in.config)
	}
	// Slurm's own plugins are beside it.
	if _, err := os.Stat(filepath.Join(filepath.Dir(in.plugin), "proctrack_cgroup.so")); err != nil {
		t.Errorf("%s is not in Slurm's plugin directory: %v", in.plugin, err)
	}
	cf, err := exec.Command(conffiles[0], conffiles[1:]...).CombinedOutput()
	for _, f := range []string{in.snippet, in.example} {
		if err != nil || !strings.Contains(string(cf), f) {
			t.Errorf("%s is not a config file of the package: %s: %v\n%s", f, strings.Join(conffiles, " "), err, cf)
		}
	}
	if pm == "deb" {
		if b, err := os.ReadFile("/etc/slurm/plugstack.conf"); err != nil || !strings.Contains(string(b), "include /etc/slurm/plugstack.conf.d/*.conf") {
			t.Errorf("Debian's /etc/slurm/plugstack.conf does not include plugstack.conf.d (%v):\n%s", err, b)
		}
	}
	return in
}
