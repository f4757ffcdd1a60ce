package crossnet

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/crossnet/judge"
	"github.com/vigil-hpc/vigil/rendezvous"
)

// Phase is one node's part in the cross-node phase of a job's prologs.
// Every node of the job runs it with the same Job, Restart, Nodes and
// settings.
type Phase struct {
	// Job and Restart are the job id and its restart count.
	Job     string
	Restart uint32
	// Self is this node's name; Nodes are the job's nodes (2 or more).
	Self  string
	Nodes []string
	// Addrs are the nodes' addresses (Slurm's NodeAddr): this node listens
	// and dials from its own, and meets the coordinator at its.
	Addrs map[string]string
	// Checks are the cross-node checks selected: Connect, Bandwidth,
	// registered PeerChecks (rdma-peers) and Collectives
	// (nccl-allreduce-multinode).
	Checks []string
	// Connect shapes the phase; Bandwidth is used when Checks has it.
	Connect   ConnectSettings
	Bandwidth BandwidthSettings
	// Auth seals the rendezvous' messages (MUNGE in production).
	Auth rendezvous.Authenticator
	// Settings decodes the [checks.NAME] section of a check into v, which
	// holds its defaults; nil leaves the defaults.
	Settings func(check string) func(v any) error
	// Libraries decodes the [vendor.NAME] table of a check's vendor into
	// v, which holds the vendor's library defaults; nil leaves the defaults.
	Libraries func(check string) func(v any) error
	// Devices are the job's devices on this node (nil: all), for a
	// benchmarks.CollectiveCheck.
	Devices []int
	// Timeouts bound a benchmarks.CollectiveCheck's own part by check name (none: the
	// phase's deadline).
	Timeouts map[string]time.Duration
	// Dial connects to a peer's endpoint; nil means TCP from Addrs[Self].
	Dial Dialer
	// Listen opens the measurement endpoint's listener on addr
	// ("host:port"); nil means TCP.
	Listen func(addr string) (net.Listener, error)
	// Failing are the local checks that failed on this node before the
	// phase: the coordinator counts them across the job's nodes, so that
	// the guard sees a whole job failing one check at once (Outcome).
	Failing []string
	// Relay carries a meeting's word to the nodes that met none of its
	// nodes (the job's AdminComment in production); nil: none, so a node
	// cut off from every peer ends unknown, never fails.
	Relay Relay
	// Log gets the phase's log lines; nil means logrus' standard logger.
	Log logrus.FieldLogger
}

// ends are the peers' measurement endpoints, "addr:port" by node.
type ends map[string]string

// Outcome is what the phase tells one node.
type Outcome struct {
	// Results has one result per check of Phase.Checks, for this node.
	Results []benchmarks.Result
	// JobFailing lists, per check, the nodes of the job that met and
	// failed it (a local check before the phase, or a cross-node check
	// in it), sorted; nil when this node met nobody.
	JobFailing map[string][]string
	// BadLinks are the job's bad links that blame neither end (a bad
	// link between healthy nodes, or one the measurements could not
	// settle): nobody is drained for them, so they are reported.
	BadLinks []LinkNote
	// Coordinator is set on the node that coordinated the meeting: it
	// alone notifies about the job as a whole.
	Coordinator bool
}

// LinkNote is one bad link of the job, for the report, the metrics and
// the job's comment.
type LinkNote struct {
	A     string `json:"a"`
	B     string `json:"b"`
	State string `json:"state"`
}

// String is "A-B (state)".
func (l LinkNote) String() string { return l.A + "-" + l.B + " (" + l.State + ")" }

// RunJob runs the phase within ctx's deadline. Its Results hold one
// result per check of p.Checks, for this node only, with what the
// coordinator saw of the whole job. Nothing in the meeting itself fails a
// check: a node that cannot meet, measure or hear its outcome gets unknown.
func (p Phase) RunJob(ctx context.Context) Outcome {
	start := time.Now()
	if p.Log == nil {
		p.Log = logrus.StandardLogger()
	}
	if p.Dial == nil {
		p.Dial = dialTCP
	}
	o, err := p.run(ctx, start)
	if err != nil {
		o = Outcome{Results: p.all(benchmarks.StatusUnknown, reasonOf(err), err.Error())}
	}
	for i := range o.Results {
		o.Results[i].Duration = time.Since(start)
		o.Results[i].Attempts = 1
	}
	return o
}

// setupError marks errors before the meeting.
type setupError struct{ error }

func reasonOf(err error) string {
	if _, ok := err.(setupError); ok {
		return benchmarks.ReasonSetup
	}
	return benchmarks.ReasonNoMeeting
}

