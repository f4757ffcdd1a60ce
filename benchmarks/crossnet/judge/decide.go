package judge

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Check names under which culprits are reported (and drained).
const (
	// CheckConnect is the connectivity check; its culprits are nodes the
	// others cannot connect with, or whose round-trip time is high.
	CheckConnect = "net-connect"
	// CheckBandwidth is the throughput check; its culprits are slow nodes.
	CheckBandwidth = "net-bandwidth"
)

// Reason tokens of culprits (the stable part; Culprit.Message is for
// people).
const (
	// ReasonUnreachable: the node's links are bad with peers that work with
	// the rest of the job.
	ReasonUnreachable = "NetUnreachable"
	// ReasonBandwidthLow: the node's throughput is low with most of its
	// peers, and its median is far below the job's.
	ReasonBandwidthLow = "NetBandwidthLow"
	// ReasonLatencyHigh: the node's round-trip time is high with most of
	// its peers, and its median is far above the job's.
	ReasonLatencyHigh = "NetLatencyHigh"
)

// Options are the thresholds of Decide. A zero field takes its default
// (DefaultOptions); Validate says which values are allowed.
type Options struct {
	// BadShare: a node is a culprit only when more than this share of its
	// links are bad (default 0.5: most of them), 0 < BadShare < 1.
	BadShare float64
	// Witnesses is how many distinct peers that work with others must have
	// failed with a node before it is a culprit (default 2), at least 1.
	Witnesses int
	// SlowFraction: a node is slow when its median throughput is below
	// this fraction of the job's median, and most of its links are below
	// this fraction of the median link (default 0.5), 0 < SlowFraction < 1.
	SlowFraction float64
	// LatencyFactor: a node's round-trip time is high when its median is
	// above this multiple of the job's median, and so are most of its
	// links against the median link (default 2), LatencyFactor > 1.
	LatencyFactor float64
	// LatencySlack is the floor of a high round-trip time: how far above
	// the median, in addition to LatencyFactor, it must be to count
	// (default 10ms), 0 or more. Round-trip times of best-of-5 pings on
	// loopback with every CPU busy reached 2.3 ms (p99 1.4 ms, median
	// 34µs; docs/prolog.md): scheduling delay, not the network. A path
	// with retransmissions (200 ms RTO), a wrong route or a saturated
	// queue is far above the floor.
	LatencySlack time.Duration
	// MaxNames is how many peer names a culprit's message lists before
	// "+N more" (default 5), at least 1.
	MaxNames int
}

// DefaultOptions returns the thresholds Decide uses for zero fields.
func DefaultOptions() Options {
	return Options{BadShare: 0.5, Witnesses: 2, SlowFraction: 0.5, LatencyFactor: 2, LatencySlack: 10 * time.Millisecond, MaxNames: 5}
}

// withDefaults fills the zero fields of o from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.BadShare == 0 {
		o.BadShare = d.BadShare
	}
	if o.Witnesses == 0 {
		o.Witnesses = d.Witnesses
	}
	if o.SlowFraction == 0 {
		o.SlowFraction = d.SlowFraction
	}
	if o.LatencyFactor == 0 {
		o.LatencyFactor = d.LatencyFactor
	}
	if o.LatencySlack == 0 {
		o.LatencySlack = d.LatencySlack
	}
	if o.MaxNames == 0 {
		o.MaxNames = d.MaxNames
	}
	return o
}

