package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/rendezvous"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Labels of the three rounds of a period: the coordinator's tick, the
// members' summaries, and the digest (empty when none is due).
const (
	labelTick   = "tick"
	labelSum    = "summary"
	labelDigest = "digest"
)

// DefaultTakeover is how many periods a member waits for the
// coordinator's tick before it counts the coordinator as lost.
const DefaultTakeover = 3

// Config is one watcher's part in its job's coordination.
type Config struct {
	Job     string   // the job id
	Restart uint32   // the job's restart count
	Self    string   // this node
	Nodes   []string // the job's nodes, any order
	UID     uint32   // every message must be sealed by this uid (the job's user)
	// Ports are the candidate TCP ports of the job's meeting, in order, the
	// same on every node (watchcfg.Settings.JobPorts): the coordinator
	// listens on the first it can bind (ports.go).
	Ports []int
	// Addrs maps node names to addresses, overriding name resolution.
	Addrs map[string]string
	Auth  rendezvous.Authenticator
	// Hang is the detector's configuration: Period paces the rounds.
	Hang hang.Config
	// Takeover is how many periods without the coordinator's tick make a
	// member count it as lost (default DefaultTakeover).
	Takeover int
	// Join is how long a meeting waits for the job's watchers (default
	// two periods, at least 10 s).
	Join time.Duration
	Log  logrus.FieldLogger
	// Seen, when set, is given every host's reading the coordinator takes
	// in, with the state change it carries (Hub.Seen); nil on a member.
	Seen func(s trace.Sample, evs []hang.Event)
	// AnnounceFailures lets this watcher, when it ends up acting alone,
	// announce the digest of a failed job (Lone.AnnounceFailures): set
	// on the watcher that follows the job's output.
	AnnounceFailures bool
}

// Roles of a node.
const (
	roleLone = iota
	roleMember
	roleCoordinator
)

// Node is one watcher's side of its job's coordination, and the watch
// loop's JobView. Start it with Start; Observe and Due are called by the
// watch loop, one at a time.
type Node struct {
	cfg      Config
	pend     *pending
	lone     *Lone
	mu       sync.Mutex
	role     int
	sess     *rendezvous.Session
	hub      *Hub
	queue    []Out
	digest   *digest.DigestEvent // the latest the coordinator announced
	ranks    RankMap             // the job's rank map as this node knows it (Ranks)
	excluded map[string]bool
	cancel   context.CancelFunc
	done     chan struct{}
	log      logrus.FieldLogger // Config.Log through sessionLog
	closing  atomic.Bool        // Close has begun
	byeSaid  bool               // the coordinator's farewell went out (End)
	byeHeard bool               // a member heard its coordinator's farewell
	// stopped is closed when a member's rounds end (the coordinator's
	// farewell, or its loss): End waits for it.
	stopped  chan struct{}
	stopOnce sync.Once

	// suspect is, on a member, the coordinator's word in its latest tick
	// that the job may be hung (tickSuspect); lastTick is when that tick
	// came.
	suspect  bool
	lastTick time.Time

	partition
}

var errAlone = errors.New("no other watcher of the job takes part")

// tickBye starts the payload of the coordinator's last tick (sayBye);
// the digest of a failed job, as JSON, may follow it.
const tickBye = "bye"

// tickSuspect starts the payload of a tick while the coordinator's view
// says the job may be hung (Hub.Suspect); the rest of the payload follows
// it. A member then reads what its processes wait on, as the coordinator
// does (Suspect): the digest needs every host's.
const tickSuspect = "suspect;"

// errCoordinatorStopped is a member's end of rounds when the coordinator
// said it stops.
var errCoordinatorStopped = errors.New("the coordinator stopped")

