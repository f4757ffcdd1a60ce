package rendezvous

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// sendWorkers bounds how many messages the coordinator seals and writes at
// once (MUNGE credentials are made by munged, one request each).
const sendWorkers = 32

// lead is the coordinator's join: listen, accept hellos until all nodes
// joined or the deadline, then send everyone the roster.
func (s *Session) lead(ctx context.Context, deadline time.Time) error {
	addr, err := s.address(ctx, s.cfg.Self)
	if err != nil {
		return fmt.Errorf("rendezvous: coordinator %s: %w", s.cfg.Self, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(s.cfg.Port)))
	if err != nil {
		return fmt.Errorf("rendezvous: coordinator %s: %w", s.cfg.Self, err)
	}
	s.mu.Lock()
	s.ln = ln
	s.peers = map[string]net.Conn{}
	s.pending = map[net.Conn]bool{}
	s.full = make(chan struct{}, 1)
	s.mu.Unlock()
	hellos := map[string]hello{}
	s.wg.Add(1)
	go s.accept(ln, hellos)

	if len(s.nodes) > 1 {
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-s.full:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	// From here on a hello is late: it gets the roster and is closed.
	s.mu.Lock()
	s.joinOver = true
	r := Roster{Coordinator: s.cfg.Self, Members: make([]Member, len(s.nodes))}
	for i, n := range s.nodes {
		m := Member{Name: n}
		switch h, ok := hellos[n]; {
		case n == s.cfg.Self:
			m.Present, m.Addr, m.Offer = true, addr, s.cfg.Offer
		case ok:
			m.Present, m.Addr, m.Offer = true, h.Addr, h.Offer
		}
		r.Members[i] = m
	}
	s.roster = r
	if len(hellos) == 0 {
		s.stats.Joined = time.Since(s.start)
	}
	s.mu.Unlock()
	if absent := r.Absent(); len(absent) > 0 {
		s.absentLog(s.log.WithFields(logrus.Fields{"absent": absent, "present": len(s.nodes) - len(absent)}),
			"rendezvous: nodes did not join by the deadline")
	}
	payload := encodeRoster(r)
	s.scatter(KindRoster, s.label(), payload, nil)
	return nil
}

// allJoined reports whether every node that this meeting waits for has
// joined: all the others for the first coordinator; for a fallback, the
// nodes after it in sorted order (those before it are presumed lost,
// though they may still join while it waits). Called with s.mu held.
func (s *Session) allJoined() bool {
	for _, n := range s.nodes[s.epoch+1:] {
		if _, ok := s.peers[n]; !ok {
			return false
		}
	}
	return true
}

// accept runs until the listener closes. Each connection gets a bounded
// handshake in its own goroutine; more handshakes at once than the job has
// nodes (plus a margin) are refused, so a flood costs at most absent nodes.
func (s *Session) accept(ln net.Listener, hellos map[string]hello) {
	defer s.wg.Done()
	maxPending := len(s.nodes) + 64
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if !closed {
				s.log.WithError(err).Warn("rendezvous: accept failed; no more joins")
			}
			return
		}
		s.mu.Lock()
		s.stats.Accepted++
		if s.closed || len(s.pending) >= maxPending {
			s.mu.Unlock()
			c.Close()
			s.reject(c.RemoteAddr().String(), fmt.Errorf("too many connections in handshake (%d)", maxPending))
			continue
		}
		s.pending[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handshake(c, hellos)
	}
}