// Validate returns an error wrapping ErrInvalidNodes naming the first field
// of o (after defaults) that is out of range.
func (o Options) Validate() error {
	o = o.withDefaults()
	switch {
	case !(o.BadShare > 0 && o.BadShare < 1):
		return fmt.Errorf("%w: BadShare %v, want more than 0 and less than 1", ErrInvalidNodes, o.BadShare)
	case o.Witnesses < 1:
		return fmt.Errorf("%w: Witnesses %d, want 1 or more", ErrInvalidNodes, o.Witnesses)
	case !(o.SlowFraction > 0 && o.SlowFraction < 1):
		return fmt.Errorf("%w: SlowFraction %v, want more than 0 and less than 1", ErrInvalidNodes, o.SlowFraction)
	case !(o.LatencyFactor > 1):
		return fmt.Errorf("%w: LatencyFactor %v, want more than 1", ErrInvalidNodes, o.LatencyFactor)
	case o.LatencySlack < 0:
		return fmt.Errorf("%w: LatencySlack %v, want 0 or more", ErrInvalidNodes, o.LatencySlack)
	case o.MaxNames < 1:
		return fmt.Errorf("%w: MaxNames %d, want 1 or more", ErrInvalidNodes, o.MaxNames)
	}
	return nil
}

// Input is what Decide judges.
type Input struct {
	// Nodes are the job's nodes, in the job's order (the order Plan was
	// given); outputs list nodes in this order.
	Nodes []string
	// Absent are nodes of Nodes that never showed up at the rendezvous:
	// listed in Verdict.Absent. They measure nothing, but the present
	// nodes' probes of them (Measurements to an absent node in round one)
	// judge them like any other node: an absent node that none of its
	// probing peers could connect to is a culprit like a dead node that
	// met. An absent node without probes is no evidence against anyone.
	Absent []string
	// Measurements are every directed measurement of round one and, on
	// the second call, of round two.
	Measurements []Measurement
	// Options are the thresholds; zero fields take their defaults.
	Options Options
}

// LinkState says what a bad link means for its ends.
type LinkState string

// The states of a bad link.
const (
	// LinkBlamed: at least one end is a culprit (BadLink.Blame).
	LinkBlamed LinkState = "blamed"
	// LinkRetest: the ends cannot be told apart yet; Verdict.Retests
	// re-tests each against a known-good peer.
	LinkRetest LinkState = "retest"
	// LinkFault: the re-test showed both ends working with known-good
	// peers: a bad link, neither end at fault. Reported, nobody drained.
	LinkFault LinkState = "link-fault"
	// LinkUndecided: the ends cannot be told apart, and no re-test can or
	// did settle it (no known-good peer, a re-test missing or contradicted
	// by a failing peer). Reported, nobody drained, both ends unknown.
	LinkUndecided LinkState = "undecided"
)

// BadLink is one link with a failed direction, for the report.
type BadLink struct {
	A, B  string // the ends, A before B in node order
	Round int    // RoundPlan or RoundRetest: the round it was measured in
	State LinkState
	// Blame lists the ends that are culprits (in node order); empty unless
	// State is LinkBlamed.
	Blame []string
	// Measurements are the link's measurements of that round, both
	// directions, as given.
	Measurements []Measurement
}

// Culprit is a node the evidence points at, under one check.
type Culprit struct {
	Node   string
	Check  string // CheckConnect or CheckBandwidth
	Reason string // ReasonUnreachable, ReasonBandwidthLow or ReasonLatencyHigh
	// Message is short and names the peers, for the drain reason:
	// "unreachable from n3,n7,n9", "2.1 Gb/s, job median 9.4 Gb/s, slow
	// with 5 of 6 peers".
	Message string
	// Round is the round whose measurements pinned the node: RoundPlan, or
	// RoundRetest when the re-test did.
	Round int
	// Value is the node's median: bytes per second for ReasonBandwidthLow,
	// seconds for ReasonLatencyHigh; 0 for ReasonUnreachable.
	Value float64
	// JobMedian is the job's median of the nodes' medians, in Value's
	// unit; 0 for ReasonUnreachable.
	JobMedian float64
	// Peers is how many peers the node was measured with in round one.
	Peers int
	// BadPeers is how many of its peers (both rounds) are against it: bad
	// links, or slow ones.
	BadPeers int
	// Against are the measurements of the links against the node.
	Against []Measurement
}

// Text returns the check and the message, "net-connect unreachable from
// n3,n7,n9", for a drain reason after "vigil: ".
func (c Culprit) Text() string { return c.Check + " " + c.Message }