// all gives every check the same outcome.
func (p Phase) all(st benchmarks.Status, reason, msg string) []benchmarks.Result {
	out := make([]benchmarks.Result, 0, len(p.Checks))
	for _, c := range p.Checks {
		out = append(out, benchmarks.Result{Check: c, Status: st, Reason: reason, Message: msg})
	}
	return out
}

func (p Phase) has(check string) bool {
	for _, c := range p.Checks {
		if c == check {
			return true
		}
	}
	return false
}

func (p Phase) run(ctx context.Context, start time.Time) (Outcome, error) {
	if w := p.Connect.PortWarning(); w != "" {
		p.Log.Warn(w)
	}
	local := p.Addrs[p.Self]
	if local == "" {
		return Outcome{}, setupError{fmt.Errorf("no address for this node %s", p.Self)}
	}
	listen := p.Listen
	if listen == nil {
		listen = func(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
	}
	ln, err := listen(net.JoinHostPort(local, strconv.Itoa(p.Connect.DataPort)))
	if err != nil {
		return Outcome{}, setupError{fmt.Errorf("measurement endpoint: %w", err)}
	}
	members := map[string]bool{}
	for _, n := range p.Nodes {
		members[n] = true
	}
	ep := serve(ln, gate{job: p.Job, restart: p.Restart, self: p.Self, nodes: members, auth: p.Auth})
	defer p.closeEndpoint(ep)
	offer := binary.BigEndian.AppendUint16(nil, uint16(ep.Port()))
	s, err := rendezvous.Meet(ctx, rendezvous.Config{Job: p.Job, Restart: p.Restart, Self: p.Self, Nodes: p.Nodes,
		Port: p.Connect.Port, Addrs: p.Addrs, LocalAddr: local, Advertise: local, Auth: p.Auth, UID: 0,
		Join: p.Connect.Join, Fallbacks: p.Connect.Fallbacks, Offer: offer, Log: p.Log,
		Dial: func(ctx context.Context, local, remote string) (net.Conn, error) { return p.Dial(ctx, local, remote) }})
	var ce *rendezvous.CoordinatorError
	switch {
	case errors.As(err, &ce):
		// No coordinator could be reached: is it this node's network?
		return Outcome{Results: p.alone(ctx, start, err)}, nil
	case err != nil:
		return Outcome{}, fmt.Errorf("rendezvous: %w", err)
	}
	defer s.Close()
	st := s.Stats()
	p.Log.WithFields(logrus.Fields{"node": p.Self, "coordinator": s.Coordinator(), "epoch": s.Epoch(), "rdv_links": st.Links,
		"rdv_dials": st.Dials, "joined": st.Joined.String()}).Debug("cross-node: met")
	roster := s.Roster()
	if len(roster.Present()) == 1 {
		s.Close()
		return Outcome{Results: p.alone(ctx, start, errors.New("unknown: coordinated a meeting that no other node came to"))}, nil
	}
	e := ends{}
	for _, m := range roster.Members {
		if m.Present && len(m.Offer) == 2 {
			e[m.Name] = net.JoinHostPort(m.Addr, strconv.Itoa(int(binary.BigEndian.Uint16(m.Offer))))
		}
	}
	mine := nodeReport{Peers: p.readPeers(), Failing: p.Failing}
	pr := p.prober(local)
	if p.has(Connect) || p.has(Bandwidth) {
		links, err := judge.Plan(roster.Present(), p.Connect.Partners, seedOf(p.Job))
		if err != nil {
			return Outcome{}, err
		}
		if p.has(Bandwidth) {
			pr.bw = &p.Bandwidth
		}
		mine.Measurements = p.measure(ctx, pr, links, judge.RoundPlan, e)
		mine.Measurements = append(mine.Measurements, p.probeAbsent(ctx, pr, roster)...)
	}
	payload, err := p.judge(ctx, s, mine, pr, e, roster)
	if err != nil {
		return Outcome{}, err
	}
	var o nodeOutcome
	if err := json.Unmarshal(payload, &o); err != nil {
		return Outcome{}, fmt.Errorf("no outcome from coordinator %s (%d bytes: %v)", s.CoordinatorName(), len(payload), err)
	}
	out := p.results(o, mine)
	for _, c := range p.Checks {
		if cc, ok := lookupCollective(c); ok {
			out = append(out, p.collective(ctx, s, cc))
		}
	}
	return Outcome{Results: out, JobFailing: o.JobFailing, BadLinks: o.BadLinks, Coordinator: s.Coordinator()}, nil
}

// nodeReport is what a node sends the coordinator in a round: its own
// directions of its links, and, in round one, its facts for the
// PeerChecks (check → report).
type nodeReport struct {
	Measurements []judge.Measurement              `json:"measurements,omitempty"`
	Peers        map[string]benchmarks.PeerReport `json:"peers,omitempty"`
	// Failing are the node's failed local checks (round one only).
	Failing []string `json:"failing,omitempty"`
}

// judge runs the rounds: gather round one, re-test if the coordinator
// asks, and scatter each node its outcome, which it returns.
func (p Phase) judge(ctx context.Context, s *rendezvous.Session, mine nodeReport, pr *prober, e ends, roster rendezvous.Roster) ([]byte, error) {
	gctx, cancel := gatherCtx(ctx, s.Coordinator(), p.Connect.ConnectTimeout)
	defer cancel()
	got, err := s.Gather(gctx, "links", mustJSON(mine))
	if err != nil {
		return nil, err
	}
	var all []string
	for _, m := range roster.Members {
		all = append(all, m.Name)
	}
	in := judge.Input{Nodes: all, Absent: roster.Absent(), Options: judge.Options{SlowFraction: p.Bandwidth.SlowFraction}}
	var v judge.Verdict
	var reports map[string]map[string]benchmarks.PeerReport
	var failing map[string][]string
	if s.Coordinator() {
		in.Measurements, reports = collect(got, p.Log)
		failing = localFailures(got)
		if v, err = judge.Decide(in); err != nil {
			return nil, err
		}
	}
	b, err := s.Broadcast(ctx, "retests", mustJSON(retestPlan{Links: v.Retests, Throughput: v.RetestThroughput}))
	if err != nil {
		return nil, err
	}
	var retests retestPlan
	if err := json.Unmarshal(b, &retests); err != nil {
		return nil, fmt.Errorf("re-tests from the coordinator: %w", err)
	}
	if len(retests.Links)+len(retests.Throughput) > 0 {
		ping := *pr
		ping.bw = nil
		again := nodeReport{Measurements: p.measure(ctx, &ping, retests.Links, judge.RoundRetest, e)}
		if pr.bw != nil && len(retests.Throughput) > 0 {
			again.Measurements = append(again.Measurements, p.measure(ctx, pr, retests.Throughput, judge.RoundRetest, e)...)
		}
		gctx2, cancel2 := gatherCtx(ctx, s.Coordinator(), p.Connect.ConnectTimeout)
		defer cancel2()
		if got, err = s.Gather(gctx2, "retests", mustJSON(again)); err != nil {
			return nil, err
		}
		if s.Coordinator() {
			more, _ := collect(got, p.Log)
			in.Measurements = append(in.Measurements, more...)
			if v, err = judge.Decide(in); err != nil {
				return nil, err
			}
		}
	}
	var per map[string][]byte
	if s.Coordinator() {
		peers := p.judgePeers(reports, v.Absent)
		per = outcomes(v, roster, p.Checks, peers, jobFailing(failing, v, peers), linkNotes(v))
		p.Log.WithFields(logrus.Fields{"culprits": len(v.Culprits), "bad_links": len(v.BadLinks),
			"absent": v.Absent, "unknown": v.Unknown}).Info("cross-node verdict")
		p.publish(ctx, v, len(roster.Present()))
	}
	return s.Scatter(ctx, "outcome", per)
}

// retestPlan is what round two measures: connects and round trips of
// Links, and also the throughput of Throughput.
type retestPlan struct {
	Links      []judge.Link `json:"links,omitempty"`
	Throughput []judge.Link `json:"throughput,omitempty"`
}

// gatherCtx leaves the coordinator time to answer before the members'
// deadline (the same as its own): it stops waiting for measurements a
// little earlier.
func gatherCtx(ctx context.Context, coordinator bool, margin time.Duration) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !coordinator || !ok {
		return context.WithCancel(ctx)
	}
	margin = min(margin+time.Second, time.Until(dl)/4)
	return context.WithDeadline(ctx, dl.Add(-margin))
}

