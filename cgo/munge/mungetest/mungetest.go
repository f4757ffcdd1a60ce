// Package mungetest starts a private munged for tests: its own key, socket,
// pid, log and seed files under a temporary directory, never the system's
// daemon. It needs Debian's munge package (mungekey, munged).
package mungetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Daemon is a running private munged.
type Daemon struct {
	// Dir holds the key, socket, pid, log and seed files.
	Dir string
	// Socket is the path clients pass as MUNGE_OPT_SOCKET.
	Socket string
	// Key is the key file munged was started with.
	Key  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// searchPath is where Debian installs mungekey and munged.
const searchPath = "/usr/sbin:/usr/bin:/sbin:/bin"

func lookup(name string) (string, error) {
	for _, d := range filepath.SplitList(searchPath) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in %s: install the Debian package munge", name, searchPath)
}

// Start creates a key and starts munged in the foreground (-F) with it;
// the daemon is stopped and its directory removed when the test ends. It
// fails the test when munge is not installed or munged does not come up
// within 10 s.
func Start(t testing.TB) *Daemon {
	t.Helper()
	d, err := start(t)
	if err != nil {
		t.Fatalf("starting a private munged: %v", err)
	}
	return d
}

func start(t testing.TB) (*Daemon, error) {
	mungekey, err := lookup("mungekey")
	if err != nil {
		return nil, err
	}
	munged, err := lookup("munged")
	if err != nil {
		return nil, err
	}
	// munged refuses a socket directory that others can write to; it must
	// be 0755 so that clients of every uid can reach the socket.
	dir, err := os.MkdirTemp("/tmp", "vmunge-")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	d := &Daemon{Dir: dir, Socket: filepath.Join(dir, "sock"), Key: filepath.Join(dir, "munge.key"), done: make(chan struct{})}
	if out, err := exec.Command(mungekey, "--create", "--keyfile="+d.Key).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mungekey: %v: %s", err, out)
	}
	logFile := filepath.Join(dir, "munged.log")
	d.cmd = exec.Command(munged, "-F", "--key-file="+d.Key, "--socket="+d.Socket,
		"--pid-file="+filepath.Join(dir, "munged.pid"), "--log-file="+logFile,
		"--seed-file="+filepath.Join(dir, "seed"), "--num-threads=2")
	d.cmd.Env = []string{"PATH=" + searchPath}
	d.cmd.Dir = dir
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.OpenFile(filepath.Join(dir, "munged.out"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	d.cmd.Stdout, d.cmd.Stderr = out, out
	if err := d.cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting munged: %w", err)
	}
	out.Close()
	go func() {
		err := d.cmd.Wait()
		if err == nil {
			err = errors.New("exited with status 0")
		}
		d.err = fmt.Errorf("munged (pid %d) %w", d.cmd.Process.Pid, err)
		close(d.done)
	}()
	t.Cleanup(d.stop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-d.done:
			b, _ := os.ReadFile(filepath.Join(dir, "munged.out"))
			return nil, fmt.Errorf("%w: %s", d.err, b)
		default:
		}
		if _, err := os.Stat(d.Socket); err == nil {
			return d, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("munged socket %s did not appear within 10s", d.Socket)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM, waits up to 5 s, then kills munged's process group.
func (d *Daemon) stop() {
	select {
	case <-d.done:
		return
	default:
	}
	pid := d.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-d.done
	}
}