// Verdict is what Decide found.
type Verdict struct {
	// BadLinks are every link with a failed direction, round one first,
	// then in node order: all of them, culprit or not.
	BadLinks []BadLink
	// Culprits are the nodes the evidence points at, in node order; a node
	// may appear once per reason.
	Culprits []Culprit
	// Retests are the links to measure in round two (both directions, with
	// Round RoundRetest), then to call Decide again with all measurements.
	// Empty when nothing needs a re-test, and always on the second call.
	Retests []Link
	// RetestThroughput are the links whose throughput to measure again in
	// round two (a transfer each way): the slow links of a node slow in
	// round one, which is a culprit only when the repeat agrees.
	RetestThroughput []Link
	// Warnings are nodes slow in one round only: round one's suspects
	// before the re-test, and those whose re-test did not agree. They are
	// reported, never drained.
	Warnings []Culprit
	// Absent are the nodes that never showed up, as given, in node order.
	Absent []string
	// Unmeasured are nodes present but with no measured link.
	Unmeasured []string
	// Busy are the present nodes whose measurement endpoint turned a peer
	// away on every try of a direction (full of connections that were not
	// the job's), in node order. They are in Unknown unless other evidence
	// makes them culprits.
	Busy []string
	// Unknown are the present nodes that cannot be told yet or at all: an
	// end of a link in LinkRetest or LinkUndecided, an unmeasured node, or
	// a node with no working link that is not a culprit. In node order.
	Unknown []string
	// Ignored counts measurements left out: naming a node outside Nodes or
	// an absent one, or the same node at both ends.
	Ignored int
	// JobBytesPerSec is the job's median of the nodes' median throughput,
	// in bytes per second; 0 when no throughput was measured.
	JobBytesPerSec float64
	// JobRTT is the job's median of the nodes' median round-trip time; 0
	// when none was measured.
	JobRTT time.Duration
}

// Outcome is a node's result from the cross-node checks.
type Outcome string

// The outcomes, as everywhere in vigil: only OutcomeFail drains.
const (
	OutcomePass    Outcome = "pass"
	OutcomeFail    Outcome = "fail"
	OutcomeUnknown Outcome = "unknown"
)

// CulpritsOf returns the culprits entries of node (none for a node that is
// not a culprit).
func (v Verdict) CulpritsOf(node string) []Culprit {
	var out []Culprit
	for _, c := range v.Culprits {
		if c.Node == node {
			out = append(out, c)
		}
	}
	return out
}

