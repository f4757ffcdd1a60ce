package rendezvous

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
)

// Dial pacing of a member waiting for the coordinator's prolog to listen.
const (
	firstBackoff = 50 * time.Millisecond
	maxBackoff   = time.Second
	// maxAttempts bounds the dial loop whatever the clock does.
	maxAttempts = 1000
)

// join is a member's side of the join: reach the coordinator, say hello,
// and wait for the roster. Failures before a valid roster are retried
// until the join deadline.
func (s *Session) join(ctx context.Context, start time.Time, join time.Duration) error {
	dialUntil := start.Add(join)
	rosterUntil := dialUntil.Add(s.cfg.Skew)
	cerr := &CoordinatorError{Coordinator: s.coord, Absent: true, Wait: join}
	addr, err := s.address(ctx, s.coord)
	if err != nil {
		cerr.Err = err
		return cerr
	}
	target := net.JoinHostPort(addr, strconv.Itoa(s.cfg.Port))
	dial, err := s.dialer()
	if err != nil {
		return err
	}
	backoff := firstBackoff
	for attempt := 0; attempt < maxAttempts; attempt++ {
		now := time.Now()
		if attempt > 0 {
			if !now.Add(backoff).Before(dialUntil) || ctx.Err() != nil {
				break
			}
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			backoff = min(2*backoff, maxBackoff)
			now = time.Now()
		}
		if !now.Before(dialUntil) || ctx.Err() != nil {
			break
		}
		s.mu.Lock()
		s.stats.Dials++
		s.mu.Unlock()
		dctx, cancel := context.WithDeadline(ctx, minTime(dialUntil, now.Add(s.cfg.IOTimeout)))
		c, err := dial(dctx, s.cfg.LocalAddr, target)
		cancel()
		if err != nil {
			cerr.Err = err
			continue
		}
		cerr.Absent = false
		s.mu.Lock()
		s.stats.Connected++
		s.mu.Unlock()
		r, err := s.hello(c, rosterUntil)
		if err != nil {
			c.Close()
			cerr.Err = err
			s.joinFailed(target, err)
			continue
		}
		s.roster = r
		if m, _ := r.Member(s.cfg.Self); !m.Present {
			c.Close()
			return fmt.Errorf("rendezvous: unknown: %s %w (coordinator %s went ahead without it)", s.cfg.Self, ErrLate, s.coord)
		}
		s.mu.Lock()
		closed := s.closed
		s.conn = c
		s.mu.Unlock()
		if closed {
			return fmt.Errorf("rendezvous: closed")
		}
		return nil
	}
	if cerr.Err == nil {
		cerr.Err = ctx.Err()
	}
	if cerr.Err == nil {
		cerr.Err = errors.New("join deadline passed")
	}
	return cerr
}

// dialer is Config.Dial, else TCP from Config.LocalAddr.
func (s *Session) dialer() (func(ctx context.Context, local, remote string) (net.Conn, error), error) {
	if s.cfg.Dial != nil {
		return s.cfg.Dial, nil
	}
	d := net.Dialer{}
	if s.cfg.LocalAddr != "" {
		ip := net.ParseIP(s.cfg.LocalAddr)
		if ip == nil {
			return nil, fmt.Errorf("rendezvous: local address %q is not an IP address", s.cfg.LocalAddr)
		}
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	return func(ctx context.Context, _, remote string) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", remote)
	}, nil
}

// hello sends this node's hello on c and reads the roster.
func (s *Session) hello(c net.Conn, rosterUntil time.Time) (Roster, error) {
	h := hello{Addr: s.cfg.Advertise, Offer: s.cfg.Offer}
	if h.Addr == "" {
		if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
			h.Addr = a.IP.String()
		}
	}
	payload, err := json.Marshal(h)
	if err != nil {
		return Roster{}, err
	}
	e := s.envelope(KindHello, s.coord, s.label(), payload)
	if err := s.send(c, e, e.Binding()); err != nil {
		return Roster{}, err
	}
	r, err := s.recv(c, rosterUntil, expect{kind: KindRoster, from: s.coord, label: s.label()})
	if err != nil {
		return Roster{}, fmt.Errorf("roster: %w", err)
	}
	return decodeRoster(r.Payload, s.nodes, s.epoch)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Gather brings every node's payload of this round to the coordinator.
