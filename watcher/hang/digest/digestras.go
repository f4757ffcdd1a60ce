package digest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Culprit reasons from NCCL's own view of the job (its RAS service's
// answers, trace.StreamRAS records).
const (
	// DigestRASDeadRank: RAS considers the host's process dead (it stopped
	// answering RAS's keep-alives for 60 s).
	DigestRASDeadRank = "RASDeadRank"
	// DigestRASUnresponsive: the host's process gave RAS no data in two
	// answers or more, at different times.
	DigestRASUnresponsive = "RASUnresponsive"
	// DigestRASBehind: the host's ranks launched fewer collectives of a
	// communicator than the rest of its ranks, at the same count in two
	// answers or more (RAS's "MISMATCH" of a job that does not move).
	DigestRASBehind = "RASBehind"
)

// digestFind is what a digest rule runs to name culprits.
type digestFind func(in DigestInput, ev evidence, c watchcfg.Hang) []DigestCulprit

// withRAS is find, then the culprits that NCCL's RAS answers name (ras)
// among the hosts find did not name.
func withRAS(find, ras digestFind) digestFind {
	return func(in DigestInput, ev evidence, c watchcfg.Hang) []DigestCulprit {
		out := find(in, ev, c)
		for _, cu := range ras(in, ev, c) {
			if !slices.ContainsFunc(out, func(o DigestCulprit) bool { return o.Host == cu.Host }) {
				out = append(out, cu)
			}
		}
		return out
	}
}

// orRAS is shows, or a RAS answer of kind k: the time of the first answer
// that showed the anomaly orders the cause among the others.
func orRAS(shows func(joblog.Match) bool, k joblog.Kind) func(joblog.Match) bool {
	return func(m joblog.Match) bool { return m.Kind == k || shows(m) }
}

// rasAnswer is one RAS answer of the digest's input.
type rasAnswer struct {
	at time.Time
	st trace.RAS
}

// rasAnswers are the RAS answers of every host, in time order.
func rasAnswers(ev evidence) []rasAnswer {
	var out []rasAnswer
	for _, l := range ev.all() {
		if l.Stream != trace.StreamRAS {
			continue
		}
		if st, ok := trace.ParseRAS(l.Line); ok {
			out = append(out, rasAnswer{l.Time, st})
		}
	}
	return out
}

// rasHost is the job's host of a RAS address: through in.Addrs (NCCL's
// start-up lines, the step's layout), or the address itself when it is a
// host's name; "" when it is neither: such a rank supports nothing.
func rasHost(in DigestInput, addr string) string {
	if h, ok := in.Addrs[addr]; ok {
		return h
	}
	if addr != "" && slices.Contains(digestHosts(in), addr) {
		return addr
	}
	return ""
}

// rasSeen gathers, per host, what RAS said against it and at which times.
type rasSeen map[string]map[string][]time.Time // host -> words -> answer times

func (s rasSeen) add(host, words string, at time.Time) {
	if s[host] == nil {
		s[host] = map[string][]time.Time{}
	}
	if ts := s[host][words]; len(ts) == 0 || !ts[len(ts)-1].Equal(at) {
		s[host][words] = append(ts, at)
	}
}

// culprits names the hosts with words seen in at least repeat answers,
// each with those words (at most evidenceLines) and how many answers.
func (s rasSeen) culprits(reason string, repeat int, extra map[string]map[string]any) []DigestCulprit {
	var out []DigestCulprit
	for _, h := range slices.Sorted(maps.Keys(s)) {
		var said []string
		answers := 0
		for _, w := range slices.Sorted(maps.Keys(s[h])) {
			if n := len(s[h][w]); n >= repeat {
				said = append(said, w)
				answers = max(answers, n)
			}
		}
		if len(said) == 0 {
			continue
		}
		e := map[string]any{"ras": said[:min(len(said), evidenceLines)], "answers": answers}
		for k, v := range extra[h] {
			e[k] = v
		}
		out = append(out, DigestCulprit{Host: h, Reason: reason, Evidence: e})
	}
	return out
}

