package crossnet

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/crossnet/judge"
	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/rendezvous"
	"github.com/vigil-hpc/vigil/slurm/hostlist"
)

// Relay carries a meeting's word to the nodes that never met it, through
// the one party every node of the job still reaches when its data network
// is dead: slurmctld. In production it is the job's AdminComment, which
// only Slurm's administrators (root here) can set, so a user cannot forge
// a word.
type Relay interface {
	// Publish adds this meeting's word (FormatWord) to what the job holds
	// (MergeWord).
	Publish(ctx context.Context, word string) error
	// Read returns what the job holds (every meeting's words).
	Read(ctx context.Context) (string, error)
}

// wordPrefix starts each word in the relay's text.
const wordPrefix = "vigil-net:"

// maxWordLen bounds one word's text; a word with more cut-off nodes than
// fit is not published (those nodes then end unknown, never drained).
const maxWordLen = 1024

// FormatWord is a meeting's word as it is published for run restart of
// the job: "vigil-net:RESTART:COORDINATOR:MET:HOSTLIST", the hostlist
// being the cut-off nodes (Slurm's compressed form).
func FormatWord(restart uint32, w judge.Word) string {
	return fmt.Sprintf("%s%d:%s:%d:%s", wordPrefix, restart, w.By, w.Met, hostlist.Compress(w.CutOff))
}

// ParseWords returns the words of run restart in text (other words, other
// runs and anything malformed are skipped).
func ParseWords(text string, restart uint32) []judge.Word {
	var out []judge.Word
	for _, tok := range strings.Fields(text) {
		rest, ok := strings.CutPrefix(tok, wordPrefix)
		if !ok {
			continue
		}
		f := strings.SplitN(rest, ":", 4)
		if len(f) != 4 || f[0] != strconv.FormatUint(uint64(restart), 10) || f[1] == "" {
			continue
		}
		met, err := strconv.Atoi(f[2])
		if err != nil || met < 1 {
			continue
		}
		cut, err := hostlist.Expand(f[3])
		if err != nil {
			continue
		}
		out = append(out, judge.Word{By: f[1], Met: met, CutOff: cut})
	}
	return out
}

// MergeWord returns the relay's text with word added (a FormatWord): the
// text that is not vigil's is kept as it is, words of other runs are
// dropped, and an earlier word of the same run and coordinator is
// replaced.
func MergeWord(old, word string) string {
	f := strings.SplitN(strings.TrimPrefix(word, wordPrefix), ":", 3)
	run := wordPrefix + f[0] + ":"
	same := run + f[min(1, len(f)-1)] + ":"
	var keep []string
	for _, tok := range strings.Fields(old) {
		switch {
		case !strings.HasPrefix(tok, wordPrefix):
			keep = append(keep, tok)
		case strings.HasPrefix(tok, same):
		case strings.HasPrefix(tok, run):
			keep = append(keep, tok)
		}
	}
	return strings.Join(append(keep, word), " ")
}

// publish tells the nodes that never met this meeting which of them none
// of its nodes could reach. Only the coordinator publishes, and only when
// its verdict holds such a node; a failure is logged (those nodes then end
// unknown).
func (p Phase) publish(ctx context.Context, v judge.Verdict, met int) {
	var cut []string
	for _, c := range v.Culprits {
		if c.Reason == judge.ReasonUnreachable && slices.Contains(v.Absent, c.Node) {
			cut = append(cut, c.Node)
		}
	}
	if len(cut) == 0 || p.Relay == nil {
		return
	}
	w := judge.Word{By: p.Self, Met: met, CutOff: cut}
	text := FormatWord(p.Restart, w)
	log := p.Log.WithField("cut_off", hostlist.Compress(cut))
	if len(text) > maxWordLen {
		log.Warn("cross-node: too many nodes cut off to tell them through Slurm; they end unknown")
		return
	}
	if err := p.Relay.Publish(ctx, text); err != nil {
		log.WithError(err).Warn("cross-node: could not tell the cut-off nodes through Slurm; they end unknown")
		return
	}
	log.Info("cross-node: told the cut-off nodes through Slurm (job AdminComment)")
}

// pollWords is how often a lone node reads the relay.
const pollWords = time.Second

