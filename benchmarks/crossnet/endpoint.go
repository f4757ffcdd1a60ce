package crossnet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks/crossnet/judge"
	"github.com/vigil-hpc/vigil/rendezvous"
)

// The measurement endpoint: each node serves it on its node address while
// the phase runs. A peer connects and sends its hello (the operation, its
// name and a seal of both for this job, admit.go); once admitted it is
// answered replyOK, then, for opPing, pingSize-byte messages are echoed
// back; for opBulk, bytes are counted until the peer closes its side, and
// the endpoint answers with the count of bytes it read (8 bytes,
// big-endian). The endpoint trusts nothing it reads: it echoes and counts,
// each connection under a deadline. What the measurements mean travels in
// the sealed rendezvous, never over this port.
const (
	opPing   = 'p'
	opBulk   = 'b'
	pingSize = 8
	// maxConns caps the admitted connections at once.
	maxConns = 64
	// connLimit bounds one connection to the endpoint.
	connLimit = 2 * time.Minute
	chunk     = 256 << 10
)

// endpoint is a running measurement endpoint.
type endpoint struct {
	ln   net.Listener
	gate gate
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]struct{}
	// pending are the connections not yet admitted, oldest first, and
	// bySource their count per source address.
	pending  []pendingConn
	bySource map[string]int
	// served and servedBy count the admitted connections.
	served   int
	servedBy map[string]int
	// turnedAway counts connections told replyBusy; rejected those whose
	// hello was not a peer's (or never came), and lastReject says why
	// the first was.
	turnedAway, rejected int
	lastReject           error
}

// serve starts an endpoint on ln that admits what g admits.
func serve(ln net.Listener, g gate) *endpoint {
	e := &endpoint{ln: ln, gate: g, open: map[net.Conn]struct{}{}, bySource: map[string]int{}, servedBy: map[string]int{}}
	e.wg.Add(1)
	go e.accept()
	return e
}

// Port is the port the endpoint listens on.
func (e *endpoint) Port() int { return e.ln.Addr().(*net.TCPAddr).Port }

func (e *endpoint) accept() {
	defer e.wg.Done()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		e.mu.Lock()
		e.open[c] = struct{}{}
		e.pend(c)
		e.mu.Unlock()
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			if op, ok := e.handshake(c); ok {
				handle(c, op)
				e.done(c)
			}
			e.mu.Lock()
			delete(e.open, c)
			e.mu.Unlock()
			c.Close()
		}()
	}
}

// Stats are the endpoint's counts of connections turned away (busy) and
// rejected (not a peer), and why the first rejected one was.
func (e *endpoint) Stats() (turnedAway, rejected int, first error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.turnedAway, e.rejected, e.lastReject
}

// Close stops the endpoint and its connections.
func (e *endpoint) Close() {
	e.ln.Close()
	e.mu.Lock()
	for c := range e.open {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// handle serves one admitted connection.
func handle(c net.Conn, op byte) {
	_ = c.SetDeadline(time.Now().Add(connLimit))
	switch op {
	case opPing:
		var b [pingSize]byte
		for {
			if _, err := io.ReadFull(c, b[:]); err != nil {
				return
			}
			if _, err := c.Write(b[:]); err != nil {
				return
			}
		}
	case opBulk:
		bulk(c)
	}
}

// bulk serves one transfer: after the header (the window, 8 bytes of
// nanoseconds) it counts what arrives from the first byte on, for the
// window at most or until the sender closes its side, answers with the
// count and the time it took (8 bytes each), and reads on until the sender
// is done, so that the answer is never lost to a reset.
func bulk(c net.Conn) {
	var hdr [8]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return
	}
	window := min(max(time.Duration(binary.BigEndian.Uint64(hdr[:])), time.Millisecond), connLimit/4)
	buf := make([]byte, chunk)
	n, err := c.Read(buf)
	t0 := time.Now()
	count := int64(n)
	if err == nil {
		_ = c.SetReadDeadline(t0.Add(window))
		for err == nil {
			n, err = c.Read(buf)
			count += int64(n)
		}
	}
	if err != io.EOF && !errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(count))
	binary.BigEndian.PutUint64(b[8:], uint64(time.Since(t0)))
	_ = c.SetDeadline(time.Now().Add(window + 5*time.Second))
	if _, err := c.Write(b[:]); err == nil {
		_, _ = io.Copy(io.Discard, c)
	}
}

// Dialer connects from this node's address to a peer's endpoint.
type Dialer func(ctx context.Context, local, remote string) (net.Conn, error)

// dialTCP is the Dialer of production: a TCP connect from local.
func dialTCP(ctx context.Context, local, remote string) (net.Conn, error) {
	d := net.Dialer{}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	return d.DialContext(ctx, "tcp", remote)
}

// prober measures this node's directions of its links.
type prober struct {
	self, local string
	dial        Dialer
	conn        ConnectSettings
	bw          *BandwidthSettings // nil: no throughput
	// job, restart and auth seal the hello to a peer's endpoint.
	job     string
	restart uint32
	auth    rendezvous.Authenticator
}