// On the coordinator it returns the payloads by node, its own included;
// members whose message did not come in time or was rejected are missing
// from the map (and logged), and their links are dropped. On a member it
// sends payload and returns a nil map. ctx's deadline (else Config.Round)
// bounds the wait.
func (s *Session) Gather(ctx context.Context, label string, payload []byte) (map[string][]byte, error) {
	if err := s.startRound(label); err != nil {
		return nil, err
	}
	if s.Coordinator() {
		got := s.gather(label, payload, s.deadline(ctx))
		s.mu.Lock()
		left := s.left
		s.mu.Unlock()
		if missing := len(s.roster.Present()) - len(got) - left; missing > 0 {
			s.log.WithFields(logrus.Fields{"label": label, "missing": missing}).Warn("rendezvous: gather incomplete")
		}
		return got, nil
	}
	e := s.envelope(KindGather, s.coord, label, payload)
	if err := s.send(s.conn, e, e.Binding()); err != nil {
		return nil, &CoordinatorError{Coordinator: s.coord, Err: err}
	}
	return nil, nil
}

// Broadcast gives every node the coordinator's payload: the coordinator
// sends payload and returns it; a member ignores payload and returns what
// the coordinator sent, or a *CoordinatorError matching
// ErrCoordinatorLost when nothing valid came before ctx's deadline (else
// Config.Round).
func (s *Session) Broadcast(ctx context.Context, label string, payload []byte) ([]byte, error) {
	if err := s.startRound(label); err != nil {
		return nil, err
	}
	if s.Coordinator() {
		s.scatter(KindBroadcast, label, payload, nil)
		return payload, nil
	}
	return s.receive(ctx, label)
}

// Scatter gives each node its own payload from the coordinator's map
// (a missing entry is an empty payload). The coordinator returns its own
// entry; a member returns what it was sent, as Broadcast does.
func (s *Session) Scatter(ctx context.Context, label string, payloads map[string][]byte) ([]byte, error) {
	if err := s.startRound(label); err != nil {
		return nil, err
	}
	if s.Coordinator() {
		if payloads == nil {
			payloads = map[string][]byte{}
		}
		s.scatter(KindBroadcast, label, nil, payloads)
		return payloads[s.cfg.Self], nil
	}
	return s.receive(ctx, label)
}

func (s *Session) startRound(label string) error {
	if len(label) > MaxLabel {
		return fmt.Errorf("rendezvous: label of %d bytes, at most %d", len(label), MaxLabel)
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("rendezvous: session closed")
	}
	s.round++
	return nil
}

// receive reads a member's KindBroadcast message of this round.
func (s *Session) receive(ctx context.Context, label string) ([]byte, error) {
	e, err := s.recv(s.conn, s.deadline(ctx), expect{kind: KindBroadcast, round: s.round, label: label, from: s.coord})
	if err != nil {
		s.reject(s.conn.RemoteAddr().String(), fmt.Errorf("%q: %w", label, err))
		return nil, &CoordinatorError{Coordinator: s.coord, Err: err}
	}
	return e.Payload, nil
}

// joinFailed logs a failed hello: a rejection (a warning), unless the peer
// closed the connection before its roster (a coordinator stopping with the
// job, or a port that is not the job's meeting), which is no warning: the
// join goes on, or ends with its error.
func (s *Session) joinFailed(target string, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		s.log.WithField("peer", target).WithError(err).Info("rendezvous: the peer closed the connection before sending the roster")
		return
	}
	s.reject(target, fmt.Errorf("joining: %w", err))
}