// alone is the phase of a node that met none of its peers: it probes its
// plan's peers and the coordinators directly, and, when it reached none
// of them, waits for a word that the others met without it and could not
// reach it either (JudgeAlone). Only net-connect can fail here; the other
// checks are unknown.
func (p Phase) alone(ctx context.Context, start time.Time, why error) []benchmarks.Result {
	nodes := slices.Sorted(slices.Values(p.Nodes))
	peers := p.alonePeers(nodes)
	pr := p.prober(p.Addrs[p.Self])
	in := judge.AloneInput{Self: p.Self, Nodes: nodes, Probes: p.probePorts(ctx, pr, peers),
		Timeout: p.Connect.ConnectTimeout, Tries: p.Connect.Tries}
	v := judge.JudgeAlone(in)
	if v.Reason == judge.ReasonAloneUndecided && len(v.Reached) == 0 && len(v.Unreached) >= 2 && p.Relay != nil {
		until := start.Add(p.wordWait())
		if dl, ok := ctx.Deadline(); ok {
			if end := dl.Add(-min(time.Second, time.Until(dl)/4)); end.Before(until) {
				until = end
			}
		}
		for {
			if text, err := p.Relay.Read(ctx); err == nil {
				in.Words = ParseWords(text, p.Restart)
				if v = judge.JudgeAlone(in); v.Outcome == judge.OutcomeFail {
					break
				}
			} else {
				p.Log.WithError(err).Debug("cross-node: reading the others' word")
			}
			if time.Until(until) < pollWords || osutil.Sleep(ctx, pollWords) != nil {
				break
			}
		}
	}
	p.Log.WithFields(map[string]any{"outcome": string(v.Outcome), "reason": v.Reason,
		"reached": v.Reached, "unreached": v.Unreached}).Warn("cross-node: met none of its peers")
	msg := v.Message + " (meeting: " + strings.TrimPrefix(why.Error(), "unknown: ") + ")"
	var out []benchmarks.Result
	for _, c := range p.Checks {
		r := benchmarks.Result{Check: c, Status: benchmarks.StatusUnknown, Reason: benchmarks.ReasonNoMeeting, Message: msg}
		if c == Connect {
			r.Status, r.Reason = benchmarks.Status(v.Outcome), v.Reason
			if v.Outcome == judge.OutcomeFail {
				r.Device = peerList("to:", v.Unreached)
			}
			r.Values = values(Connect, in.Probes)
		}
		out = append(out, r)
	}
	return out
}

// wordWait bounds a lone node's wait for the others' word, from the
// phase's start: their meetings (the join, each fallback), their probes
// of the absent nodes, the rounds, and slurmctld.
func (p Phase) wordWait() time.Duration {
	join := p.Connect.Join
	probe := time.Duration(p.Connect.Tries) * p.Connect.ConnectTimeout
	return join + time.Duration(p.Connect.Fallbacks)*max(join/2, time.Second) + rendezvous.DefaultSkew + 4*probe + 10*time.Second
}

// alonePeers are the peers a lone node probes: its peers in the plan over
// all the job's nodes (the same links the others probe it on) and the
// coordinators it tried, at most a few: O(1) per node, whatever the job's
// size.
func (p Phase) alonePeers(nodes []string) []string {
	links, _ := judge.Plan(nodes, p.Connect.Partners, seedOf(p.Job))
	peers := peersIn(links, p.Self)
	for i := 0; i <= p.Connect.Fallbacks && i < len(nodes); i++ {
		if nodes[i] != p.Self && !slices.Contains(peers, nodes[i]) {
			peers = append(peers, nodes[i])
		}
	}
	return peers
}

// probePorts connects to each peer's rendezvous port, all at once
// (inParallel). A connect that works, or that the peer's host refuses
// (it answered: nothing listens there now), reaches the peer; a timeout or
// an unreachable network does not.
func (p Phase) probePorts(ctx context.Context, pr *prober, peers []string) []judge.Measurement {
	out := make([]judge.Measurement, len(peers))
	inParallel(peers, func(i int, peer string) {
		m := judge.Measurement{From: p.Self, To: peer, Round: judge.RoundPlan}
		addr := p.Addrs[peer]
		if addr == "" {
			m.Status, m.Detail = judge.Failed, "no address"
			out[i] = m
			return
		}
		c, st, err := pr.reach(ctx, net.JoinHostPort(addr, strconv.Itoa(p.Connect.Port)))
		switch {
		case err == nil:
			c.Close()
		case st == judge.Refused:
			m.Detail = "refused: the host answered"
		default:
			m.Status, m.Detail = st, err.Error()
		}
		out[i] = m
	})
	return out
}

// peerList is a drain reason's device field naming peers: prefix, at most
// maxPeerNames of them, then "+N".
func peerList(prefix string, peers []string) string {
	if len(peers) == 0 {
		return ""
	}
	more := ""
	if len(peers) > maxPeerNames {
		more = fmt.Sprintf("+%d", len(peers)-maxPeerNames)
		peers = peers[:maxPeerNames]
	}
	return prefix + strings.Join(peers, ",") + more
}
