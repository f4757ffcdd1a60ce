// Package rendezvous lets the prologs (or the watchers) of one Slurm job
// meet without a shared file system: the first node of the job's sorted
// node list coordinates, listens on one TCP port, and every other node
// connects to it once, so a job of N nodes uses N-1 connections. Each
// member says hello with its address and offer; the coordinator answers
// with the roster (who showed up, everyone's address) as soon as all have
// joined or when the join deadline passes, with the missing nodes listed
// absent. Later rounds go over the same connections: Gather brings every
// member's payload to the coordinator, Broadcast and Scatter carry the
// coordinator's word back.
//
// Every message is sealed by an Authenticator (MUNGE in production) over
// its job id, restart count, sender, recipient, kind, round, label and
// the SHA-256 of its payload, and is accepted only with a credential of
// the configured uid (0 for prologs). Anything else on the port (short
// reads, garbage, another job, a replay) is rejected with a log line.
//
// Every error this package returns means the cross-node outcome is
// unknown: never a reason to drain a node. docs/rendezvous.md describes
// the protocol, the port and the failure modes.
package rendezvous

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Errors callers and tests branch on.
var (
	// ErrCoordinatorAbsent: a member could not reach the coordinator
	// within the join deadline (its prolog never showed up).
	ErrCoordinatorAbsent = errors.New("coordinator absent")
	// ErrCoordinatorLost: a member reached the coordinator but got no
	// valid roster or round message from it in time.
	ErrCoordinatorLost = errors.New("coordinator lost")
	// ErrLate: this node joined after the coordinator sent the roster;
	// the others went ahead without it.
	ErrLate = errors.New("joined after the join deadline")
	// ErrWrongJob: a message of another job or another run of this job.
	ErrWrongJob = errors.New("message of another job")
	// ErrUnexpected: a message of the wrong kind, round, label, sender or
	// recipient for where the session stands.
	ErrUnexpected = errors.New("unexpected message")
)

// CoordinatorError says why a member has no outcome from the coordinator.
// It matches ErrCoordinatorAbsent or ErrCoordinatorLost.
type CoordinatorError struct {
	// Coordinator is the coordinator's node name.
	Coordinator string
	// Absent is true when the coordinator was never reached.
	Absent bool
	// Wait is how long this node tried, in the join, or the round's limit.
	Wait time.Duration
	// Err is the last error seen.
	Err error
	// Earlier are the errors of the coordinators tried before this one
	// (Config.Fallbacks), in order.
	Earlier []error
}

func (e *CoordinatorError) Error() string {
	var b strings.Builder
	for _, err := range e.Earlier {
		b.WriteString(strings.TrimPrefix(err.Error(), "unknown: "))
		b.WriteString("; then ")
	}
	if e.Absent {
		fmt.Fprintf(&b, "coordinator %s absent (not reached within %s: %v)", e.Coordinator, e.Wait, e.Err)
	} else {
		fmt.Fprintf(&b, "coordinator %s lost: %v", e.Coordinator, e.Err)
	}
	return "unknown: " + b.String()
}

// Is matches ErrCoordinatorAbsent or ErrCoordinatorLost.
func (e *CoordinatorError) Is(target error) bool {
	return (target == ErrCoordinatorAbsent && e.Absent) || (target == ErrCoordinatorLost && !e.Absent)
}

// Unwrap returns the last error seen.
func (e *CoordinatorError) Unwrap() error { return e.Err }

// Member is one node in the roster.
type Member struct {
	// Name is the node's name.
	Name string
	// Present is true when the node joined in time.
	Present bool
	// Addr is the address the node announced (empty when absent).
	Addr string
	// Offer is what the node brought (Config.Offer).
	Offer []byte
}

// Roster is who showed up, as the coordinator saw it at the join deadline.
// Every node gets the same roster.
type Roster struct {
	// Coordinator is the coordinator's node name.
	Coordinator string
	// Members are all the job's nodes in sorted order.
	Members []Member
}

// Present lists the nodes that joined, in sorted order.
func (r Roster) Present() []string { return r.names(true) }

// Absent lists the nodes that did not join in time, in sorted order.
func (r Roster) Absent() []string { return r.names(false) }

func (r Roster) names(present bool) []string {
	var out []string
	for _, m := range r.Members {
		if m.Present == present {
			out = append(out, m.Name)
		}
	}
	return out
}

