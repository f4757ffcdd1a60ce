// Package slurmtest starts a real, throwaway Slurm cluster on this machine
// for tests: its own munge daemon and key, one slurmctld and N slurmd (one
// port each, all on 127.0.0.1), built from Debian's packages (munge,
// slurmctld, slurmd, slurm-client) and torn down by PID when the test ends.
//
// Everything lives in a short directory under /tmp (Unix socket paths are
// limited to 108 bytes), node and cluster names carry a random prefix so that
// clusters started in parallel (go test runs packages in parallel) never
// share ports, names or cgroups.
package slurmtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options shape the cluster. The zero value gives three idle nodes.
type Options struct {
	// Nodes is the number of slurmd daemons (nodes); 0 means 3.
	Nodes int
	// Prolog and Epilog are absolute paths of programs run by slurmd. Each is
	// wrapped in a generated script that sets SLURM_CONF and PATH (slurmd
	// runs them with no PATH) and execs the program.
	Prolog, Epilog string
	// PrologFlags is slurm.conf's PrologFlags, e.g. "Alloc" or "Alloc,Contain".
	PrologFlags string
	// PrologEpilogTimeout is in seconds; 0 keeps Slurm's default.
	PrologEpilogTimeout int
	// HealthCheckProgram is an absolute path, wrapped like Prolog.
	HealthCheckProgram string
	// HealthCheckInterval is in seconds; 0 keeps Slurm's default (no periodic run).
	HealthCheckInterval int
	// GPUsPerNode gives every node a fake gres gpu:N; gres.conf File= points
	// at character devices (major 195, like /dev/nvidiaN) made under Dir.
	GPUsPerNode int
	// PlugStack is the content of plugstack.conf (PlugStackConfig=); empty
	// gives an empty file.
	PlugStack string
	// ExtraConf lines are appended to slurm.conf (later lines win).
	ExtraConf []string
	// Partitions replace the one default partition (debug: every node,
	// the default) with these; see partitions.go.
	Partitions []Partition
	// PreemptType is slurm.conf's PreemptType ("preempt/partition_prio");
	// "" leaves it out (no preemption).
	PreemptType string
	// PreemptMode is slurm.conf's cluster-wide PreemptMode ("CANCEL",
	// "REQUEUE"); "" leaves it out.
	PreemptMode string
	// MailProg is slurm.conf's MailProg; empty gives a script that appends
	// its arguments to Cluster.MailLog.
	MailProg string
	// NodeAddrs gives each node its own loopback address, NodeAddr=
	// 127.0.K.N for node N (K drawn per cluster, 10 to 250, so that
	// clusters started in parallel do not share addresses, and none
	// shares those of rendezvous/rdvtest's simulated nodes, 127.0.1-9.N,
	// whose tests meet on the same job ports), listed in
	// Cluster.NodeAddrs. Slurm reaches each slurmd there (on its own
	// port), and a fault injected on one address (iptables, tc) hits one
	// node only. False keeps every node on 127.0.0.1.
	NodeAddrs bool
	// Root runs munge and Slurm from this Debian root (Flavour.Root, built
	// by .ci/slurm-root) instead of the host's packages; see root.go.
	Root string
	// CredExpire is AuthInfo's cred_expire in seconds: the life of a step
	// credential and how long a requeued job waits before it may start
	// again; 0 keeps Slurm's default (120 s).
	CredExpire int
	// Reboot sets slurm.conf's RebootProgram to the harness's, which
	// "reboots" a node by restarting its slurmd, and only its own, in a
	// time namespace that has just booted (see reboot.go): scontrol reboot then runs its whole cycle, and
	// Cluster.RebootLog and Reboots tell what ran when.
	Reboot bool
	// ResumeTimeout is slurm.conf's ResumeTimeout in seconds: how long
	// slurmctld waits for a rebooted node before it marks it DOWN
	// ("reboot timed out"); 0 keeps Slurm's default (60 s).
	ResumeTimeout int
	// Cgroup picks cgroup/v1 or cgroup/v2 (CgroupV2: Slurm's v2 plugin in
	// the host's cgroup2 mount, jobs under Cluster.CgroupRoot; see
	// cgroupv2.go). The zero value is v1 where the machine has it.
	Cgroup CgroupMode
}

