package slurmtest

// A second Slurm: the daemons and clients of a Debian 13 (trixie) root
// built by .ci/slurm-root (Slurm 24.11), run with the host's kernel, cgroups,
// /tmp and users. Every command enters the root through a small script in
// the cluster's Dir/rootbin: a private mount namespace (unshare -m, so no
// mount outlives the process or leaks to the host) with /proc, /sys, /dev,
// /tmp, the module's source tree and the host's passwd, group and hosts
// bound in, then chroot. All are execs, so a daemon's PID is its own.
//
// Clients (scontrol, squeue, sbatch...) run often: a test polling a job's
// state, vigil's own scontrol calls. Setting up a namespace for each costs
// about 0.1 s of CPU (eight mounts, a chroot, two shells), five times what
// the host's scontrol costs, and on a 2-core machine that starved the tests
// beside them. So one process per cluster, the holder, sets the namespace up
// once and sleeps in it; a client's wrapper enters it with nsenter (about
// 0.026 s). The daemons keep a namespace of their own each.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// DefaultRoot is where .ci/slurm-root builds the Debian 13 root with Slurm
// 24.11; VIGIL_SLURM_ROOT overrides it for the tests and the script.
const DefaultRoot = "/var/lib/vigil-test/trixie"

// rootBuildCmd is the command that builds the root, for failure messages.
const rootBuildCmd = ".ci/slurm-root (make slurm-root)"

// Flavour is one Slurm the e2e tests run against.
type Flavour struct {
	// Name is the subtest's name: "host" (Debian 12's Slurm 22.05 from the
	// host's packages) or "24.11" (Debian 13's, from Root).
	Name string
	// Root is the Debian 13 root's path, "" for the host's Slurm. Put it in
	// Options.Root.
	Root string
	// Version is the start of the Slurm version this flavour must run
	// ("24.11"), or "" for the host's, whatever it is.
	Version string
}

// Include is the directory holding <slurm/spank.h> of this Slurm (for
// building a SPANK plugin against it: SLURM_INCLUDE of slurm/spank/Makefile).
func (f Flavour) Include() string { return filepath.Join(f.Root, "/usr/include") }

// SlurmRoot is the path of the Debian 13 root: VIGIL_SLURM_ROOT, or DefaultRoot.
func SlurmRoot() string {
	if r := os.Getenv("VIGIL_SLURM_ROOT"); r != "" {
		return r
	}
	return DefaultRoot
}

// Flavours are the Slurms the version-dependent e2e tests run against: the
// host's and Slurm 24.11 from SlurmRoot. Neither is optional: a missing
// root fails the test that starts its cluster, naming the command that
// builds it.
func Flavours() []Flavour {
	return []Flavour{{Name: "host"}, {Name: "24.11", Root: SlurmRoot(), Version: "24.11"}}
}

// ForEachSlurm runs body as one subtest per Flavour, side by side: their
// clusters share no port, node name, address or cgroup
// (TestParallelClusters), and an e2e test mostly waits on Slurm, so the
// two flavours cost little more time than one. A body must keep to its
// own cluster: a fault that touches the whole machine (a qdisc on lo)
// belongs in a test of one flavour.
func ForEachSlurm(t *testing.T, body func(t *testing.T, f Flavour)) {
	t.Helper()
	for _, f := range Flavours() {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			body(t, f)
		})
	}
}

// ForEachSlurmInTurn runs body as one subtest per Flavour, one after the
// other: for a test that times its own phases against a bound (a healthy
// cross-node phase well under its join deadline), which the other
// flavour's cluster beside it would eat into on a 2-core machine.
func ForEachSlurmInTurn(t *testing.T, body func(t *testing.T, f Flavour)) {
	t.Helper()
	for _, f := range Flavours() {
		t.Run(f.Name, func(t *testing.T) { body(t, f) })
	}
}

// rootPackages are the root's Debian packages whose programs the cluster runs.
var rootPackages = []string{"munge", "slurmctld", "slurmd", "slurm-client"}