// Member returns the roster's entry for a node.
func (r Roster) Member(name string) (Member, bool) {
	for _, m := range r.Members {
		if m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}

// Stats counts what a session did.
type Stats struct {
	// Dials is the number of connection attempts this node made (members).
	Dials int
	// Connected is the number of those attempts that connected.
	Connected int
	// Accepted is the number of connections the coordinator accepted,
	// authenticated or not.
	Accepted int
	// Links is the number of authenticated connections held after the
	// join: 1 for a member, the present members for the coordinator.
	Links int
	// Rejected is the number of messages and connections rejected.
	Rejected int
	// Lookups is the number of name resolutions made (at most 1).
	Lookups int
	// Joined is how long the join took from Meet: on the coordinator until
	// the last member that came joined (or the deadline, when none
	// did); on a member until the roster came.
	Joined time.Duration
}

// hello is a member's KindHello payload.
type hello struct {
	Addr  string `json:"addr"`
	Offer []byte `json:"offer,omitempty"`
}

// Session is one node's side of a rendezvous, from Meet to Close. Its
// rounds (Gather, Broadcast, Scatter) must be called in the same order on
// every node, one at a time; Close may be called at any time.
type Session struct {
	cfg     Config
	nodes   []string
	member  map[string]bool
	coord   string
	log     logrus.FieldLogger
	roster  Roster
	round   uint32
	start   time.Time
	epoch   int     // the meeting: coordinator nodes[epoch]
	earlier []error // the meetings tried before this one

	conn net.Conn // member: the link to the coordinator

	ln       net.Listener // coordinator
	mu       sync.Mutex
	peers    map[string]net.Conn // coordinator: links by node
	pending  map[net.Conn]bool   // coordinator: connections in handshake
	joinOver bool
	full     chan struct{}
	wg       sync.WaitGroup
	stats    Stats
	logged   int
	left     int // coordinator: members that closed their links
	closed   bool
}

// maxRejectLines is how many rejections a session logs one by one; Close
// logs the count of the rest.
const maxRejectLines = 64

// Meet joins the job's rendezvous and returns once this node has the
// roster. The coordinator returns when all nodes have joined or at the
// join deadline; members when the roster arrives. A member that cannot
// reach the coordinator gets a *CoordinatorError matching
// ErrCoordinatorAbsent after Config.Join; one that reached it but got no
// roster, one matching ErrCoordinatorLost after Join+Skew at most.
//
// With Config.Fallbacks, a node that could not meet coordinator k (or
// that coordinated it alone) tries the next one in sorted order, each
// within FallbackJoin; the error then names every coordinator tried.
func Meet(ctx context.Context, cfg Config) (*Session, error) {
	start := time.Now()
	cfg.defaults()
	nodes, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	var earlier []error
	for epoch := 0; ; epoch++ {
		join := cfg.Join
		if epoch > 0 {
			join, start = cfg.FallbackJoin, time.Now()
		}
		s := newSession(cfg, nodes, epoch, start)
		if s.Coordinator() {
			err = s.lead(ctx, start.Add(join))
		} else {
			err = s.join(ctx, start, join)
			s.stats.Joined = time.Since(start)
		}
		// A fallback needs two nodes that may still take part: its
		// coordinator and one after it.
		more := epoch < cfg.Fallbacks && len(nodes)-(epoch+1) >= 2 && ctx.Err() == nil
		var ce *CoordinatorError
		switch {
		case err == nil && (!more || !s.alone()):
			s.earlier = earlier
			return s, nil
		case err == nil:
			s.absentLog(s.log.WithField("epoch", epoch), "rendezvous: no other node met this coordinator; trying the next one")
			earlier = append(earlier, fmt.Errorf("coordinator %s (this node) met nobody within %s", s.coord, join))
			s.Close()
		case more && errors.As(err, &ce):
			s.absentLog(s.log.WithField("epoch", epoch).WithError(err), "rendezvous: trying the next coordinator")
			earlier = append(earlier, err)
			s.Close()
		default:
			s.Close()
			if errors.As(err, &ce) {
				ce.Earlier = earlier
			}
			return nil, err
		}
	}
}

// newSession is this node's session of one meeting: coordinator
// nodes[epoch].
func newSession(cfg Config, nodes []string, epoch int, start time.Time) *Session {
	s := &Session{cfg: cfg, nodes: nodes, coord: nodes[epoch], epoch: epoch, member: map[string]bool{},
		log: cfg.Log.WithFields(logrus.Fields{"job": cfg.Job, "node": cfg.Self}), start: start}
	for _, n := range nodes {
		s.member[n] = true
	}
	return s
}

// alone reports whether this node coordinated a meeting nobody else came
// to.
func (s *Session) alone() bool {
	return s.Coordinator() && len(s.nodes) > 1 && len(s.roster.Present()) == 1
}

// Epoch is the meeting this session belongs to: 0 for the first
// coordinator, k for the k-th fallback.
func (s *Session) Epoch() int { return s.epoch }

// Earlier are the meetings this node tried and could not join before
// this one (empty without fallbacks).
func (s *Session) Earlier() []error { return s.earlier }

// label is the label of this meeting's hellos and roster: empty for the
// first, so that its messages are as they always were.
func (s *Session) label() string {
	if s.epoch == 0 {
		return ""
	}
	return "fallback-" + strconv.Itoa(s.epoch)
}

// Coordinator is true on the coordinating node.
func (s *Session) Coordinator() bool { return s.cfg.Self == s.coord }

// CoordinatorName is the coordinator's node name.
func (s *Session) CoordinatorName() string { return s.coord }

// Port is the port the session's coordinator listens on.
func (s *Session) Port() int { return s.cfg.Port }

// Roster is who joined, the same on every node.
func (s *Session) Roster() Roster { return s.roster }

// Stats returns the session's counters.
func (s *Session) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	if s.Coordinator() {
		st.Links = len(s.peers)
	} else if s.conn != nil {
		st.Links = 1
	}
	return st
}