// Cluster is a running cluster.
type Cluster struct {
	// Dir holds everything: configuration, state, spool, logs, munge.
	Dir string
	// Conf is the path of slurm.conf.
	Conf string
	// Nodes are the node names, unique per cluster.
	Nodes []string
	// Env is the environment for Slurm clients: SLURM_CONF=Conf and a PATH
	// with the Slurm binaries. Command adds it to the test's environment.
	Env []string

	// Name is the ClusterName, unique per cluster.
	Name string
	// MailLog is where the default MailProg appends one line per mail.
	MailLog string
	// RebootLog is where the RebootProgram of Options.Reboot and the
	// harness's slurmd restarts append one line each (Reboots reads it).
	RebootLog string
	// PlugStackConf is the path of plugstack.conf (PlugStackConfig=); write
	// it and call Restart for slurmd to load the new plugins.
	PlugStackConf string
	// CgroupPlugin is "cgroup/v1" or "cgroup/v2" when the cluster tracks
	// jobs with proctrack/cgroup and task/cgroup, or "" when the machine has
	// no cgroup v1 freezer hierarchy and the cluster falls back to
	// proctrack/linuxproc.
	CgroupPlugin string
	// CgroupRoot is where this test process finds the job cgroups: the
	// directory that jobs, prologs and epilogs see as /sys/fs/cgroup. It is
	// /sys/fs/cgroup for cgroup/v1, and for cgroup/v2 the cluster's own
	// directory under the host's cgroup2 mount
	// (/sys/fs/cgroup/unified/<Name>), which holds
	// system.slice/<node>_slurmstepd.scope/job_<id>/... Pass it as the root
	// of slurm.FindJobCgroup.
	CgroupRoot string
	// Version is the cluster's Slurm version as scontrol --version prints
	// it ("22.05.8", "24.11.5").
	Version string
	// CtldPort and NodePorts are the TCP ports slurmctld and each slurmd
	// listen on.
	CtldPort  int
	NodePorts []int
	// NodeAddrs are the nodes' addresses (Options.NodeAddrs), in the order
	// of Nodes; every one is 127.0.0.1 without that option.
	NodeAddrs []string

	opts    Options
	rootBin string // Dir/rootbin when the cluster runs from Options.Root
	preload string // the cgroup v2 LD_PRELOAD library (CgroupV2)
	mu      sync.Mutex
	holder  *daemon // holds the root's mount namespace for its clients (Options.Root)
	// holderIn is the write end of the holder's standard input.
	holderIn *os.File
	munge    *daemon
	ctld     *daemon
	slurmds  []*daemon
	// rebootQuit and rebootDone end and wait for watchReboots.
	rebootQuit, rebootDone chan struct{}
}

// Binaries the harness needs, with the Debian package that ships each.
var needed = []struct{ bin, pkg string }{
	{"mungekey", "munge"},
	{"munged", "munge"},
	{"slurmctld", "slurmctld"},
	{"slurmd", "slurmd"},
	{"sinfo", "slurm-client"},
	{"squeue", "slurm-client"},
	{"scontrol", "slurm-client"},
	{"sbatch", "slurm-client"},
	{"scancel", "slurm-client"},
}

// searchPath is the PATH used to find Slurm and munge binaries and given to
// clients and to the wrapped Prolog/Epilog/HealthCheckProgram.
const searchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// cgroupRoot is where the machine's cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// binDirs are searched after the test's PATH (a variable for tests).
var binDirs = filepath.SplitList(searchPath)

// lookBin finds a binary on the test's PATH or in binDirs.
func lookBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range binDirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// checkBinaries fails the test naming the Debian packages to install.
func checkBinaries(t testing.TB) map[string]string {
	t.Helper()
	paths := map[string]string{}
	var missing []string
	pkgs := map[string]bool{}
	for _, n := range needed {
		p, err := lookBin(n.bin)
		if err != nil {
			missing = append(missing, n.bin)
			pkgs[n.pkg] = true
			continue
		}
		paths[n.bin] = p
	}
	if len(missing) > 0 {
		var ps []string
		for _, p := range []string{"munge", "slurmctld", "slurmd", "slurm-client"} {
			if pkgs[p] {
				ps = append(ps, p)
			}
		}
		t.Fatalf("slurmtest: %s not installed; install the Debian packages with: apt-get install -y --no-install-recommends %s",
			strings.Join(missing, ", "), strings.Join(ps, " "))
	}
	if os.Geteuid() != 0 {
		t.Fatalf("slurmtest: a local Slurm cluster must be started as root (slurmd runs jobs as their users and manages cgroups); uid is %d", os.Geteuid())
	}
	return paths
}

// Start builds and starts a cluster and waits until every node is idle. It
// fails the test, with the daemons' log tails, when the cluster does not come
// up. t.Cleanup cancels the jobs and stops the daemons by PID, also when the
// test fails.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	var bins map[string]string
	if o.Root != "" {
		checkRoot(t, o.Root)
	} else {
		bins = checkBinaries(t)
	}
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	sweepStale()
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		c, err := startOnce(t, o, bins)
		if err == nil {
			return c
		}
		lastErr = err
		if !errors.Is(err, errPortInUse) {
			break
		}
		t.Logf("slurmtest: attempt %d: %v; retrying with other ports", attempt, err)
	}
	t.Fatalf("slurmtest: cluster did not start: %v", lastErr)
	return nil
}