// rasFailed names the hosts whose processes NCCL's RAS considers dead
// (one answer is enough: RAS waited 60 s before it said so), then those
// whose processes or ranks gave it no data in two answers at different
// times (a single answer can race a process that was only slow).
func rasFailed(in DigestInput, ev evidence, c watchcfg.Hang) []DigestCulprit {
	dead, silent := rasSeen{}, rasSeen{}
	for _, a := range rasAnswers(ev) {
		for _, p := range a.st.Dead {
			if h := rasHost(in, p.Host); h != "" {
				dead.add(h, "dead: "+rasWords(p), a.at)
			}
		}
		for _, p := range a.st.Unresponsive {
			if h := rasHost(in, p.Host); h != "" {
				silent.add(h, "no data: "+rasWords(p), a.at)
			}
		}
		for _, cm := range a.st.Comms {
			for _, r := range cm.Missing {
				h := rasHost(in, r.Host)
				switch {
				case h == "":
				case r.Dead:
					dead.add(h, "dead: "+rasWords(r)+" of comm "+cm.Hash, a.at)
				default:
					silent.add(h, "no data: "+rasWords(r)+" of comm "+cm.Hash, a.at)
				}
			}
		}
	}
	out := dead.culprits(DigestRASDeadRank, 1, nil)
	for _, cu := range silent.culprits(DigestRASUnresponsive, 2, nil) {
		if _, ok := dead[cu.Host]; !ok {
			out = append(out, cu)
		}
	}
	return out
}

// rasBehind names the hosts whose ranks RAS lists behind the rest of a
// communicator's ranks in the collectives of one type (fewer launched
// than the most any rank launched), when they are fewer than half its
// ranks counted and two answers at different times have them at the same
// count: the job does not move. RAS lists a group's ranks only when the
// group is small, so a majority behind one rank that ran ahead names no
// one (the rank ahead is no culprit).
func rasBehind(in DigestInput, ev evidence, c watchcfg.Hang) []DigestCulprit {
	behind := rasSeen{}
	extra := map[string]map[string]any{}
	for _, a := range rasAnswers(ev) {
		for _, cm := range a.st.Comms {
			for op, groups := range countsByOp(cm.Counts) {
				most, total, late := int64(-1), 0, 0
				for _, g := range groups {
					most, total = max(most, g.Count), total+g.Ranks
				}
				for _, g := range groups {
					if g.Count < most {
						late += g.Ranks
					}
				}
				if late == 0 || 2*late >= total {
					continue
				}
				for _, g := range groups {
					if g.Count >= most {
						continue
					}
					for _, r := range g.Listed {
						h := rasHost(in, r.Host)
						if h == "" {
							continue
						}
						name := op
						if name == "" {
							name = "collective"
						}
						behind.add(h, fmt.Sprintf("%s at %s %d of comm %s, others up to %d", rasWords(r), name, g.Count, cm.Hash, most), a.at)
						extra[h] = map[string]any{"comm": cm.Hash, "op": name, "count": g.Count, "others_max": most}
					}
				}
			}
		}
	}
	return behind.culprits(DigestRASBehind, 2, extra)
}

// countsByOp groups a communicator's counts by collective type.
func countsByOp(counts []trace.RASCount) map[string][]trace.RASCount {
	out := map[string][]trace.RASCount{}
	for _, n := range counts {
		out[n.Op] = append(out[n.Op], n)
	}
	return out
}

// rasWords says a rank or process of a RAS answer for people: "rank 13
// (pid 52011, GPU 1) on 10.0.0.14", "process 41207 (GPU 2) on 10.0.0.13".
func rasWords(r trace.RASRank) string {
	who := fmt.Sprintf("rank %d", r.Rank)
	if r.Rank < 0 {
		who = "process"
	}
	var in []string
	if r.PID > 0 {
		if r.Rank < 0 {
			who = fmt.Sprintf("process %d", r.PID)
		} else {
			in = append(in, fmt.Sprintf("pid %d", r.PID))
		}
	}
	if r.GPU != "" {
		in = append(in, "GPU "+r.GPU)
	}
	s := who
	if len(in) > 0 {
		s += " (" + strings.Join(in, ", ") + ")"
	}
	return s + " on " + r.Host
}