// Close ends the session: the listener, every link and every handshake in
// progress are closed. It waits for the session's goroutines.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.ln != nil {
		s.ln.Close()
	}
	for _, c := range s.peers {
		c.Close()
	}
	for c := range s.pending {
		c.Close()
	}
	if s.conn != nil {
		s.conn.Close()
	}
	extra := s.stats.Rejected - s.logged
	s.mu.Unlock()
	s.wg.Wait()
	if extra > 0 {
		s.log.WithField("rejected", extra).Warn("rendezvous: more messages rejected than logged one by one")
	}
	return nil
}

// reject counts a rejection and logs it, up to maxRejectLines per session.
func (s *Session) reject(peer string, err error) {
	s.mu.Lock()
	s.stats.Rejected++
	log := s.logged < maxRejectLines
	if log {
		s.logged++
	}
	s.mu.Unlock()
	if log {
		s.log.WithField("peer", peer).WithError(err).Warn("rendezvous: rejected")
	}
}

// address returns a node's address: the override, else one lookup.
func (s *Session) address(ctx context.Context, node string) (string, error) {
	if a, ok := s.cfg.Addrs[node]; ok && a != "" {
		return a, nil
	}
	s.mu.Lock()
	s.stats.Lookups++
	s.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, s.cfg.IOTimeout)
	defer cancel()
	addrs, err := s.cfg.LookupHost(lctx, node)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", node, err)
	}
	if len(addrs) == 0 {
		return "", fmt.Errorf("resolving %s: no address", node)
	}
	return addrs[0], nil
}

// envelope makes an unsealed message from this node.
func (s *Session) envelope(k Kind, to, label string, payload []byte) *Envelope {
	return &Envelope{Kind: k, Round: s.round, Job: s.cfg.Job, Restart: s.cfg.Restart,
		From: s.cfg.Self, To: to, Label: label, Payload: payload}
}

// send seals e over binding and writes it to c.
func (s *Session) send(c net.Conn, e *Envelope, binding []byte) error {
	tok, err := s.cfg.Auth.Seal(binding)
	if err != nil {
		return fmt.Errorf("sealing %s to %s: %w", e.Kind, e.To, err)
	}
	e.Token = tok
	frame, err := e.Frame()
	if err != nil {
		return err
	}
	if len(frame)-4 > s.cfg.MaxMessage {
		return fmt.Errorf("%s to %s: %w: %d bytes, at most %d", e.Kind, e.To, ErrTooLarge, len(frame)-4, s.cfg.MaxMessage)
	}
	c.SetWriteDeadline(time.Now().Add(s.cfg.IOTimeout))
	if _, err := c.Write(frame); err != nil {
		return fmt.Errorf("sending %s to %s: %w", e.Kind, e.To, err)
	}
	return nil
}

// expect is what the next message must be.
type expect struct {
	kind  Kind
	round uint32
	label string
	from  string // "" for any other node of the job
	// first is set for the first message read on a connection that
	// nothing has authenticated yet: its frame is read with at most
	// MaxHello bytes.
	first bool
}

// recv reads one message from c before deadline and verifies it.
func (s *Session) recv(c net.Conn, deadline time.Time, want expect) (*Envelope, error) {
	c.SetReadDeadline(deadline)
	limit := s.cfg.MaxMessage
	if want.first {
		limit = min(limit, MaxHello)
	}
	body, err := ReadFrame(c, limit)
	if err != nil {
		return nil, err
	}
	e, err := Decode(body)
	if err != nil {
		return nil, err
	}
	if err := s.verify(e, want); err != nil {
		return nil, err
	}
	return e, nil
}