var errPortInUse = errors.New("port in use")

func startOnce(t testing.TB, o Options, bins map[string]string) (*Cluster, error) {
	t.Helper()
	begin := time.Now()
	c, err := newCluster(o)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			c.stop(t)
		}
	}()
	if o.Root != "" {
		if bins, err = c.writeRootBins(); err != nil {
			return nil, err
		}
		if err := c.startHolder(); err != nil {
			return nil, err
		}
	}

	ports, err := reservePorts(1 + o.Nodes)
	if err != nil {
		return nil, err
	}
	defer releasePorts(ports)
	c.CtldPort = ports[0].port
	for _, p := range ports[1:] {
		c.NodePorts = append(c.NodePorts, p.port)
	}
	if c.Version, err = c.slurmVersion(); err != nil {
		return nil, err
	}
	if o.Cgroup == CgroupV2 {
		if err := c.prepareV2(); err != nil {
			return nil, err
		}
	}
	if err := c.writeFiles(bins); err != nil {
		return nil, fmt.Errorf("writing configuration: %w", err)
	}
	if err := c.startMunge(bins); err != nil {
		return nil, err
	}
	ports[0].release()
	if err := c.startCtld(bins); err != nil {
		return nil, err
	}
	if err := c.startSlurmds(bins, ports[1:]); err != nil {
		return nil, err
	}
	if o.Reboot {
		c.watchReboots()
	}
	ok = true
	t.Cleanup(func() { c.stop(t) })
	t.Logf("slurmtest: cluster %s (%s) with nodes %s up in %.2fs in %s",
		c.Name, c.tracking(), strings.Join(c.Nodes, ","), time.Since(begin).Seconds(), c.Dir)
	return c, nil
}

// newCluster makes the cluster's directory, owned by this process, and
// picks its names.
func newCluster(o Options) (*Cluster, error) {
	dir, err := os.MkdirTemp("/tmp", "vst-")
	if err != nil {
		return nil, err
	}
	// slurmd, munged and the job's user need to traverse it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	prefix := randomName()
	c := &Cluster{
		Dir:           dir,
		Conf:          filepath.Join(dir, "etc", "slurm.conf"),
		Name:          "vst" + prefix,
		MailLog:       filepath.Join(dir, "mail.log"),
		RebootLog:     filepath.Join(dir, "reboots.log"),
		PlugStackConf: filepath.Join(dir, "etc", "plugstack.conf"),
		opts:          o,
	}
	k := 10 + rand.IntN(241) // 127.0.1-9.N are rdvtest's
	for i := 1; i <= o.Nodes; i++ {
		c.Nodes = append(c.Nodes, fmt.Sprintf("%s%d", prefix, i))
		addr := "127.0.0.1"
		if o.NodeAddrs {
			addr = fmt.Sprintf("127.0.%d.%d", k, i)
		}
		c.NodeAddrs = append(c.NodeAddrs, addr)
	}
	c.Env = []string{"SLURM_CONF=" + c.Conf, "PATH=" + clientPath()}
	switch {
	case o.Cgroup == CgroupV2:
		c.CgroupPlugin = "cgroup/v2"
	case freezerAvailable():
		c.CgroupPlugin, c.CgroupRoot = "cgroup/v1", cgroupRoot
	case o.Cgroup == CgroupV1:
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("slurmtest: CgroupV1 needs the cgroup v1 freezer hierarchy at %s", filepath.Join(cgroupRoot, "freezer"))
	}
	return c, nil
}

// startMunge creates the cluster's munge key and starts munged on it,
// waiting for its socket.
func (c *Cluster) startMunge(bins map[string]string) error {
	key := filepath.Join(c.Dir, "munge", "munge.key")
	if out, err := exec.Command(bins["mungekey"], "--create", "--keyfile="+key).CombinedOutput(); err != nil {
		return fmt.Errorf("mungekey: %v: %s", err, out)
	}
	var err error
	c.munge, err = startDaemon("munged", filepath.Join(c.Dir, "log", "munged.log"), nil, bins["munged"],
		"-F", "--key-file="+key, "--socket="+c.mungeSocket(),
		"--pid-file="+filepath.Join(c.Dir, "run", "munged.pid"),
		"--seed-file="+filepath.Join(c.Dir, "munge", "seed"), "--num-threads=2")
	if err != nil {
		return err
	}
	if err := c.waitFor(30*time.Second, "munged socket", func() (bool, error) {
		if err := c.munge.exited(); err != nil {
			return false, err
		}
		_, err := os.Stat(c.mungeSocket())
		return err == nil, nil
	}); err != nil {
		return c.startErr(err)
	}
	return nil
}

