package crossnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/vigil-hpc/vigil/rendezvous"
)

// Admission to the measurement endpoint. Any process on any node can
// connect to the endpoint's port, so a connection is served only once it
// has shown a seal (MUNGE in production) of uid 0 for this job, run and
// endpoint: the job's prologs. Until then it is pending, under a short
// deadline, and pending connections are capped per source address and in
// all; a connection over a cap takes the place of the oldest pending one
// of the source that holds the most, so strangers cannot keep the job's
// peers out for longer than one handshake. A connection turned away is
// told so (replyBusy) before it is closed: the peer records the endpoint
// as busy, which leaves the node unknown (benchmarks.ReasonEndpointBusy), never a
// failed link.
const (
	// replyOK and replyBusy answer a connection's handshake.
	replyOK   = 'k'
	replyBusy = 'B'
	// authLimit bounds a pending connection's handshake.
	authLimit = 2 * time.Second
	// maxPending and maxPendingPerSource cap the connections not yet
	// admitted, in all and per source address.
	maxPending          = 32
	maxPendingPerSource = 4
	// maxPerSource caps the admitted connections from one address (a
	// peer opens one at a time per link; re-tries and a re-test round
	// add a few).
	maxPerSource = 8
	// sealTag starts every binding of the endpoint's seals, so that a
	// seal made for the rendezvous or anything else never admits.
	sealTag = "vigil-crossnet\x00"
)

// gate is what the endpoint admits: seals of uid 0 for this job and run,
// sent by another node of the job to this one.
type gate struct {
	job     string
	restart uint32
	self    string
	nodes   map[string]bool
	auth    rendezvous.Authenticator
}

// binding is what a connection's seal covers: the tag, the job, the run,
// the sender, the recipient and the operation.
func binding(job string, restart uint32, from, to string, op byte) []byte {
	b := append([]byte(sealTag), job...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, restart)
	b = append(append(b, from...), 0)
	b = append(append(b, to...), 0)
	return append(b, op)
}

// hello is what a peer sends first: the operation, its name, and the seal
// of the binding (each a 2-byte length, then the bytes, but the op).
func hello(op byte, from string, token []byte) []byte {
	b := []byte{op}
	b = binary.BigEndian.AppendUint16(b, uint16(len(from)))
	b = append(b, from...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(token)))
	return append(b, token...)
}

// errBusy is what a peer's endpoint answered when it turned the
// connection away.
var errBusy = errors.New("the peer's measurement endpoint is busy with other connections")

// readHello reads a hello of at most rendezvous.MaxNode and
// rendezvous.MaxToken bytes, allocating no more than it reads.
func readHello(r io.Reader) (op byte, from string, token []byte, err error) {
	var hdr [3]byte
	if _, err = io.ReadFull(r, hdr[:]); err != nil {
		return 0, "", nil, err
	}
	op = hdr[0]
	n := int(binary.BigEndian.Uint16(hdr[1:]))
	if n == 0 || n > rendezvous.MaxNode {
		return 0, "", nil, fmt.Errorf("sender name of %d bytes", n)
	}
	name := make([]byte, n+2)
	if _, err = io.ReadFull(r, name); err != nil {
		return 0, "", nil, err
	}
	t := int(binary.BigEndian.Uint16(name[n:]))
	if t == 0 || t > rendezvous.MaxToken {
		return 0, "", nil, fmt.Errorf("seal of %d bytes", t)
	}
	token = make([]byte, t)
	if _, err = io.ReadFull(r, token); err != nil {
		return 0, "", nil, err
	}
	return op, string(name[:n]), token, nil
}

// admit checks a hello against the gate.
func (g *gate) admit(op byte, from string, token []byte) error {
	if op != opPing && op != opBulk {
		return fmt.Errorf("unknown operation %q", op)
	}
	if !g.nodes[from] || from == g.self {
		return fmt.Errorf("sender %q is not another node of the job", from)
	}
	sealed, uid, err := g.auth.Open(token)
	switch {
	case err != nil:
		return fmt.Errorf("seal of %s: %w", from, err)
	case uid != 0:
		return fmt.Errorf("seal of %s made by uid %d, want 0", from, uid)
	case !bytes.Equal(sealed, binding(g.job, g.restart, from, g.self, op)):
		return fmt.Errorf("the seal of %s is not for this job, run, node and operation", from)
	}
	return nil
}