// collect decodes the gathered reports: the measurements, and the
// PeerChecks' reports (check → node → report). A node's payload that does
// not decode is logged and left out.
func collect(got map[string][]byte, log logrus.FieldLogger) ([]judge.Measurement, map[string]map[string]benchmarks.PeerReport) {
	var all []judge.Measurement
	peers := map[string]map[string]benchmarks.PeerReport{}
	for node, b := range got {
		var r nodeReport
		if err := json.Unmarshal(b, &r); err != nil {
			log.WithField("peer", node).WithError(err).Warn("cross-node: unreadable measurements")
			continue
		}
		for _, m := range r.Measurements {
			if m.From == node { // a node speaks for its own directions only
				all = append(all, m)
			}
		}
		for c, rep := range r.Peers {
			if peers[c] == nil {
				peers[c] = map[string]benchmarks.PeerReport{}
			}
			peers[c][node] = rep
		}
	}
	return all, peers
}

// localFailures reads the failed local checks of each node's round-one
// report: check → nodes.
func localFailures(got map[string][]byte) map[string][]string {
	out := map[string][]string{}
	for node, b := range got {
		var r nodeReport
		if json.Unmarshal(b, &r) != nil {
			continue
		}
		for _, c := range r.Failing {
			out[c] = append(out[c], node)
		}
	}
	return out
}

