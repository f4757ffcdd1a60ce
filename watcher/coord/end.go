package coord

import (
	"context"
	"encoding/json"
	"time"

	"github.com/vigil-hpc/vigil/rendezvous"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// A watcher's end: the coordinator's last digest and farewell, a member's
// wait for it, and a member that speaks for the job when its coordinator
// fell silent before the job ended.

// End returns the job's events due at this watcher's stop, once its last
// records (its end record among them) are observed: on the coordinator,
// its own last summary joins the members' latest (the members are
// stopping too: no round is held) and the digest of a failed job is
// announced; a lone watcher gives its own view's; a member, the copies of
// the coordinator's digests it was sent, or, where it speaks for the job
// (EndRecords), its own view's digest of the failed job, announced.
func (n *Node) End(ctx context.Context, now time.Time) []Out {
	role, out := n.takeQueue()
	if role != roleCoordinator && n.endsAlone() {
		role = roleMember // its rounds may have turned it lone as the job ended: it still speaks for the job
	}
	switch role {
	case roleCoordinator:
		outs := n.hub.Ingest(now, map[string]Summary{n.cfg.Self: n.pend.take()})
		outs = n.atEnd(outs)
		var last []byte
		for _, o := range outs {
			if d, ok := o.Event.(digest.DigestEvent); ok && d.Event == digest.EventFailed {
				last, _ = json.Marshal(d)
			}
		}
		n.mu.Lock()
		s := n.sess
		n.byeSaid = true
		n.mu.Unlock()
		n.sayBye(s, last) // before notifying: the members write their reports meanwhile
		return append(out, outs...)
	case roleLone:
		return append(out, n.lone.End(ctx, now)...)
	case roleMember:
		if n.endsAlone() { // its coordinator fell silent before the job's end (EndRecords): it speaks for the job
			for _, o := range n.lone.End(ctx, now) {
				if d, ok := o.Event.(digest.DigestEvent); ok && d.Event == digest.EventFailed {
					o.Notify = true
				}
				out = append(out, o)
			}
			return out
		}
		n.awaitFarewell(ctx)
		_, more := n.takeQueue()
		return append(out, more...)
	}
	return out
}

// awaitFarewell waits, on a member, for the coordinator's farewell (or its
// loss), endWait at most.
func (n *Node) awaitFarewell(ctx context.Context) {
	select {
	case <-n.stopped:
	case <-ctx.Done():
	case <-time.After(endWait):
	}
}

// endWait bounds a member's wait at End for the coordinator's farewell.
const endWait = 5 * time.Second

// EndRecords returns, on a member whose coordinator fell silent before
// the job ended, the record of that coordinator's loss (trace.StreamLost,
// read on host for job at at), and makes this member speak for the job at
// its End: the job ended (Slurm stops the watchers with it) before the
// takeover's wait had passed, which is what a node cut off entirely
// looks like where Slurm's SlurmdTimeout is shorter than that wait (its
// NODE_FAIL ends the job first). Silent is no tick for a period and the
// gather since the last one, and no farewell within endWait (its rounds
// may see the loss meanwhile, as the job's end stops them: the takeover
// they begin ends with the job). Only the
// member next in line (the takeover's next coordinator) speaks, from its
// own view and its probe of the lost node, so that the job gets one
// digest. Elsewhere it returns nothing.
func (n *Node) EndRecords(ctx context.Context, host, job string, at time.Time) []trace.Sample {
	n.mu.Lock()
	role, s, last := n.role, n.sess, n.lastTick
	n.mu.Unlock()
	if role != roleMember || s == nil || last.IsZero() {
		return nil
	}
	n.awaitFarewell(ctx)
	n.mu.Lock()
	bye, took := n.byeHeard, n.sess != s
	n.mu.Unlock()
	if bye || took {
		return nil // a farewell, or a loss the member's rounds took up before the end
	}
	silent := time.Since(last)
	if silent < n.cfg.Hang.Period+n.gatherWait() {
		return nil
	}
	lost := s.CoordinatorName()
	n.mu.Lock()
	var rest []string
	for _, x := range distinct(n.cfg.Nodes) {
		if x != lost && !n.excluded[x] {
			rest = append(rest, x)
		}
	}
	n.mu.Unlock()
	if len(rest) == 0 || rendezvous.Coordinator(rest) != n.cfg.Self {
		return nil
	}
	l := lostCoordinator(ctx, s, silent.Round(time.Second))
	n.log.WithFields(map[string]any{"coordinator": lost, "silent_s": l.AfterS, "unreachable": l.Unreachable}).
		Warn("the job ended while its coordinator was silent: this watcher, next in line, gives the job's digest from its own view")
	n.mu.Lock()
	n.alone = true
	n.mu.Unlock()
	return []trace.Sample{trace.LostRecord(host, job, at, l)}
}

// endsAlone says EndRecords made this member speak for the job.
func (n *Node) endsAlone() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.alone
}