// connect opens a connection to peer's endpoint at remote with up to
// Tries tries, says hello for op and waits for the endpoint's answer; it
// returns the status of the last try and its error (judge.Busy when
// the endpoint turned it away).
func (p *prober) connect(ctx context.Context, peer, remote string, op byte) (net.Conn, judge.Status, error) {
	return p.tries(ctx, remote, func(c net.Conn) error {
		_ = c.SetDeadline(time.Now().Add(p.conn.ConnectTimeout))
		tok, err := p.auth.Seal(binding(p.job, p.restart, p.self, peer, op))
		if err != nil {
			return fmt.Errorf("sealing the hello: %w", err)
		}
		if _, err := c.Write(hello(op, p.self, tok)); err != nil {
			return err
		}
		var r [1]byte
		if _, err := io.ReadFull(c, r[:]); err != nil {
			return err
		}
		if r[0] != replyOK {
			return errBusy
		}
		return nil
	})
}

// reach connects to remote with up to Tries tries, sending nothing. A
// refused connect ends the tries at once: the peer's host answered.
func (p *prober) reach(ctx context.Context, remote string) (net.Conn, judge.Status, error) {
	return p.tries(ctx, remote, nil)
}

// tries dials remote up to Tries times, each within ConnectTimeout, and
// runs then (if any) on the connection; it returns the status of the last
// try and its error.
func (p *prober) tries(ctx context.Context, remote string, then func(net.Conn) error) (net.Conn, judge.Status, error) {
	var err error
	st := judge.Failed
	for try := 0; try < p.conn.Tries && ctx.Err() == nil; try++ {
		cctx, cancel := context.WithTimeout(ctx, p.conn.ConnectTimeout)
		var c net.Conn
		c, err = p.dial(cctx, p.local, remote)
		cancel()
		if err == nil && then != nil {
			if err = then(c); err != nil {
				c.Close()
			}
		}
		if err == nil {
			return c, judge.OK, nil
		}
		if st = statusOf(err); st == judge.Refused && then == nil {
			break
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	return nil, st, err
}

// statusOf classifies a connect error.
func statusOf(err error) judge.Status {
	var ne net.Error
	switch {
	case errors.Is(err, errBusy):
		return judge.Busy
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return judge.Refused
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return judge.TimedOut
	}
	return judge.Failed
}

// ping measures the connect and round-trip time to peer at remote.
func (p *prober) ping(ctx context.Context, peer, remote string) judge.Measurement {
	m := judge.Measurement{From: p.self, To: peer}
	c, st, err := p.connect(ctx, peer, remote, opPing)
	if err != nil {
		m.Status, m.Detail = st, err.Error()
		return m
	}
	defer c.Close()
	var b [pingSize]byte
	for i := 0; i < p.conn.Pings; i++ {
		binary.BigEndian.PutUint64(b[:], uint64(i))
		t0 := time.Now()
		if _, err := c.Write(b[:]); err != nil {
			m.Status, m.Detail = judge.Failed, "ping: "+err.Error()
			return m
		}
		if _, err := io.ReadFull(c, b[:]); err != nil {
			m.Status, m.Detail = statusOf(err), "ping: "+err.Error()
			return m
		}
		if rtt := time.Since(t0); m.RTT == 0 || rtt < m.RTT {
			m.RTT = rtt
		}
	}
	return m
}

// bulk measures the throughput to peer at remote: it sends up to SizeMiB
// for at most Duration; the peer counts what arrives within the window
// and says how long that took, so that data still queued on a slow path
// when the sender stops is not counted as sent.
func (p *prober) bulk(ctx context.Context, peer, remote string) judge.Measurement {
	m := judge.Measurement{From: p.self, To: peer}
	c, st, err := p.connect(ctx, peer, remote, opBulk)
	if err != nil {
		m.Status, m.Detail = st, err.Error()
		return m
	}
	defer c.Close()
	buf := make([]byte, chunk)
	binary.BigEndian.PutUint64(buf[:8], uint64(p.bw.Duration))
	if _, err := c.Write(buf[:8]); err != nil {
		m.Status, m.Detail = judge.Failed, "transfer: "+err.Error()
		return m
	}
	limit := int64(p.bw.SizeMiB) << 20
	stop := time.Now().Add(p.bw.Duration)
	if dl, ok := ctx.Deadline(); ok && dl.Before(stop) {
		stop = dl
	}
	_ = c.SetWriteDeadline(stop)
	for sent := int64(0); sent < limit && time.Now().Before(stop); {
		n, err := c.Write(buf[:min(int64(len(buf)), limit-sent)])
		sent += int64(n)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			m.Status, m.Detail = judge.Failed, "transfer: "+err.Error()
			return m
		}
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetDeadline(time.Now().Add(p.bw.Duration + p.conn.ConnectTimeout + time.Second))
	var b [16]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		m.Status, m.Detail = judge.Failed, "transfer: no count from the peer: "+err.Error()
		return m
	}
	got, took := binary.BigEndian.Uint64(b[:8]), time.Duration(binary.BigEndian.Uint64(b[8:]))
	if took <= 0 {
		took = time.Microsecond
	}
	m.BytesPerSec = float64(got) / took.Seconds()
	return m
}