// checkRoot fails the test, naming the command that builds the root, when
// root does not hold the binaries the harness needs.
func checkRoot(t testing.TB, root string) {
	t.Helper()
	var missing []string
	for _, n := range needed {
		if rootPath(root, n.bin) == "" {
			missing = append(missing, n.bin)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("slurmtest: the Slurm 24.11 root %s lacks %s; build it (as root, a few minutes) with: %s, or point VIGIL_SLURM_ROOT at one",
			root, strings.Join(missing, ", "), rootBuildCmd)
	}
	if os.Geteuid() != 0 {
		t.Fatalf("slurmtest: a Slurm cluster from a root must be started as root (chroot, mounts); uid is %d", os.Geteuid())
	}
}

// rootPath returns the path, inside root, of the executable name found in
// searchPath's directories there, or "" when there is none.
func rootPath(root, name string) string {
	for _, d := range filepath.SplitList(searchPath) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(resolveIn(root, p)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// resolveIn follows the symbolic links of path as if root were "/" (the
// packages' alternatives links are absolute), and returns the host path.
func resolveIn(root, path string) string {
	for i := 0; i < 16; i++ {
		host := filepath.Join(root, path)
		target, err := os.Readlink(host)
		if err != nil {
			return host
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return filepath.Join(root, path)
}

// rootPrograms lists the programs of the root's rootPackages (those in
// their dpkg file lists under a bin or sbin directory, and the harness's
// own, which may be alternatives links) by name, with their paths inside the root.
func rootPrograms(root string) (map[string]string, error) {
	names := map[string]bool{}
	for _, n := range needed {
		names[n.bin] = true
	}
	for _, p := range rootPackages {
		lines := readLines(filepath.Join(root, "var/lib/dpkg/info", p+".list"))
		if len(lines) == 0 {
			return nil, fmt.Errorf("package %s is not installed in %s; rebuild it with %s", p, root, rootBuildCmd)
		}
		for _, l := range lines {
			if d := filepath.Dir(l); strings.HasSuffix(d, "/bin") || strings.HasSuffix(d, "/sbin") {
				names[filepath.Base(l)] = true
			}
		}
	}
	progs := map[string]string{}
	for n := range names {
		if p := rootPath(root, n); p != "" {
			progs[n] = p
		}
	}
	return progs, nil
}

// enterScript is Dir/rootbin/enter, run by unshare in a new mount
// namespace: it binds the host's parts into the root and execs chroot,
// keeping the working directory. $1 is the program's path in the root.
const enterScript = `#!/bin/sh
# Runs a program of the Slurm root %[1]s in this (private) mount namespace.
set -e
R=%[1]s
[ -e "$R%[3]s" ] || echo "a root for vigil's tests (slurm/slurmtest)" > "$R%[3]s"
for d in /proc /sys /dev /tmp; do mount --rbind "$d" "$R$d"; done
for f in /etc/passwd /etc/group /etc/hosts; do [ -e "$R$f" ] || : > "$R$f"; mount --bind "$f" "$R$f"; done
%[2]s
exec /usr/sbin/chroot "$R" /bin/sh -c 'cd "$1" 2>/dev/null || cd /; shift; exec "$@"' sh "$PWD" "$@"
`

// rootMarker is a file the enter script makes in the root: a wrapper that
// finds it is already inside the root (a job's srun finds the wrappers on
// the PATH it inherits from sbatch) and runs the program directly.
const rootMarker = "/etc/vigil-slurm-root"

// wrapperScript runs one program of the root: directly when inside it,
// else through enter in a new private mount namespace.
const wrapperScript = `#!/bin/sh
[ -e %[1]s ] && exec %[2]s "$@"
exec /usr/bin/unshare --mount --propagation private /bin/sh %[3]s %[2]s "$@"
`

// clientScript runs one client program of the root: directly when inside
// it, else in the holder's namespace and root while the holder (its PID in
// %[4]s) runs there, else as wrapperScript does.
const clientScript = `#!/bin/sh
[ -e %[1]s ] && exec %[2]s "$@"
{ read H < %[4]s; } 2>/dev/null && [ -e "/proc/$H/root"%[1]s ] &&
	exec /usr/bin/nsenter -t "$H" -m -r -w /bin/sh -c 'cd "$1" 2>/dev/null || cd /; shift; exec "$@"' sh "$PWD" %[2]s "$@"
exec /usr/bin/unshare --mount --propagation private /bin/sh %[3]s %[2]s "$@"
`

// rootDaemons are the root's programs that run as daemons: each keeps a
// mount namespace of its own, as on a real node.
var rootDaemons = map[string]bool{"munged": true, "slurmctld": true, "slurmd": true, "slurmstepd": true,
	"slurmdbd": true, "slurmrestd": true, "sackd": true}

// holderPidFile in a cluster's Dir holds the holder's PID.
const holderPidFile = "run/root-holder.pid"

// writeRootBins writes Dir/rootbin: the enter script and one wrapper per
// program of the root's Slurm and munge packages, puts it first on Env's
// PATH, and returns the paths of the binaries the harness starts.
func (c *Cluster) writeRootBins() (map[string]string, error) {
	root := c.opts.Root
	progs, err := rootPrograms(root)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(c.Dir, "rootbin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	enter := filepath.Join(dir, "enter")
	if err := os.WriteFile(enter, []byte(fmt.Sprintf(enterScript, shellQuote(root), c.bindSource(root), rootMarker)), 0o755); err != nil {
		return nil, err
	}
	pidFile := shellQuote(filepath.Join(c.Dir, holderPidFile))
	for name, p := range progs {
		script := clientScript
		if rootDaemons[name] {
			script = wrapperScript
		}
		w := fmt.Sprintf(script, rootMarker, shellQuote(p), shellQuote(enter), pidFile)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(w), 0o755); err != nil {
			return nil, err
		}
	}
	c.rootBin = dir
	c.Env = []string{"SLURM_CONF=" + c.Conf, "PATH=" + dir + ":" + clientPath()}
	bins := map[string]string{}
	for _, n := range needed {
		bins[n.bin] = filepath.Join(dir, n.bin)
	}
	return bins, nil
}

// startHolder starts the holder: the enter script in a new mount namespace,
// ending in a shell that reads its standard input, a pipe whose write end
// only this process holds, so that the holder ends with the test process
// even when nothing stops it (sweepStale kills it by its PID file too: its
// command line names Dir). It returns once the holder is in the root.
func (c *Cluster) startHolder() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	log := filepath.Join(c.Dir, "log", "root-holder.log")
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		return err
	}
	// Slave propagation: the host's later mounts and unmounts (a test's
	// tmpfs under /tmp) reach the holder's namespace, as they reach a
	// client that sets its own up when it starts.
	d, err := spawn("root-holder", log, nil, r, "/usr/bin/unshare", "--mount", "--propagation", "slave",
		"/bin/sh", filepath.Join(c.rootBin, "enter"), "/bin/sh", "-c", "read x", "vigil-root-holder", c.Dir)
	if err != nil {
		w.Close()
		return err
	}
	c.holder, c.holderIn = d, w
	pid := d.cmd.Process.Pid
	if err := os.MkdirAll(filepath.Join(c.Dir, "run"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, holderPidFile), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := d.exited(); err != nil {
			return fmt.Errorf("the Slurm root's namespace holder: %w; see %s", err, log)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/root%s", pid, rootMarker)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("the Slurm root's namespace holder (pid %d) was not in %s after 10s; see %s", pid, c.opts.Root, log)
}

// bindSource returns the enter script's lines that bind the module's source
// tree (where tests keep configuration and scripts) at its own path in the
// root, or "" when it is under /tmp already or unknown.
func (c *Cluster) bindSource(root string) string {
	src := moduleRoot()
	if src == "" || src == "/tmp" || strings.HasPrefix(src, "/tmp/") {
		return ""
	}
	return fmt.Sprintf("mkdir -p \"$R\"%[1]s\nmount --rbind %[1]s \"$R\"%[1]s", shellQuote(src))
}

// RootCommand is a command that runs argv where the cluster's jobs run:
// inside its Slurm root (a private mount namespace, as the daemons run),
// or on the host for a cluster of the host's Slurm.
func (c *Cluster) RootCommand(argv ...string) *exec.Cmd {
	if c.rootBin == "" {
		return exec.Command(argv[0], argv[1:]...)
	}
	return exec.Command("/usr/bin/unshare", append([]string{"--mount", "--propagation", "private", "/bin/sh",
		filepath.Join(c.rootBin, "enter")}, argv...)...)
}

// lookBin finds a program for this cluster: the root's wrapper when the
// cluster runs from a root, else the host's.
func (c *Cluster) lookBin(name string) (string, error) {
	if c.rootBin != "" {
		p := filepath.Join(c.rootBin, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		return "", fmt.Errorf("%s not found in the Slurm root %s", name, c.opts.Root)
	}
	return lookBin(name)
}
