package slurmtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// daemon is one munged, slurmctld or slurmd run in the foreground as a child
// of the test process, in its own process group.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// startDaemon starts bin with args and PATH (plus env) in its own process
// group, its output appended to logFile.
func startDaemon(name, logFile string, env []string, bin string, args ...string) (*daemon, error) {
	return spawn(name, logFile, env, nil, bin, args...)
}

// spawn is startDaemon with stdin (nil: /dev/null).
func spawn(name, logFile string, env []string, stdin *os.File, bin string, args ...string) (*daemon, error) {
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = out
	cmd.Stderr = out
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.Env = append([]string{"PATH=" + searchPath}, env...)
	cmd.Dir = filepath.Dir(logFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	out.Close()
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		if err == nil {
			err = errors.New("exited with status 0")
		}
		d.err = fmt.Errorf("%s (pid %d) %w", name, cmd.Process.Pid, err)
		close(d.done)
	}()
	return d, nil
}

// exited returns an error when the daemon has exited, nil while it runs.
func (d *daemon) exited() error {
	select {
	case <-d.done:
		return d.err
	default:
		return nil
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs the process group and
// waits until the process is gone.
func (d *daemon) stop(grace time.Duration) {
	if d == nil {
		return
	}
	if d.exited() != nil {
		return
	}
	pid := d.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-d.done
	}
}

// stopAll stops daemons at the same time: SIGTERM to each, then SIGKILL to
// those still running after grace; it returns when all are gone.
func stopAll(ds []*daemon, grace time.Duration) {
	for _, d := range ds {
		if d != nil && d.exited() == nil {
			_ = syscall.Kill(d.cmd.Process.Pid, syscall.SIGTERM)
		}
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	expired := false
	for _, d := range ds {
		if d == nil {
			continue
		}
		if !expired {
			select {
			case <-d.done:
				continue
			case <-timer.C:
				expired = true
			}
		}
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
	}
}

// port is a TCP port held open until the daemon that will use it starts.
type port struct {
	port int
	l    net.Listener
}

func (p *port) release() {
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
}

func releasePorts(ps []*port) {
	for _, p := range ps {
		p.release()
	}
}

// reservePorts picks n free TCP ports of daemonPorts (below the kernel's
// ephemeral range, so outgoing connections never take them) at random, so
// that clusters started at the same time by other test binaries rarely
// pick the same, and holds each open (on all addresses, as the daemons
// bind) until released. watchPorts stay free: vigil-watch's meetings
// listen there by default (four of 29000 to 29999, by a hash of the job
// id), as the real-PyTorch e2e starts them.
func reservePorts(n int) ([]*port, error) {
	var ps []*port
	for tries := 0; len(ps) < n; tries++ {
		if tries > 1000 {
			releasePorts(ps)
			return nil, errors.New("no free TCP ports found")
		}
		p := daemonPorts.Lo + rand.IntN(daemonPorts.Hi-daemonPorts.Lo)
		if p >= watchPorts.Lo && p < watchPorts.Hi {
			continue
		}
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		ps = append(ps, &port{port: p, l: l})
	}
	return ps, nil
}

// ownerFile in a cluster's Dir holds the PID of the test process that owns it.
const ownerFile = "owner.pid"

// stop tears the cluster down: cancel every job, stop slurmd, slurmctld and
// munged by PID, kill what is left in the cluster's cgroups and remove them,
// and remove Dir unless VIGIL_KEEP_CLUSTER is set.
func (c *Cluster) stop(t testing.TB) {
	t.Helper()
	c.stopReboots()
	c.mu.Lock()
	defer c.mu.Unlock()
	begin := time.Now()
	if c.ctld != nil && c.ctld.exited() == nil {
		c.cancelJobs()
	}
	stopAll(c.slurmds, 5*time.Second)
	c.ctld.stop(10 * time.Second)
	c.munge.stop(5 * time.Second)
	c.holder.stop(time.Second)
	if c.holderIn != nil {
		c.holderIn.Close()
	}
	killed := cleanCgroups(c.Nodes)
	if c.opts.Cgroup == CgroupV2 {
		killed += cleanCgroupV2(c.CgroupRoot)
	}
	if killed > 0 {
		t.Logf("slurmtest: killed %d leftover job processes", killed)
	}
	if os.Getenv("VIGIL_KEEP_CLUSTER") != "" {
		t.Logf("slurmtest: VIGIL_KEEP_CLUSTER set, keeping %s", c.Dir)
	} else if c.Dir != "" {
		if err := os.RemoveAll(c.Dir); err != nil {
			t.Logf("slurmtest: %v", err)
		}
	}
	t.Logf("slurmtest: cluster %s stopped in %.2fs", c.Name, time.Since(begin).Seconds())
}

// cancelJobs cancels every job and waits (a few seconds at most) until none
// is running or completing, so that slurmstepd ends its processes itself.
func (c *Cluster) cancelJobs() {
	out, err := c.run(bgCtx(), "squeue", "-h", "-o", "%i")
	if err != nil {
		return
	}
	ids := strings.Fields(out)
	if len(ids) == 0 {
		return
	}
	_, _ = c.run(bgCtx(), "scancel", ids...)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, err := c.run(bgCtx(), "squeue", "-h", "-t", "RUNNING,COMPLETING,CONFIGURING,SUSPENDED", "-o", "%i")
		if err != nil || strings.TrimSpace(out) == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cleanCgroups kills every process left in the nodes' Slurm cgroups (cgroup
// v1: <root>/<controller>/slurm_<node>, v2: <root>/system.slice/<node>_slurmstepd.scope)
// and removes the directories, deepest first. It returns how many processes
// it killed.
func cleanCgroups(nodes []string) int {
	var tops []string
	for _, n := range nodes {
		m, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", "slurm_"+n))
		tops = append(tops, m...)
		m, _ = filepath.Glob(filepath.Join(cgroupRoot, "system.slice", n+"_slurmstepd.scope"))
		tops = append(tops, m...)
		m, _ = filepath.Glob(filepath.Join(cgroupRoot, "unified", "system.slice", n+"_slurmstepd.scope"))
		tops = append(tops, m...)
	}
	killed := map[int]bool{}
	for round := 0; round < 50; round++ {
		left := 0
		for _, top := range tops {
			var dirs []string
			_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				for _, l := range readLines(filepath.Join(dirs[i], "cgroup.procs")) {
					if pid, err := strconv.Atoi(l); err == nil && pid > 1 {
						killed[pid] = true
						// A frozen process dies only after it is thawed.
						_ = os.WriteFile(filepath.Join(dirs[i], "freezer.state"), []byte("THAWED"), 0o644)
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
					left++
				}
			}
		}
		if left == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return len(killed)
}

// sweepStale tears down clusters whose test process died without cleaning
// up (a test binary killed on timeout): their daemons are killed by the pid
// files under their Dir and the Dir removed.
func sweepStale() {
	dirs, _ := filepath.Glob("/tmp/vst-*/" + ownerFile)
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		owner, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || owner <= 0 || processAlive(owner) {
			continue
		}
		dir := filepath.Dir(f)
		pids, _ := filepath.Glob(filepath.Join(dir, "run", "*.pid"))
		for _, p := range pids {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 && daemonOf(pid, dir) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		nodes := readLines(filepath.Join(dir, "nodes"))
		cleanCgroups(nodes)
		for _, cg := range readLines(filepath.Join(dir, "cgroup")) {
			cleanCgroupV2(cg)
		}
		_ = os.RemoveAll(dir)
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// daemonOf reports whether pid runs with a command line that mentions dir,
// so that a recycled PID is never killed.
func daemonOf(pid int, dir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(b), dir)
}