// Start meets the job's other watchers. It always returns a usable Node:
// when the job has one node, or no meeting is possible, the node is lone
// (it acts for itself, as a watcher without peers) and the log says why.
func Start(ctx context.Context, cfg Config) *Node {
	if cfg.Takeover <= 0 {
		cfg.Takeover = DefaultTakeover
	}
	if cfg.Join <= 0 {
		cfg.Join = max(2*cfg.Hang.Period, 10*time.Second)
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	n := &Node{cfg: cfg, pend: newPending(), lone: NewLone(cfg.Hang), excluded: map[string]bool{},
		done: make(chan struct{}), stopped: make(chan struct{}), log: cfg.Log}
	n.lone.AnnounceFailures = cfg.AnnounceFailures
	n.log = sessionLog(cfg.Log, &n.closing) // the session's and this node's
	// The session outlives ctx until Close: a member still hears the
	// coordinator's last word (the digest of a failed job) after the
	// SIGTERM that ends every watcher of the job. The first meeting ends
	// with ctx.
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel = cancel
	if len(distinct(cfg.Nodes)) < 2 {
		n.log.Info("a one-node job: this watcher acts for its node alone")
		close(n.done)
		return n
	}
	mctx, cancelMeet := context.WithCancel(life)
	stop := context.AfterFunc(ctx, cancelMeet)
	s, err := n.meet(mctx, false)
	stop()
	cancelMeet()
	ctx = life
	if err != nil {
		n.log.WithError(err).Warn("the job's watchers could not meet: each watcher acts for its own node (as without a coordinator)")
		close(n.done)
		return n
	}
	if !n.begin(ctx, s) {
		close(n.done)
	}
	return n
}

// begin takes the role that session s gives this node; on a member it
// starts serve and reports true (serve closes done when it ends).
func (n *Node) begin(ctx context.Context, s *rendezvous.Session) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sess = s
	fields := logrus.Fields{"coordinator": s.CoordinatorName(), "present": strings.Join(s.Roster().Present(), ","),
		"absent": strings.Join(s.Roster().Absent(), ",")}
	if s.Coordinator() {
		n.role = roleCoordinator
		n.hub = NewHub(n.cfg.Job, n.cfg.Hang, n.cfg.Nodes, n.digest, n.log)
		n.hub.Seen = n.cfg.Seen
		n.log.WithFields(fields).Info("this watcher coordinates the job's watchers: it alone announces the job's hang digests")
		return false
	}
	n.role = roleMember
	n.log.WithFields(fields).Info("this watcher reports to the job's coordinator, which announces the job's hangs")
	go n.serve(ctx, s)
	return true
}

// Coordinated reports whether another node's watcher announces this job's
// hangs or this one does for all: false on a lone watcher, which acts for
// its own node.
func (n *Node) Coordinated() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.role != roleLone
}

// Coordinator reports whether this node is the job's coordinator now.
func (n *Node) Coordinator() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.role == roleCoordinator
}

// Observe takes one record of this node and the detector's events for it.
func (n *Node) Observe(s trace.Sample, evs []hang.Event) {
	n.pend.observe(s, evs)
	n.lone.Observe(s, evs)
}

// Due returns the job's events due at now. On the coordinator it runs the
// period's rounds: tick, gather the summaries, announce the digest.
func (n *Node) Due(ctx context.Context, now time.Time) []Out {
	lone := n.lone.Due(ctx, now) // keeps the lone view current, for a fall back
	role, out := n.takeQueue()
	switch role {
	case roleLone:
		return append(out, lone...)
	case roleCoordinator:
		return append(out, n.round(ctx, now)...)
	}
	return out
}

// SetRanks takes the global ranks of the job's processes on this node,
// read now: sent with this node's summaries, and this node's part of the
// rank map while it acts alone.
func (n *Node) SetRanks(host string, ranks []int) {
	n.pend.setRanks(ranks)
	n.lone.SetRanks(host, ranks)
}

// Ranks is the job's rank map (global rank → host) as this watcher knows
// it: the coordinator's, made of every node's summaries (a member has it
// with the coordinator's tick), and this node's own while it acts alone.
func (n *Node) Ranks() map[int]string {
	n.mu.Lock()
	role, hub := n.role, n.hub
	n.mu.Unlock()
	switch {
	case role == roleCoordinator && hub != nil:
		n.ranks.Merge(hub.Ranks())
	case role == roleLone:
		n.ranks.Merge(n.lone.Ranks())
	}
	return n.ranks.Map()
}

// Suspect reports whether the job may be hung as this watcher's view
// sees it: the coordinator's over every node's summaries, else its own
// node's (hang.Episodes.Suspect), on a member also the coordinator's word
// in its latest tick. The watch loop asks NCCL's RAS service, and reads
// what the processes wait on, only then.
func (n *Node) Suspect() bool {
	n.mu.Lock()
	role, hub, said := n.role, n.hub, n.suspect
	n.mu.Unlock()
	if n.recentlyLost() {
		return true // read the waits now: the new coordinator's view needs them
	}
	if role == roleCoordinator && hub != nil {
		return hub.Suspect()
	}
	return role == roleMember && said || n.lone.Suspect()
}

// Role is this watcher's part in the job's meeting now: trace.RoleCoordinator,
// RoleMember or RoleLone.
func (n *Node) Role() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.role == roleCoordinator:
		return trace.RoleCoordinator
	case n.role == roleMember && !n.alone: // alone: it speaks for the job at its end (EndRecords)
		return trace.RoleMember
	}
	return trace.RoleLone
}

// takeQueue returns the node's role and the events queued for the loop
// (a member's copies of the coordinator's digests), and empties the queue.
func (n *Node) takeQueue() (int, []Out) {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.queue
	n.queue = nil
	return n.role, out
}

