package loop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// One watcher per job and node: the first vigil-watch of a job on a node
// holds a claim, an abstract unix socket named after the job and the node
// (no file to leave behind, released by the kernel when the process ends,
// whatever way it ends). A second watcher of the same job on the same node
// (vigil's SPANK plugin started one with watch=auto, and the batch script
// also runs `srun ... vigil-watch &`) finds the claim taken, asks the holder
// who it is, and exits 0 saying so: one hang, one notification.

// Holder describes the watcher that holds a job's claim on a node.
type Holder struct {
	// PID is the holder's process id.
	PID int
	// Step is its job step ("extern" when vigil's SPANK plugin started it).
	Step string
	// Started is when it took the claim.
	Started time.Time
}

// String is "pid 1234, step extern (started by vigil's SPANK plugin), since T".
func (h Holder) String() string {
	s := fmt.Sprintf("pid %d, step %s", h.PID, h.Step)
	if h.Step == "extern" {
		s += " (started by vigil's SPANK plugin)"
	}
	if !h.Started.IsZero() {
		s += ", since " + h.Started.UTC().Format(time.RFC3339)
	}
	return s
}

// ErrClaimed is returned by Claim when another watcher of the job runs on
// this node; the *ClaimedError says who.
var ErrClaimed = errors.New("another vigil-watch watches this job on this node")

// ClaimedError names the watcher that holds the claim.
type ClaimedError struct{ Holder Holder }

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("%v (%s)", ErrClaimed, e.Holder)
}

// Unwrap returns ErrClaimed.
func (e *ClaimedError) Unwrap() error { return ErrClaimed }

// ClaimName is the abstract socket's name for a job's watcher on a node
// (several slurmd of a test cluster share one host: the node is part of it).
func ClaimName(job, node string) string { return "@vigil-watch/" + job + "/" + node }

// Claim takes the job's claim on this node for this process, whose uid
// must be uid, and serves who holds it until release is called. When another
// process of the same uid holds it, the error is a *ClaimedError. A claim
// held by a process of another uid cannot be the job's own watcher (only
// the job's user runs it): the error then says so and is not ErrClaimed,
// and the caller watches anyway without a claim.
func Claim(job, node, step string, uid int, now time.Time) (release func(), err error) {
	name := ClaimName(job, node)
	ln, err := net.Listen("unix", name)
	if err == nil {
		return serveClaim(ln, Holder{PID: os.Getpid(), Step: step, Started: now}), nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return func() {}, fmt.Errorf("claiming %s: %w", name, err)
	}
	h, peer, qerr := askHolder(name)
	if qerr != nil {
		return func() {}, fmt.Errorf("claim %s is taken, but its holder does not answer: %w", name, qerr)
	}
	if peer != uid {
		return func() {}, fmt.Errorf("claim %s is held by uid %d, not the job's uid %d: watching without it", name, peer, uid)
	}
	return func() {}, &ClaimedError{Holder: h}
}

// serveClaim answers every connection with the holder's line
// ("pid=1234 step=extern started=RFC3339") until release.
func serveClaim(ln net.Listener, h Holder) func() {
	line := fmt.Sprintf("pid=%d step=%s started=%s\n", h.PID, h.Step, h.Started.UTC().Format(time.RFC3339Nano))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by release
			}
			c.SetWriteDeadline(time.Now().Add(2 * time.Second))
			c.Write([]byte(line))
			c.Close()
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			ln.Close()
			wg.Wait()
		})
	}
}

// askHolder reads the holder's line and the uid of the process that
// answers (SO_PEERCRED: the kernel's word, not the holder's).
func askHolder(name string) (Holder, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", name)
	if err != nil {
		return Holder{}, -1, err
	}
	defer c.Close()
	uid, err := peerUID(c.(*net.UnixConn))
	if err != nil {
		return Holder{}, -1, err
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return Holder{}, uid, fmt.Errorf("reading the holder's line: %w", err)
	}
	return parseHolder(line), uid, nil
}

// parseHolder reads "pid=1234 step=extern started=T"; unknown or bad
// fields are left zero.
func parseHolder(line string) Holder {
	var h Holder
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "pid":
			fmt.Sscan(v, &h.PID)
		case "step":
			h.Step = v
		case "started":
			h.Started, _ = time.Parse(time.RFC3339Nano, v)
		}
	}
	return h
}

func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return int(cred.Uid), nil
}
