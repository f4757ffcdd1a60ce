package rendezvous

import (
	"context"
	"fmt"
	"net"
	"sort"
	"time"

	"github.com/sirupsen/logrus"
)

// Defaults applied by Meet to zero fields of Config.
const (
	// DefaultJoin is how long the coordinator waits for the others.
	DefaultJoin = 10 * time.Second
	// DefaultSkew is how much later than a member the coordinator's
	// prolog may start.
	DefaultSkew = 5 * time.Second
	// DefaultIOTimeout bounds the reading or writing of one message.
	DefaultIOTimeout = 5 * time.Second
	// DefaultRound bounds a Gather, Broadcast or Scatter whose context
	// has no deadline.
	DefaultRound = 30 * time.Second
)

// Config is one node's part in a rendezvous. Every node of the job must be
// given the same Job, Restart, Nodes and Port.
type Config struct {
	// Job is the job id (SLURM_JOB_ID).
	Job string
	// Restart is the job's restart count (SLURM_JOB_RESTART_COUNT).
	Restart uint32
	// Self is this node's name (SLURMD_NODENAME).
	Self string
	// Nodes are the job's nodes (SLURM_JOB_NODELIST expanded with
	// hostlist.Expand), in any order. The coordinator is the first
	// name in sorted order.
	Nodes []string
	// Port is the coordinator's TCP port: the same on every node.
	Port int
	// Addrs maps node names to addresses (IP or host), overriding name
	// resolution; tests and sites without DNS for node names use it.
	Addrs map[string]string
	// LookupHost resolves a node name (default net.DefaultResolver's).
	// A node resolves one name at most: the coordinator's (the
	// coordinator resolves its own, to listen on it).
	LookupHost func(ctx context.Context, host string) ([]string, error)
	// LocalAddr is the source address members dial from; empty lets the
	// kernel choose.
	LocalAddr string
	// Dial connects from local (LocalAddr) to remote ("host:port"); nil
	// means TCP. Tests put a fabric with faults here.
	Dial func(ctx context.Context, local, remote string) (net.Conn, error)
	// Advertise is the address a member announces in its hello; empty
	// means the local address of its connection to the coordinator.
	Advertise string
	// Auth seals and opens every message.
	Auth Authenticator
	// UID is the uid every credential must carry: 0 for prologs, the
	// job's uid for watchers.
	UID uint32
	// Join is how long, from Meet, the coordinator waits for the others
	// before it sends the roster with the missing ones absent (default
	// DefaultJoin). Members try to reach the coordinator for as long.
	Join time.Duration
	// Skew is how much later than a member the coordinator may start:
	// members wait for the roster until Join+Skew after their Meet
	// (default DefaultSkew).
	Skew time.Duration
	// IOTimeout bounds reading one message once a peer is expected to
	// send it, and writing one (default DefaultIOTimeout).
	IOTimeout time.Duration
	// Round bounds a Gather, Broadcast or Scatter whose context has no
	// deadline (default DefaultRound).
	Round time.Duration
	// Fallbacks is how many fallback coordinators are tried, in sorted
	// order after the first, when this node could not meet the one before
	// it (0: none, the default). A node that could not reach coordinator
	// k, or that coordinated k alone, joins k+1; node k+1 leads the next
	// meeting when it could not meet k itself. So one dead node, the
	// coordinator included, leaves the others a meeting. Fallbacks are
	// tried only while at least two nodes can still take part.
	Fallbacks int
	// FallbackJoin is how long a fallback coordinator waits for the
	// others, and a member tries to reach it (default Join/2, at least
	// one second).
	FallbackJoin time.Duration
	// MaxMessage is the largest message body accepted, in bytes (default
	// DefaultMaxMessage, at most HardMaxMessage).
	MaxMessage int
	// Offer is what this node brings, sent in its hello and listed in the
	// roster (a port it listens on for a check, its devices): at most
	// MaxOffer bytes.
	Offer []byte
	// Log receives one line per rejected message and per absent node
	// (default logrus' standard logger).
	Log logrus.FieldLogger
	// Winding is set for a meeting held while the job's nodes may be
	// stopping (a takeover after the coordinator said it stops, as every
	// watcher does when the job ends): nodes that do not join are then
	// expected, and logged at Info rather than Warn.
	Winding bool
}

func (c *Config) defaults() {
	if c.LookupHost == nil {
		c.LookupHost = net.DefaultResolver.LookupHost
	}
	if c.Join == 0 {
		c.Join = DefaultJoin
	}
	if c.Skew == 0 {
		c.Skew = DefaultSkew
	}
	if c.IOTimeout == 0 {
		c.IOTimeout = DefaultIOTimeout
	}
	if c.Round == 0 {
		c.Round = DefaultRound
	}
	if c.FallbackJoin == 0 {
		c.FallbackJoin = max(c.Join/2, time.Second)
	}
	if c.MaxMessage == 0 {
		c.MaxMessage = DefaultMaxMessage
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger()
	}
}

// validate checks c after defaults and returns the sorted, distinct nodes.
func (c *Config) validate() ([]string, error) {
	switch {
	case c.Job == "" || len(c.Job) > MaxJob:
		return nil, fmt.Errorf("rendezvous: job id %q: 1 to %d bytes", c.Job, MaxJob)
	case len(c.Nodes) == 0:
		return nil, fmt.Errorf("rendezvous: no nodes")
	case c.Port <= 0 || c.Port > 65535:
		return nil, fmt.Errorf("rendezvous: port %d out of range 1-65535", c.Port)
	case c.Auth == nil:
		return nil, fmt.Errorf("rendezvous: no authenticator")
	case c.MaxMessage < minBody || c.MaxMessage > HardMaxMessage:
		return nil, fmt.Errorf("rendezvous: MaxMessage %d out of range %d-%d", c.MaxMessage, minBody, HardMaxMessage)
	case c.Join < 0 || c.Skew < 0 || c.IOTimeout < 0 || c.Round < 0 || c.FallbackJoin < 0:
		return nil, fmt.Errorf("rendezvous: negative duration")
	case c.Fallbacks < 0 || c.Fallbacks > MaxFallbacks:
		return nil, fmt.Errorf("rendezvous: %d fallback coordinators, want 0 to %d", c.Fallbacks, MaxFallbacks)
	case len(c.Offer) > min(c.MaxMessage/4, MaxOffer):
		return nil, fmt.Errorf("rendezvous: offer of %d bytes, at most %d", len(c.Offer), min(c.MaxMessage/4, MaxOffer))
	}
	nodes := append([]string(nil), c.Nodes...)
	sort.Strings(nodes)
	out := nodes[:0]
	self := false
	for i, n := range nodes {
		if n == "" || len(n) > MaxNode {
			return nil, fmt.Errorf("rendezvous: node name %q: 1 to %d bytes", n, MaxNode)
		}
		if i > 0 && n == nodes[i-1] {
			continue
		}
		self = self || n == c.Self
		out = append(out, n)
	}
	if !self {
		return nil, fmt.Errorf("rendezvous: this node %q is not among the job's nodes", c.Self)
	}
	return out, nil
}

// MaxFallbacks bounds Config.Fallbacks: each fallback costs a
// FallbackJoin on the nodes that need it.
const MaxFallbacks = 4

// Coordinator returns the coordinator of a job's nodes: the first name in
// sorted order, so that every node picks the same one without talking.
func Coordinator(nodes []string) string {
	if len(nodes) == 0 {
		return ""
	}
	first := nodes[0]
	for _, n := range nodes[1:] {
		if n < first {
			first = n
		}
	}
	return first
}
