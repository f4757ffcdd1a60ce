package judge

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Reasons of a node that met none of its peers.
const (
	// ReasonIsolated (a fail of net-connect): the node reached none of at
	// least two peers, while those peers met each other without it and
	// could not reach it either.
	ReasonIsolated = "NetIsolated"
	// ReasonPairCutOff (unknown): the two nodes of a 2-node job cannot
	// reach each other, and nothing tells which one is cut off.
	ReasonPairCutOff = "NetPairCutOff"
	// ReasonAloneUndecided (unknown): the node met nobody and either
	// reached some of its peers directly (the meeting failed, not its
	// network) or has no word that its peers met without it.
	ReasonAloneUndecided = "NetRendezvousFailed"
)

// Word is what the nodes of one meeting tell, through Slurm, the nodes
// that never met them: that they met, and which absent nodes none of
// them could reach (the absent culprits of their Verdict).
type Word struct {
	// By is the meeting's coordinator.
	By string
	// Met is how many nodes met, the coordinator included.
	Met int
	// CutOff are the absent nodes their probes found unreachable.
	CutOff []string
}

// AloneInput is what a node that met none of its peers saw.
type AloneInput struct {
	// Self is this node.
	Self string
	// Nodes are the job's nodes, Self included.
	Nodes []string
	// Probes are this node's connects to its peers (From Self). A probe
	// that connected, or that the peer's host refused (it answered), is
	// OK: the peer is reachable.
	Probes []Measurement
	// Words are the words of this run's meetings that reached this node.
	Words []Word
	// Timeout is one connect's limit and Tries the connects per peer, for
	// the message.
	Timeout time.Duration
	Tries   int
	// MaxNames is how many peer names the message lists (default 5).
	MaxNames int
}

// AloneVerdict is a lone node's own outcome under net-connect.
type AloneVerdict struct {
	Outcome Outcome
	// Reason is ReasonIsolated, ReasonPairCutOff or ReasonAloneUndecided.
	Reason string
	// Message is for people: what was tried and what it showed.
	Message string
	// Reached and Unreached are the peers probed, in node order.
	Reached, Unreached []string
	// Word is the meeting's word that confirmed the isolation, if any.
	Word *Word
}

// JudgeAlone decides the outcome of a node that met none of its peers (it
// could not reach any coordinator, or coordinated a meeting nobody came
// to), from what it can see itself and from what the others said:
//
//   - it reached a peer directly: its network works at least in part and
//     the meeting failed for another reason; unknown.
//   - a 2-node job whose nodes cannot reach each other: one of the two is
//     cut off, and neither can tell which; unknown on both, never a drain.
//   - it reached none of at least two peers, and a meeting of at least two
//     other nodes says that none of them could reach it either: it is
//     isolated; fail (NetIsolated). Only that word tells "they reach each
//     other" from "everybody's network is down" (a firewall on every
//     node), where nobody may be drained.
//   - otherwise (no such word): unknown.
func JudgeAlone(in AloneInput) AloneVerdict {
	if in.MaxNames <= 0 {
		in.MaxNames = DefaultOptions().MaxNames
	}
	v := AloneVerdict{Outcome: OutcomeUnknown, Reason: ReasonAloneUndecided}
	order := make(map[string]int, len(in.Nodes))
	for i, n := range in.Nodes {
		order[n] = i
	}
	reached := map[string]bool{}
	for _, m := range in.Probes {
		if m.From != in.Self || m.To == in.Self {
			continue
		}
		if m.Status == OK {
			reached[m.To] = true
		} else if _, ok := reached[m.To]; !ok {
			reached[m.To] = false
		}
	}
	for peer, ok := range reached {
		if ok {
			v.Reached = append(v.Reached, peer)
		} else {
			v.Unreached = append(v.Unreached, peer)
		}
	}
	byOrder := func(a, b string) int { return order[a] - order[b] }
	slices.SortFunc(v.Reached, byOrder)
	slices.SortFunc(v.Unreached, byOrder)
	how := fmt.Sprintf("connect timed out or failed, %d tries of %s", max(in.Tries, 1), in.Timeout)
	names := func(ns []string) string { return joinNames(ns, in.MaxNames) }
	switch {
	case len(reached) == 0:
		v.Message = "met none of its peers, and probed none"
	case len(v.Reached) > 0:
		v.Message = fmt.Sprintf("met none of its peers, but reached %s directly", names(v.Reached))
		if len(v.Unreached) > 0 {
			links := make([]string, len(v.Unreached))
			for i, u := range v.Unreached {
				links[i] = linkName(in.Self, u, order)
			}
			v.Message += fmt.Sprintf("; bad link %s (%s)", joinNames(links, in.MaxNames), how)
		}
		v.Message += ": the meeting failed, not this node's network"
	case len(in.Nodes) == 2:
		other := v.Unreached[0]
		v.Reason = ReasonPairCutOff
		v.Message = fmt.Sprintf("%s and %s cannot reach each other (%s); with two nodes nothing tells which one is cut off: nothing drained, test each with a third node",
			in.Self, other, how)
	case len(v.Unreached) < 2:
		v.Message = fmt.Sprintf("cannot reach %s (%s), the only peer probed", names(v.Unreached), how)
	default:
		v.Message = fmt.Sprintf("cannot reach %s (%s)", names(v.Unreached), how)
		for i, w := range in.Words {
			if w.Met >= 2 && w.By != in.Self && slices.Contains(w.CutOff, in.Self) {
				v.Outcome, v.Reason, v.Word = OutcomeFail, ReasonIsolated, &in.Words[i]
				v.Message += fmt.Sprintf("; %d nodes met without it (coordinator %s) and none could reach it; slurmd reaches it", w.Met, w.By)
				return v
			}
		}
		v.Message += "; no word that the others met and could not reach it (nothing drained: a fault everywhere, e.g. a firewall on every node, looks the same from here)"
	}
	return v
}

// linkName is "A-B" with the ends in node order, as the others' verdicts
// name a bad link.
func linkName(a, b string, order map[string]int) string {
	if order[b] < order[a] {
		a, b = b, a
	}
	return a + "-" + b
}

// joinNames joins names with commas, at most limit of them, then " +N more".
func joinNames(ns []string, limit int) string {
	if len(ns) <= limit {
		return strings.Join(ns, ",")
	}
	return strings.Join(ns[:limit], ",") + fmt.Sprintf(" +%d more", len(ns)-limit)
}