// gatherWait bounds the coordinator's wait for the summaries, which
// members send as soon as the tick comes.
func (n *Node) gatherWait() time.Duration {
	return min(max(n.cfg.Hang.Period/4, 2*time.Second), 10*time.Second)
}

// round is the coordinator's period: tick, gather, ingest, and the digest
// broadcast before anyone is notified, so that a coordinator that dies
// after notifying leaves its successors knowing the digest was announced.
func (n *Node) round(ctx context.Context, now time.Time) []Out {
	own, err := n.pend.take().Encode()
	if err != nil {
		n.log.WithError(err).Error("could not encode this node's summary")
		return nil
	}
	s := n.sess
	tick := ranksTick(n.Ranks())
	if n.hub.Suspect() {
		tick = append([]byte(tickSuspect), tick...)
	}
	if _, err := s.Broadcast(ctx, labelTick, tick); err != nil {
		n.log.WithError(err).Warn("coordinator: tick")
	}
	gctx, cancel := context.WithTimeout(ctx, n.gatherWait())
	got, err := s.Gather(gctx, labelSum, own)
	cancel()
	if err != nil {
		n.log.WithError(err).Warn("coordinator: gather")
	}
	sums := make(map[string]Summary, len(got))
	for host, b := range got {
		sum, err := DecodeSummary(b)
		if err != nil {
			n.log.WithError(err).WithField("member", host).Warn("coordinator: a summary was not understood; left out")
			continue
		}
		sums[host] = sum
	}
	outs := n.quiet(n.hub.Ingest(now, sums), len(s.Roster().Present())-1, sums)
	var dig []byte
	for _, o := range outs {
		if d, ok := o.Event.(digest.DigestEvent); ok && o.Notify {
			dig, _ = json.Marshal(d)
			n.mu.Lock()
			n.digest = &d
			n.mu.Unlock()
		}
	}
	if _, err := s.Broadcast(ctx, labelDigest, dig); err != nil {
		n.log.WithError(err).Warn("coordinator: digest broadcast")
	}
	return outs
}

// serve is a member's side of the periods, until the coordinator is lost;
// then it takes part in the takeover.
func (n *Node) serve(ctx context.Context, s *rendezvous.Session) {
	defer close(n.done)
	defer n.stopOnce.Do(func() { close(n.stopped) })
	for {
		err := n.memberRounds(ctx, s)
		n.stopOnce.Do(func() { close(n.stopped) })
		s.Close()
		if ctx.Err() != nil {
			return
		}
		lost := s.CoordinatorName()
		if errors.Is(err, errCoordinatorStopped) {
			n.log.WithField("coordinator", lost).Info("the job's coordinator stopped; the next node in order takes over")
		} else {
			n.log.WithError(err).WithField("coordinator", lost).Warn("the job's coordinator is lost; the next node in order takes over")
		}
		stopped := errors.Is(err, errCoordinatorStopped)
		n.mu.Lock()
		n.excluded[lost] = true
		n.mu.Unlock()
		if !stopped {
			l := lostCoordinator(ctx, s, time.Duration(n.cfg.Takeover)*n.cfg.Hang.Period)
			n.mu.Lock()
			n.lost = append(n.lost, l)
			n.mu.Unlock()
		}
		s, err = n.meet(ctx, stopped)
		if err != nil {
			switch {
			case ctx.Err() != nil:
			case stopped: // the job's watchers are most likely all stopping
				n.log.WithError(err).Info("no coordinator after the coordinator stopped: this watcher acts for its own node")
			default:
				n.log.WithError(err).Warn("no coordinator after the takeover: this watcher acts for its own node")
			}
			n.mu.Lock()
			n.role, n.sess = roleLone, nil
			n.mu.Unlock()
			return
		}
		if s.Coordinator() {
			n.begin(ctx, s)
			return
		}
		n.mu.Lock()
		n.sess = s
		n.lastTick = time.Now() // the meeting is the new coordinator's first word: its silence counts from here
		n.mu.Unlock()
		n.log.WithField("coordinator", s.CoordinatorName()).Info("reporting to the new coordinator")
	}
}

