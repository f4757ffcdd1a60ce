package slurmtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A reboot in the test cluster (Options.Reboot). slurmd runs slurm.conf's
// RebootProgram on the node itself, with slurmd's environment, while it
// holds its configuration lock, and expects the machine to go down. Here
// every node's slurmd runs on one machine, so the harness's RebootProgram
// reboots nothing: it appends "NODE called TIME" to Cluster.RebootLog and
// leaves a request file for the node (it knows which from SLURMTEST_NODE,
// which the harness gives each slurmd) and returns at once. The harness
// watches for requests and restarts that node's slurmd, and only that
// one, in a time namespace whose boot clock starts a few seconds before
// (rebootNamespace), so slurmd reports the uptime of a machine that has
// just booted and slurmctld sees the reboot it issued complete (it waits
// for a boot time after the request; a plain restart keeps the machine's
// boot time and the node stays "reboot issued" until ResumeTimeout marks
// it DOWN, "reboot timed out"). It appends "NODE restarted TIME" to the
// log when the new slurmd runs.

// EnvNode is the variable each slurmd of the harness runs with: its node name.
const EnvNode = "SLURMTEST_NODE"

// rebootScript is the harness's RebootProgram; %[1]s is the log, %[2]s
// the request directory.
const rebootScript = `#!/bin/sh
# RebootProgram of the slurmtest harness: slurmd runs it on the node.
node="$` + EnvNode + `"
[ -n "$node" ] || { echo "no $` + EnvNode + `" >&2; exit 1; }
echo "$node called $(date +%%s.%%N) $*" >> %[1]s
: > %[2]s/"$node"
exit 0
`

// rebootConf writes the RebootProgram and returns its slurm.conf lines.
func (c *Cluster) rebootConf(etc string) ([]string, error) {
	var conf []string
	if c.opts.ResumeTimeout > 0 {
		conf = append(conf, fmt.Sprintf("ResumeTimeout=%d", c.opts.ResumeTimeout))
	}
	if !c.opts.Reboot {
		return conf, nil
	}
	if err := os.MkdirAll(c.rebootDir(), 0o755); err != nil {
		return nil, err
	}
	prog := filepath.Join(etc, "reboot.sh")
	script := fmt.Sprintf(rebootScript, shellQuote(c.RebootLog), shellQuote(c.rebootDir()))
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		return nil, err
	}
	return append(conf, "RebootProgram="+prog), nil
}

func (c *Cluster) rebootDir() string { return filepath.Join(c.Dir, "reboot") }

// watchReboots restarts the slurmd of each node whose RebootProgram ran,
// until stopReboots.
func (c *Cluster) watchReboots() {
	c.rebootQuit, c.rebootDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.rebootDone)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-c.rebootQuit:
				return
			case <-tick.C:
			}
			for i, n := range c.Nodes {
				req := filepath.Join(c.rebootDir(), n)
				st, err := os.Stat(req)
				if err != nil {
					continue
				}
				_ = os.Remove(req)
				sleepUntil(st.ModTime().Add(rebootLag), c.rebootQuit)
				c.rebootLine(n, c.restartSlurmd(i, st.ModTime().Add(bootAfterCall)))
			}
		}
	}()
}

// The simulated boot's timing. slurmctld reckons a node's boot time as
// its own clock less the uptime slurmd reports (the kernel's, rounded up
// to a whole second), both in whole seconds, so one boot reads a second or
// two apart from one registration to the next, later still by however
// long the message took. It takes a reboot as done when that boot time is
// after the request (issued before the RebootProgram ran), and a boot time
// after the node's last response as a reboot nobody asked for ("Node
// unexpectedly rebooted": DOWN, the job on it killed). So the boot is put
// bootAfterCall after the RebootProgram's call (two seconds more than the
// rounding can take off) and slurmd starts rebootLag after the call: its
// registrations then read a boot time after the request and, with up to
// two seconds for a message, before the responses that follow the first.
const (
	bootAfterCall = 2750 * time.Millisecond
	rebootLag     = 6500 * time.Millisecond
)

// sleepUntil waits until t, or until quit is closed.
func sleepUntil(t time.Time, quit <-chan struct{}) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-quit:
	}
}

// stopReboots ends watchReboots (before the daemons are stopped).
func (c *Cluster) stopReboots() {
	if c.rebootQuit == nil {
		return
	}
	close(c.rebootQuit)
	<-c.rebootDone
	c.rebootQuit = nil
}

// restartSlurmd stops node i's slurmd and starts it again as if its
// machine had booted at boot.
func (c *Cluster) restartSlurmd(i int, boot time.Time) error {
	bin, err := c.lookBin("slurmd")
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slurmds[i].stop(10 * time.Second)
	ns, err := rebootNamespace(boot)
	if err != nil {
		return err
	}
	d, err := c.startSlurmd(bin, c.Nodes[i], ns)
	if err != nil {
		return err
	}
	c.slurmds[i] = d
	return nil
}

// rebootNamespace is the command prefix that runs a program in a new time
// namespace whose boot clock (CLOCK_BOOTTIME: the uptime sysinfo(2) and
// /proc/uptime give) reads the time since boot, to the nearest second.
// The kernel applies the namespace to the program unshare(1) executes.
// slurmd's -b (uptime counted from slurmd's first registration) would do
// without one, but puts the boot within a second of that registration:
// the next one, read in the next second, looked like another reboot.
func rebootNamespace(boot time.Time) ([]string, error) {
	if _, err := os.Stat("/proc/self/ns/time"); err != nil {
		return nil, fmt.Errorf("simulated reboot: this kernel has no time namespaces (%v); it needs Linux 5.6 or later built with CONFIG_TIME_NS", err)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return nil, fmt.Errorf("simulated reboot: reading the boot clock: %w", err)
	}
	up := time.Since(boot).Round(time.Second)
	offset := int64(up/time.Second) - ts.Sec
	return []string{"unshare", "--time", "--boottime", strconv.FormatInt(offset, 10), "--"}, nil
}

func (c *Cluster) rebootLine(node string, err error) {
	line := fmt.Sprintf("%s restarted %.3f\n", node, float64(time.Now().UnixNano())/1e9)
	if err != nil {
		line = fmt.Sprintf("%s restart failed %.3f: %v\n", node, float64(time.Now().UnixNano())/1e9, err)
	}
	f, ferr := os.OpenFile(c.RebootLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if ferr != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(line)
}

// Reboot is one line of Cluster.RebootLog: the RebootProgram's call for a
// node, or the harness's restart of its slurmd.
type Reboot struct {
	// Node is the node.
	Node string
	// Event is "called" (RebootProgram ran), "restarted" (its slurmd runs
	// again) or "restart failed".
	Event string
	// At is when.
	At time.Time
}

// Reboots reads Cluster.RebootLog (Options.Reboot): every RebootProgram
// call and slurmd restart so far, in order.
func (c *Cluster) Reboots() ([]Reboot, error) {
	b, err := os.ReadFile(c.RebootLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Reboot
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		ev, at := f[1], f[2]
		if ev == "restart" && len(f) >= 4 {
			ev, at = "restart failed", strings.TrimSuffix(f[3], ":")
		}
		var sec float64
		if _, err := fmt.Sscanf(at, "%f", &sec); err != nil {
			continue
		}
		out = append(out, Reboot{Node: f[0], Event: ev, At: time.Unix(0, int64(sec*1e9))})
	}
	return out, nil
}