// handshake reads one hello within IOTimeout. A valid one joins (replacing
// an earlier link of the same node); after the join deadline it is
// answered with the roster, which lists the node absent.
func (s *Session) handshake(c net.Conn, hellos map[string]hello) {
	defer s.wg.Done()
	keep := false
	defer func() {
		s.mu.Lock()
		delete(s.pending, c)
		s.mu.Unlock()
		if !keep {
			c.Close()
		}
	}()
	peer := c.RemoteAddr().String()
	e, err := s.recv(c, time.Now().Add(s.cfg.IOTimeout), expect{kind: KindHello, label: s.label(), first: true})
	if errors.Is(err, io.EOF) {
		// Closed before a byte: a peer's reachability probe (the
		// cross-node phase probes the port of nodes that did not meet).
		s.log.WithField("peer", peer).Debug("rendezvous: probed")
		return
	}
	if err != nil {
		s.reject(peer, fmt.Errorf("hello: %w", err))
		return
	}
	var h hello
	if err := json.Unmarshal(e.Payload, &h); err != nil {
		s.reject(peer, fmt.Errorf("hello from %s: %w: %v", e.From, ErrUnexpected, err))
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if s.joinOver {
		payload := encodeRoster(s.roster)
		s.mu.Unlock()
		s.log.WithFields(logrus.Fields{"peer": peer, "member": e.From}).Warn("rendezvous: late hello answered with the roster")
		env := s.envelope(KindRoster, e.From, s.label(), payload)
		env.Round = 0
		if err := s.send(c, env, env.Binding()); err != nil {
			s.log.WithError(err).Warn("rendezvous: late roster not sent")
		}
		return
	}
	if old, ok := s.peers[e.From]; ok {
		old.Close()
		s.log.WithFields(logrus.Fields{"peer": peer, "member": e.From}).Warn("rendezvous: node joined again; its new link replaces the old")
	}
	s.peers[e.From] = c
	hellos[e.From] = h
	s.stats.Joined = time.Since(s.start)
	keep = true
	if s.allJoined() {
		select {
		case s.full <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
}

// links returns the current links in node order.
func (s *Session) links() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.peers))
	for n := range s.peers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s *Session) link(name string) net.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peers[name]
}

// leave closes the link of a member that closed it; later rounds skip it.
func (s *Session) leave(name string, c net.Conn) {
	s.mu.Lock()
	if s.peers[name] == c {
		delete(s.peers, name)
		s.left++
	}
	s.mu.Unlock()
	c.Close()
	s.log.WithField("member", name).Info("rendezvous: member closed its link")
}

// drop closes a member's link after a failure; later rounds skip it.
func (s *Session) drop(name string, c net.Conn, err error) {
	s.mu.Lock()
	if s.peers[name] == c {
		delete(s.peers, name)
	}
	s.mu.Unlock()
	c.Close()
	s.log.WithField("member", name).WithError(err).Warn("rendezvous: link dropped")
}

// scatter sends each linked member its payload, sealed for that member,
// with sendWorkers at once: per[name] when per is not nil, else shared
// (hashed once).
func (s *Session) scatter(k Kind, label string, shared []byte, per map[string][]byte) {
	names := s.links()
	sharedSum := sha256.Sum256(shared)
	work := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < sendWorkers && w < len(names); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				c := s.link(name)
				if c == nil {
					continue
				}
				p, sum := shared, sharedSum
				if per != nil {
					p = per[name]
					sum = sha256.Sum256(p)
				}
				e := s.envelope(k, name, label, p)
				if err := s.send(c, e, e.bindingWithSum(sum)); err != nil {
					s.drop(name, c, err)
				}
			}
		}()
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
}

// gather reads each linked member's message of this round.
func (s *Session) gather(label string, payload []byte, deadline time.Time) map[string][]byte {
	names := s.links()
	out := make(map[string][]byte, len(names)+1)
	out[s.cfg.Self] = append([]byte(nil), payload...)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range names {
		c := s.link(name)
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := s.recv(c, deadline, expect{kind: KindGather, round: s.round, label: label, from: name})
			if errors.Is(err, io.EOF) {
				// The member closed its link (its job step ended first):
				// it left, nothing was rejected.
				s.leave(name, c)
				return
			}
			if err != nil {
				s.reject(c.RemoteAddr().String(), fmt.Errorf("gather %q from %s: %w", label, name, err))
				s.drop(name, c, err)
				return
			}
			mu.Lock()
			out[name] = e.Payload
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}