// startCtld starts slurmctld (its port released) and waits until it
// answers scontrol ping.
func (c *Cluster) startCtld(bins map[string]string) error {
	var err error
	c.ctld, err = startDaemon("slurmctld", filepath.Join(c.Dir, "log", "slurmctld.out"), nil, bins["slurmctld"],
		"-D", "-i", "-f", c.Conf)
	if err != nil {
		return err
	}
	if err := c.waitFor(60*time.Second, "slurmctld to answer", func() (bool, error) {
		if err := c.ctld.exited(); err != nil {
			return false, err
		}
		out, err := c.run(context.Background(), "scontrol", "ping")
		return err == nil && strings.Contains(out, "is UP"), nil
	}); err != nil {
		return c.startErr(err)
	}
	return nil
}

// startSlurmds starts one slurmd per node, releasing each node's port
// (ports, in node order) just before, and waits until every node is idle.
func (c *Cluster) startSlurmds(bins map[string]string, ports []*port) error {
	for i, n := range c.Nodes {
		ports[i].release()
		d, err := c.startSlurmd(bins["slurmd"], n, nil)
		if err != nil {
			return err
		}
		c.slurmds = append(c.slurmds, d)
	}
	if err := c.waitIdleRestarting(bins["slurmd"]); err != nil {
		return c.startErr(err)
	}
	return nil
}

// tracking names how the cluster tracks job processes.
func (c *Cluster) tracking() string {
	if c.CgroupPlugin == "" {
		return "proctrack/linuxproc"
	}
	return "proctrack/cgroup " + c.CgroupPlugin
}

func (c *Cluster) mungeSocket() string { return filepath.Join(c.Dir, "munge", "sock") }

// startErr turns a start-up failure into an error carrying the logs.
func (c *Cluster) startErr(err error) error {
	logs := c.logTails(40)
	if strings.Contains(logs, "Address already in use") {
		err = fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return fmt.Errorf("%w\n%s", err, logs)
}

// waitFor polls cond until it reports true, returns an error, or timeout
// passes: after 20 ms at first, twice as long each time up to
// maxPollGap. A cond that runs scontrol costs a process (through the
// Slurm root, a mount namespace and chroot: about 0.1 s of CPU); polled
// without a pause, one waiting test kept a core busy on a 2-core machine.
func (c *Cluster) waitFor(timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	gap := 20 * time.Millisecond
	for {
		done, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: timed out after %v", what, timeout)
		}
		time.Sleep(gap)
		gap = min(2*gap, maxPollGap)
	}
}

// maxPollGap is the longest pause between two of waitFor's polls: a state
// that lasts a second (a short job running) is still seen.
const maxPollGap = 320 * time.Millisecond

// waitIdle waits until every node reports idle, failing early when a slurmd exits.
func (c *Cluster) waitIdle(timeout time.Duration) error {
	last := ""
	err := c.waitFor(timeout, "nodes to be idle", func() (bool, error) {
		if err := c.ctld.exited(); err != nil {
			return false, err
		}
		for _, d := range c.slurmds {
			if err := d.exited(); err != nil {
				return false, err
			}
		}
		out, err := c.run(context.Background(), "sinfo", "-h", "-N", "-o", "%N %T")
		last = out
		if err != nil {
			return false, nil
		}
		states := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			if len(f) == 2 {
				states[f[0]] = f[1]
			}
		}
		for _, n := range c.Nodes {
			if states[n] != "idle" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w; last sinfo:\n%s", err, last)
	}
	return nil
}

// slurmdStarts counts the "slurmd started on" lines in the node's log:
// slurmd writes one when it has read its configuration and loaded its
// plugins (SPANK included) and is about to register.
func (c *Cluster) slurmdStarts(node string) int {
	n := 0
	for _, l := range readLines(filepath.Join(c.Dir, "log", "slurmd-"+node+".log")) {
		if strings.Contains(l, "slurmd started on") {
			n++
		}
	}
	return n
}

// randomName returns a short lower-case name (a letter, then letters/digits)
// that no other cluster's nodes on this host use.
func randomName() string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for {
		b := []byte{letters[rand.IntN(26)], letters[rand.IntN(26)], letters[rand.IntN(26)], letters[rand.IntN(26)]}
		name := string(b)
		m, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", "slurm_"+name+"*"))
		if len(m) == 0 && !isDir(filepath.Join(unifiedMount, "vst"+name)) {
			return name
		}
	}
}

// freezerAvailable reports whether the cgroup v1 freezer hierarchy that
// proctrack/cgroup (cgroup/v1) needs is mounted.
func freezerAvailable() bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Join(cgroupRoot, "freezer"), &st); err != nil {
		return false
	}
	const cgroupSuperMagic = 0x27e0eb
	return st.Type == cgroupSuperMagic
}

// readLines reads a file's non-empty lines.
func readLines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}