// verify checks a decoded message against the session and opens its seal.
// The cheap checks come first, so garbage never reaches munged.
func (s *Session) verify(e *Envelope, want expect) error {
	switch {
	case e.Job != s.cfg.Job || e.Restart != s.cfg.Restart:
		return fmt.Errorf("%w: job %s.%d, want %s.%d", ErrWrongJob, e.Job, e.Restart, s.cfg.Job, s.cfg.Restart)
	case e.To != s.cfg.Self:
		return fmt.Errorf("%w: addressed to %q", ErrUnexpected, e.To)
	case !s.member[e.From] || e.From == s.cfg.Self:
		return fmt.Errorf("%w: sender %q is not another node of the job", ErrUnexpected, e.From)
	case want.from != "" && e.From != want.from:
		return fmt.Errorf("%w: sender %q, want %q", ErrUnexpected, e.From, want.from)
	case e.Kind != want.kind || e.Round != want.round || e.Label != want.label:
		return fmt.Errorf("%w: %s round %d %q, want %s round %d %q", ErrUnexpected,
			e.Kind, e.Round, e.Label, want.kind, want.round, want.label)
	}
	sealed, uid, err := s.cfg.Auth.Open(e.Token)
	if err != nil {
		if !errors.Is(err, ErrAuth) {
			err = fmt.Errorf("%w: %w", ErrAuth, err)
		}
		return fmt.Errorf("seal of %s from %s: %w", e.Kind, e.From, err)
	}
	if uid != s.cfg.UID {
		return fmt.Errorf("%w: %s from %s sealed by uid %d, want %d", ErrAuth, e.Kind, e.From, uid, s.cfg.UID)
	}
	if !bytes.Equal(sealed, e.Binding()) {
		return fmt.Errorf("%w: the seal of %s from %s does not cover this message", ErrAuth, e.Kind, e.From)
	}
	return nil
}

// deadline is ctx's deadline, else now plus the round limit.
func (s *Session) deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(s.cfg.Round)
}

// The roster travels in a compact binary form, since every member gets
// one of O(N) bytes: a 4-byte count (the job's node count), then for each
// node in sorted order a presence byte (0 or 1), a 2-byte address length
// and the address, a 4-byte offer length and the offer. Names are not
// sent: every node knows the sorted node list, and the coordinator is its
// first name.
func encodeRoster(r Roster) []byte {
	n := 4
	for _, m := range r.Members {
		n += 1 + 2 + len(m.Addr) + 4 + len(m.Offer)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Members)))
	for _, m := range r.Members {
		p := byte(0)
		if m.Present {
			p = 1
		}
		b = append(b, p)
		b = binary.BigEndian.AppendUint16(b, uint16(len(m.Addr)))
		b = append(b, m.Addr...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.Offer)))
		b = append(b, m.Offer...)
	}
	return b
}

// decodeRoster reads encodeRoster's form for the given sorted nodes, sent
// by nodes[coord].
func decodeRoster(b []byte, nodes []string, coord int) (Roster, error) {
	bad := func(format string, args ...any) (Roster, error) {
		return Roster{}, fmt.Errorf("%w: roster: %s", ErrUnexpected, fmt.Sprintf(format, args...))
	}
	if len(b) < 4 {
		return bad("%d bytes", len(b))
	}
	if n := binary.BigEndian.Uint32(b); uint64(n) != uint64(len(nodes)) {
		return bad("%d nodes, the job has %d", n, len(nodes))
	}
	r := Roster{Coordinator: nodes[coord], Members: make([]Member, len(nodes))}
	p := b[4:]
	for i, name := range nodes {
		if len(p) < 1 || p[0] > 1 {
			return bad("bad presence of %s", name)
		}
		m := Member{Name: name, Present: p[0] == 1}
		addr, rest, err := take(p[1:], 2)
		if err != nil {
			return bad("address of %s: %v", name, err)
		}
		offer, rest, err := take(rest, 4)
		if err != nil {
			return bad("offer of %s: %v", name, err)
		}
		m.Addr = string(addr)
		if len(offer) > 0 {
			m.Offer = offer
		}
		r.Members[i] = m
		p = rest
	}
	if len(p) != 0 {
		return bad("%d bytes after the last node", len(p))
	}
	if !r.Members[coord].Present {
		return bad("coordinator %s absent from its own roster", nodes[coord])
	}
	return r, nil
}

// absentLog logs that nodes did not take part: a warning, unless the
// meeting is held while the job winds down (Config.Winding).
func (s *Session) absentLog(l logrus.FieldLogger, msg string) {
	if s.cfg.Winding {
		l.Info(msg)
		return
	}
	l.Warn(msg)
}