// Decide judges the job's nodes from the measurements of round one and,
// on the second call, round two. The rules (docs/prolog.md, "Across
// nodes: the culprit rule"):
//
// Connectivity. A link is bad when a measured direction failed (every try
// of it); a link measured one way only is judged by that way. A peer
// vouches against node n when its link with n is bad while, apart from n,
// it has at least one good link and no more than BadShare of its links
// bad. Round one: n is a culprit when more than BadShare of its links are
// bad and at least Witnesses peers vouch against it (a dead node: all its
// links bad, its peers fine with the rest). A bad link neither of whose
// ends is a culprit is ambiguous: Decide picks one known-good peer g (a
// node with no bad link, preferring one that is not already a peer of
// either end) and asks to re-test both ends with g. Round two: a re-test
// peer is proven when it has a good re-test link; an end that failed with a
// proven peer has that peer as a witness, and an end whose re-tests all
// worked is cleared and is a witness against the other end. An end with
// Witnesses witnesses is a culprit; a link both of whose ends are cleared
// is LinkFault (neither end at fault); anything else is LinkUndecided.
// Asymmetric loss (A to B fails, B to A works) is one bad link against both
// ends: a connect that works one way shows the path works, so direction
// does not say which end is at fault; the other links and the re-test do.
// Direction only shapes the message ("unreachable from" for failures
// towards the culprit, "cannot reach" for failures from it, "no link with"
// for both).
//
// Throughput and latency (round one, links with no failed direction). A
// link's value is its worse measured direction; a node's score is the
// median over its links; the job's median is over the nodes' scores. A
// node is slow when it has at least 2 such links, its score is below
// SlowFraction of the job's median, and more than half of its links are
// below SlowFraction of the median link; for round-trip time, above
// LatencyFactor times (and LatencySlack beyond) the medians. So a node
// paired with one slow node is not slow: only one of its links is.
//
// Decide returns an error wrapping ErrInvalidNodes for an empty or
// duplicate node name, an absent node not in Nodes, or invalid Options.
func Decide(in Input) (Verdict, error) {
	if err := in.Options.Validate(); err != nil {
		return Verdict{}, err
	}
	opt := in.Options.withDefaults()
	idx, err := indexNodes(in.Nodes)
	if err != nil {
		return Verdict{}, err
	}
	absent := make([]bool, len(in.Nodes))
	for _, a := range in.Absent {
		i, ok := idx[a]
		if !ok {
			return Verdict{}, fmt.Errorf("%w: absent node %q is not one of the job's nodes", ErrInvalidNodes, a)
		}
		absent[i] = true
	}
	r1, r2, ignored := newRounds(idx, absent, in.Measurements)
	j := judge{names: in.Nodes, idx: idx, opt: opt, absent: absent, r1: r1, r2: r2, second: len(r2.order) > 0,
		busy: busyNodes(idx, in.Measurements)}
	v := Verdict{Ignored: ignored}
	j.connectivity(&v)
	j.performance(&v)
	j.listNodes(&v)
	sortCulprits(v.Culprits, idx)
	return v, nil
}

// judge holds one Decide call's state.
type judge struct {
	names  []string
	idx    map[string]int
	opt    Options
	absent []bool
	r1, r2 round
	second bool   // round two's measurements are in
	busy   []bool // endpoints that turned a peer away (busyNodes)
}

// listNodes fills the absent, unmeasured and unknown nodes of v.
func (j *judge) listNodes(v *Verdict) {
	culprit := make([]bool, len(j.names))
	for _, c := range v.Culprits {
		culprit[j.idx[c.Node]] = true
	}
	unknown := make([]bool, len(j.names))
	for _, l := range v.BadLinks {
		if l.State == LinkRetest || l.State == LinkUndecided {
			unknown[j.idx[l.A]] = true
			unknown[j.idx[l.B]] = true
		}
	}
	for _, l := range v.BadLinks {
		if l.State == LinkUndecided && (j.absent[j.idx[l.A]] || j.absent[j.idx[l.B]]) {
			// One bad link with an absent node leaves the present end
			// as its other links say.
			unknown[j.idx[l.A]], unknown[j.idx[l.B]] = j.absent[j.idx[l.A]], j.absent[j.idx[l.B]]
		}
	}
	for i, name := range j.names {
		switch {
		case j.absent[i]:
			v.Absent = append(v.Absent, name)
			continue
		case len(j.r1.adj[i]) == 0 && len(j.r2.adj[i]) == 0:
			v.Unmeasured = append(v.Unmeasured, name)
			unknown[i] = true
		case !hasGood(j.r1.adj[i]) && !hasGood(j.r2.adj[i]):
			unknown[i] = true
		}
		if j.busy[i] {
			v.Busy = append(v.Busy, name)
			unknown[i] = true
		}
		if unknown[i] && !culprit[i] {
			v.Unknown = append(v.Unknown, name)
		}
	}
}

// hasGood reports whether any of links works.
func hasGood(links []*pair) bool {
	return slices.ContainsFunc(links, func(p *pair) bool { return !p.bad() })
}

// sortCulprits orders culprits by node, then by check and reason.
func sortCulprits(cs []Culprit, idx map[string]int) {
	slices.SortStableFunc(cs, func(a, b Culprit) int {
		if d := idx[a.Node] - idx[b.Node]; d != 0 {
			return d
		}
		if d := strings.Compare(a.Check, b.Check); d != 0 {
			return d
		}
		return strings.Compare(a.Reason, b.Reason)
	})
}