// jobFailing is, per check, every node of the job that fails it: the local
// failures the nodes reported, the culprits of the links (absent ones
// included: they fail themselves), and the PeerChecks' fails. Sorted.
func jobFailing(local map[string][]string, v judge.Verdict, peers map[string]map[string]benchmarks.PeerVerdict) map[string][]string {
	out := map[string][]string{}
	add := func(check, node string) {
		if !slices.Contains(out[check], node) {
			out[check] = append(out[check], node)
		}
	}
	for c, nodes := range local {
		for _, n := range nodes {
			add(c, n)
		}
	}
	for _, c := range v.Culprits {
		add(c.Check, c.Node)
	}
	for c, byNode := range peers {
		for n, pv := range byNode {
			if pv.Status == benchmarks.StatusFail {
				add(c, n)
			}
		}
	}
	for c := range out {
		slices.Sort(out[c])
	}
	return out
}

// linkNotes are the verdict's bad links that blame nobody.
func linkNotes(v judge.Verdict) []LinkNote {
	var out []LinkNote
	for _, l := range v.BadLinks {
		if l.State != judge.LinkBlamed {
			out = append(out, LinkNote{A: l.A, B: l.B, State: string(l.State)})
		}
	}
	return out
}

// measure measures this node's direction of each of its links: the
// connect and round-trip times to every peer at once, then, with a
// bandwidth check, the transfers one after another.
func (p Phase) measure(ctx context.Context, pr *prober, links []judge.Link, round int, e ends) []judge.Measurement {
	peers := peersIn(links, p.Self)
	out := make([]judge.Measurement, len(peers))
	inParallel(peers, func(i int, peer string) { out[i] = pr.probe(ctx, peer, e[peer], pr.ping) })
	if pr.bw != nil {
		for _, peer := range peers {
			out = append(out, pr.probe(ctx, peer, e[peer], pr.bulk))
		}
	}
	for i := range out {
		out[i].Round = round
	}
	return out
}

// probeAbsent probes the rendezvous port of each absent node that is this
// node's peer in the plan over all the job's nodes: the evidence that
// judges a node that never met (Decide). Nothing is probed when all came.
func (p Phase) probeAbsent(ctx context.Context, pr *prober, roster rendezvous.Roster) []judge.Measurement {
	absent := roster.Absent()
	if len(absent) == 0 {
		return nil
	}
	var all []string
	for _, m := range roster.Members {
		all = append(all, m.Name)
	}
	links, err := judge.Plan(all, p.Connect.Partners, seedOf(p.Job))
	if err != nil {
		return nil
	}
	var peers []string
	for _, peer := range peersIn(links, p.Self) {
		if slices.Contains(absent, peer) {
			peers = append(peers, peer)
		}
	}
	return p.probePorts(ctx, pr, peers)
}

// peersIn are self's peers in links, in the links' order.
func peersIn(links []judge.Link, self string) []string {
	var peers []string
	for _, l := range links {
		switch self {
		case l.A:
			peers = append(peers, l.B)
		case l.B:
			peers = append(peers, l.A)
		}
	}
	return peers
}

// maxInFlight bounds the connections a node opens at once to its peers.
const maxInFlight = 16

// inParallel runs f for each peer (with its index), maxInFlight at most at
// once, and waits for all.
func inParallel(peers []string, f func(i int, peer string)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxInFlight)
	for i, peer := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			f(i, peer)
		}()
	}
	wg.Wait()
}

// probe runs one measurement, or records a peer without an endpoint.
func (pr *prober) probe(ctx context.Context, peer, remote string, f func(context.Context, string, string) judge.Measurement) judge.Measurement {
	if remote == "" {
		return judge.Measurement{From: pr.self, To: peer, Status: judge.Failed, Detail: "no endpoint in the roster"}
	}
	return f(ctx, peer, remote)
}

// seedOf draws the plan's partners from the job id.
func seedOf(job string) uint64 {
	if n, err := strconv.ParseUint(job, 10, 64); err == nil {
		return n
	}
	h := fnv.New64a()
	h.Write([]byte(job))
	return h.Sum64()
}

// mustJSON marshals the phase's plain records, which cannot fail.
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