// memberRounds answers the coordinator's periods until one fails.
func (n *Node) memberRounds(ctx context.Context, s *rendezvous.Session) error {
	wait := time.Duration(n.cfg.Takeover)*n.cfg.Hang.Period + n.gatherWait()
	for {
		tctx, cancel := context.WithTimeout(ctx, wait)
		tick, err := s.Broadcast(tctx, labelTick, nil)
		cancel()
		if err != nil {
			return fmt.Errorf("no tick for %v: %w", wait, err)
		}
		if bye, ok := strings.CutPrefix(string(tick), tickBye); ok {
			n.lastWord(bye)
			n.mu.Lock()
			n.byeHeard = true
			n.mu.Unlock()
			return errCoordinatorStopped
		}
		rest, suspect := strings.CutPrefix(string(tick), tickSuspect)
		n.mu.Lock()
		n.suspect = suspect
		n.lastTick = time.Now()
		n.mu.Unlock()
		if r, ok := strings.CutPrefix(rest, tickRanks); ok {
			if m, ok := tickRankMap(r); ok {
				n.ranks.Merge(m)
			} else {
				n.log.Warn("the coordinator's rank map was not understood")
			}
		}
		b, err := n.pend.take().Encode()
		if err != nil {
			return err
		}
		if _, err := s.Gather(ctx, labelSum, b); err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(ctx, 2*n.gatherWait()+rendezvous.DefaultIOTimeout)
		dig, err := s.Broadcast(dctx, labelDigest, nil)
		cancel()
		if err != nil {
			return err
		}
		if len(dig) > 0 {
			var d digest.DigestEvent
			if err := json.Unmarshal(dig, &d); err != nil {
				n.log.WithError(err).Warn("the coordinator's digest was not understood")
				continue
			}
			n.mu.Lock()
			n.digest = &d
			n.queue = append(n.queue, Out{Event: d})
			n.mu.Unlock()
		}
	}
}

// lastWord takes the digest of a failed job that the coordinator's
// farewell carries, if any: queued for this member's report.
func (n *Node) lastWord(b string) {
	if b == "" {
		return
	}
	var d digest.DigestEvent
	if err := json.Unmarshal([]byte(b), &d); err != nil {
		n.log.WithError(err).Warn("the coordinator's last digest was not understood")
		return
	}
	n.mu.Lock()
	n.queue = append(n.queue, Out{Event: d})
	n.mu.Unlock()
}

// meet meets the watchers of the job's nodes not yet excluded; a
// coordinator that is absent or lost is excluded and the next one in
// order is tried. A meeting of one is errAlone. winding is set for the
// takeover after the coordinator said it stops: nodes that stay away
// are then expected, and not warned about.
func (n *Node) meet(ctx context.Context, winding bool) (*rendezvous.Session, error) {
	for {
		n.mu.Lock()
		var nodes []string
		for _, x := range distinct(n.cfg.Nodes) {
			if !n.excluded[x] {
				nodes = append(nodes, x)
			}
		}
		n.mu.Unlock()
		if len(nodes) < 2 {
			return nil, errAlone
		}
		s, err := n.meetOn(ctx, rendezvous.Config{Job: n.cfg.Job, Restart: n.cfg.Restart, Self: n.cfg.Self,
			Nodes: nodes, Addrs: n.cfg.Addrs, Auth: n.cfg.Auth, UID: n.cfg.UID,
			Join: n.cfg.Join, Log: n.log, Winding: winding})
		if err == nil {
			if len(s.Roster().Present()) < 2 {
				s.Close()
				return nil, errAlone
			}
			return s, nil
		}
		if ctx.Err() != nil || !(errors.Is(err, rendezvous.ErrCoordinatorAbsent) || errors.Is(err, rendezvous.ErrCoordinatorLost)) {
			return nil, err
		}
		c := rendezvous.Coordinator(nodes)
		l := n.log.WithError(err).WithField("coordinator", c)
		if winding {
			l.Info("the job's coordinator did not answer (the job's watchers are most likely stopping); trying the next node in order")
		} else {
			l.Warn("the job's coordinator did not answer; trying the next node in order")
		}
		n.mu.Lock()
		n.excluded[c] = true
		n.mu.Unlock()
	}
}

// Close leaves the session and waits for the member's side to end.
func (n *Node) Close() {
	n.closing.Store(true)
	n.mu.Lock()
	s, role, said := n.sess, n.role, n.byeSaid
	n.mu.Unlock()
	if role == roleCoordinator && s != nil && !said {
		n.sayBye(s, nil)
	}
	n.cancel()
	if s != nil {
		s.Close()
	}
	<-n.done
}

// byeWait bounds the coordinator's farewell at Close.
const byeWait = time.Second

// sayBye is the coordinator's last tick: it carries tickBye, so that the
// members, waiting for the next period's tick, know the coordinator stops
// (as every watcher does when the job ends) rather than failed, and then
// last, the digest of a failed job (JSON) when there is one.
func (n *Node) sayBye(s *rendezvous.Session, last []byte) {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), byeWait)
	defer cancel()
	if _, err := s.Broadcast(ctx, labelTick, append([]byte(tickBye), last...)); err != nil {
		n.log.WithError(err).Debug("coordinator: farewell")
	}
}

func distinct(nodes []string) []string { return slices.Compact(slices.Sorted(slices.Values(nodes))) }
