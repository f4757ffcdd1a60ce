package coord

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/vigil-hpc/vigil/rendezvous"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// What a node does when the meeting splits: a member that lost its
// coordinator records it, and a coordinator that hears no member stays
// quiet (docs/watch.md, "A coordinator lost is evidence").

// recentlyLost says this node lost its coordinator and its record is not
// yet in the job's view, or went in within the last two periods: until the
// new coordinator's view has it.
func (n *Node) recentlyLost() bool {
	n.mu.Lock()
	pending, at := len(n.lost) > 0, n.lostAt
	n.mu.Unlock()
	return pending || !at.IsZero() && time.Since(at) < 2*n.cfg.Hang.Period
}

// LostRecords returns, once, the records of the coordinators this node
// lost since the last call (trace.StreamLost), read on host for job at at:
// the loop records them and gives them to the job's view, so that the new
// coordinator's digest knows which host stopped answering.
func (n *Node) LostRecords(host, job string, at time.Time) []trace.Sample {
	n.mu.Lock()
	lost := n.lost
	n.lost = nil
	if len(lost) > 0 {
		n.lostAt = time.Now()
	}
	n.mu.Unlock()
	out := make([]trace.Sample, 0, len(lost))
	for _, l := range lost {
		out = append(out, trace.LostRecord(host, job, at, l))
	}
	return out
}

// lostCoordinator is the record of session s's coordinator, silent for
// after: its address as the meeting knew it, and whether that address
// answered a connection to the meeting's port within probeWait.
func lostCoordinator(ctx context.Context, s *rendezvous.Session, after time.Duration) trace.Lost {
	l := trace.Lost{Host: s.CoordinatorName(), AfterS: after.Seconds()}
	if m, ok := s.Roster().Member(l.Host); ok {
		l.Addr = hostOnly(m.Addr)
	}
	l.Unreachable = l.Addr != "" && !answers(ctx, net.JoinHostPort(l.Addr, strconv.Itoa(s.Port())), probeWait)
	return l
}

// hostOnly is addr without its port ("10.0.0.3:7321" → "10.0.0.3").
func hostOnly(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// quiet holds the round's announcements while no member of the meeting
// answered: a coordinator that hears none of its peers may be the side of
// a partition that is cut off, and both sides must not announce the same
// job (the other side, its members, meet again without it and announce).
// Held digests are announced once a member answers again; after the
// takeover's count of deaf rounds this node counts itself cut off and
// announces nothing more: its digests are written to its own disk only.
// members is how many other nodes are in the meeting. With one member,
// its silence is as likely its own node's death as this node's cut, and
// the coordinator announces as before: only the loss of two or more
// members at once reads as this node cut off.
func (n *Node) quiet(outs []Out, members int, sums map[string]Summary) []Out {
	heard := 0
	for host := range sums {
		if host != n.cfg.Self {
			heard++
		}
	}
	deaf := members > 1 && heard == 0
	if !deaf && !n.cutOff {
		if len(n.held) > 0 {
			n.log.WithField("rounds", n.deaf).Info("coordinator: members answer again; the held announcements go out")
			for i := range n.held {
				n.held[i].Notify = true
			}
			outs = append(n.held, outs...)
			n.held = nil
		}
		n.deaf = 0
		return outs
	}
	if deaf {
		n.deaf++
		if n.deaf == 1 {
			n.log.Warn("coordinator: no member answered this round; announcements are held until one does")
		}
		if n.deaf >= n.cfg.Takeover && !n.cutOff {
			n.cutOff = true
			n.log.WithField("rounds", n.deaf).Warn("coordinator: no member answered for the takeover's count of rounds: " +
				"this node is cut off from its peers (or they are all down); their side announces the job's digest, " +
				"this node keeps its own on its disk and announces nothing")
			outs = append(n.held, outs...) // written here, not announced
			n.held = nil
		}
	}
	kept := make([]Out, 0, len(outs))
	for _, o := range outs {
		if _, ok := o.Event.(digest.DigestEvent); ok && o.Notify {
			o.Notify = false
			if !n.cutOff {
				n.held = append(n.held, o)
				continue
			}
		}
		kept = append(kept, o)
	}
	return kept
}

// partition is what a Node keeps of a split meeting.
type partition struct {
	// lost are the coordinators this node lost (no tick for the takeover's
	// wait, without a farewell), not yet recorded (LostRecords); lostAt is
	// when the latest records were taken.
	lost   []trace.Lost
	lostAt time.Time
	// deaf counts, on the coordinator, the rounds in a row in which no
	// member's summary came; held are the digests not announced meanwhile
	// (one side of a partition stays quiet); cutOff is set once deaf
	// reached the takeover's count: this node is cut off from every peer,
	// whose side announces.
	deaf   int
	held   []Out
	cutOff bool
	// alone is set on a member whose coordinator fell silent before the
	// job's end, next in line to speak for it (EndRecords).
	alone bool
}

// atEnd is the coordinator's last outs: not announced when it is cut off
// (the other side announces); else with what it held, since members that
// stopped before it (the job's end) are no partition.
func (n *Node) atEnd(outs []Out) []Out {
	if n.cutOff {
		for i := range outs {
			outs[i].Notify = false
		}
		return outs
	}
	for i := range n.held {
		n.held[i].Notify = true
	}
	outs, n.held = append(n.held, outs...), nil
	return outs
}

// probeWait bounds the connection that tells whether a lost
// coordinator's node answers at all.
const probeWait = 5 * time.Second

// answers says whether the node at addr (host:port) answers a TCP
// connection within wait: accepted or refused, its kernel is there. A
// connection that times out, or whose packets go nowhere, is no answer.
func answers(ctx context.Context, addr string, wait time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}