// sourceOf is the address part of a connection's remote address.
func sourceOf(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.RemoteAddr().String()
}

// pend records c as pending; when a cap is reached, the oldest pending
// connection of the source with the most (c's own when it is over its
// source's cap) is turned away. Called with e.mu held.
func (e *endpoint) pend(c net.Conn) {
	src := sourceOf(c)
	e.pending = append(e.pending, pendingConn{c: c, src: src})
	e.bySource[src]++
	if e.bySource[src] > maxPendingPerSource {
		e.evict(src)
	} else if len(e.pending) > maxPending {
		most := src
		for s, n := range e.bySource {
			if n > e.bySource[most] {
				most = s
			}
		}
		e.evict(most)
	}
}

// evict turns away the oldest pending connection of src. Called with
// e.mu held.
func (e *endpoint) evict(src string) {
	for i, p := range e.pending {
		if p.src == src {
			e.unpend(i)
			e.turnedAway++
			_ = p.c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_, _ = p.c.Write([]byte{replyBusy})
			p.c.Close()
			return
		}
	}
}

// unpend removes pending entry i. Called with e.mu held.
func (e *endpoint) unpend(i int) {
	p := e.pending[i]
	e.pending = append(e.pending[:i], e.pending[i+1:]...)
	if e.bySource[p.src]--; e.bySource[p.src] <= 0 {
		delete(e.bySource, p.src)
	}
}

// pendingConn is a connection not yet admitted.
type pendingConn struct {
	c   net.Conn
	src string
}

// settle ends c's pending state: found is false when c was turned away
// meanwhile; serve is whether an admitted c may be served, its source
// under maxPerSource and the endpoint under maxConns.
func (e *endpoint) settle(c net.Conn, admitted bool) (found, serve bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, p := range e.pending {
		if p.c == c {
			e.unpend(i)
			found = true
			break
		}
	}
	if !found || !admitted {
		return found, false
	}
	src := sourceOf(c)
	if e.served >= maxConns || e.servedBy[src] >= maxPerSource {
		e.turnedAway++
		return true, false
	}
	e.served++
	e.servedBy[src]++
	return true, true
}

// done releases an admitted connection's place.
func (e *endpoint) done(c net.Conn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	src := sourceOf(c)
	e.served--
	if e.servedBy[src]--; e.servedBy[src] <= 0 {
		delete(e.servedBy, src)
	}
}

// handshake reads c's hello under authLimit and answers it: replyOK and
// the operation to serve, or false (after replyBusy where the caps turned
// a genuine peer away, so that it records the endpoint as busy).
func (e *endpoint) handshake(c net.Conn) (byte, bool) {
	_ = c.SetDeadline(time.Now().Add(authLimit))
	op, from, token, err := readHello(c)
	if err == nil {
		err = e.gate.admit(op, from, token)
	}
	if err != nil {
		if found, _ := e.settle(c, false); !found {
			return 0, false // turned away: its read failed for that
		}
		e.mu.Lock()
		e.rejected++
		if e.lastReject == nil {
			e.lastReject = fmt.Errorf("%s: %w", c.RemoteAddr(), err)
		}
		e.mu.Unlock()
		return 0, false
	}
	if _, serve := e.settle(c, true); !serve {
		_, _ = c.Write([]byte{replyBusy})
		return 0, false
	}
	if _, err := c.Write([]byte{replyOK}); err != nil {
		e.done(c)
		return 0, false
	}
	return op, true
}

// prober is this node's prober, dialling from local.
func (p Phase) prober(local string) *prober {
	return &prober{self: p.Self, local: local, dial: p.Dial, conn: p.Connect, job: p.Job, restart: p.Restart, auth: p.Auth}
}

// closeEndpoint closes the endpoint and logs the connections it turned
// away or rejected: a stranger's on the port.
func (p Phase) closeEndpoint(ep *endpoint) {
	ep.Close()
	busy, rejected, first := ep.Stats()
	if busy+rejected > 0 {
		p.Log.WithFields(map[string]any{"turned_away": busy, "rejected": rejected, "first": fmt.Sprint(first)}).
			Warn("cross-node: connections to the measurement endpoint that were not the job's peers")
	}
}
