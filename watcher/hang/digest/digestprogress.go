package digest

import (
	"sort"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/joblog"
)

// differentProgress names the odd ones out when the hosts' ranks are at
// different places, from the lines of PyTorch's watchdog and the job's
// progress lines, trying in order:
//  1. another collective (op type) than the others at the same sequence
//     number;
//  2. behind the others in the last completed NCCL work;
//  3. in another epoch than the others;
//  4. behind the others in steps (same epoch).
//
// A host's place is that of its slowest rank (its lowest value among the
// latest line of each rank). Each needs at least two hosts with lines.
func differentProgress(in DigestInput, ev evidence, c watchcfg.Hang) []DigestCulprit {
	ops, completed, epoch, step := hostPlaces(ev)
	for seq, byRank := range sortedSeqs(ops) {
		if odd := oddCategorical(byRank); len(odd) > 0 {
			first := map[string]string{} // host -> its first odd rank's key
			var hosts []string
			for _, k := range odd {
				if h := rankHost(k); first[h] == "" {
					first[h] = k
					hosts = append(hosts, h)
				}
			}
			return placeCulprits(hosts, DigestOtherCollective, ev, func(h string) map[string]any {
				return map[string]any{"seq": seq, "op": byRank[first[h]], "others_op": commonOther(byRank, first[h])}
			})
		}
	}
	if odd := oddBehind(completed); len(odd) > 0 {
		return placeCulprits(odd, DigestBehindInWork, ev, func(h string) map[string]any {
			return map[string]any{"last_completed": completed[h], "others_max": maxOf(completed)}
		})
	}
	if odd := oddCategorical(epoch); len(odd) > 0 {
		return placeCulprits(odd, DigestOtherEpoch, ev, func(h string) map[string]any {
			return map[string]any{"epoch": epoch[h], "others_epoch": commonOther(epoch, h)}
		})
	}
	if allEqual(epoch) {
		if odd := oddBehind(step); len(odd) > 0 {
			return placeCulprits(odd, DigestBehindInSteps, ev, func(h string) map[string]any {
				return map[string]any{"step": step[h], "others_max": maxOf(step)}
			})
		}
	}
	return nil
}

// hostPlaces gathers the op type each rank reported at each sequence
// number (keyed by rankKey: ranks, not hosts, are compared, since one
// host may hold ranks in different collectives), and per host the slowest
// rank's last completed work, epoch and step.
func hostPlaces(ev evidence) (ops map[int64]map[string]string, completed, epoch, step map[string]int64) {
	ops = map[int64]map[string]string{}
	completed, epoch, step = map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, h := range ev.hosts {
		type place struct{ completed, epoch, step int64 }
		ranks := map[int]*place{}
		for _, l := range ev.byHost[h] {
			m := l.Match
			p := ranks[m.Rank]
			if p == nil {
				p = &place{-1, -1, -1}
				ranks[m.Rank] = p
			}
			switch m.Kind {
			case joblog.KindWatchdog:
				if m.Seq >= 0 && m.Op != "" {
					if ops[m.Seq] == nil {
						ops[m.Seq] = map[string]string{}
					}
					ops[m.Seq][rankKey(h, m.Rank)] = m.Op
				}
				if m.Completed >= 0 {
					p.completed = m.Completed
				}
			case joblog.KindProgress:
				p.epoch, p.step = m.Epoch, m.Step
			}
		}
		for _, p := range ranks {
			lowest(completed, h, p.completed)
			if p.epoch >= 0 {
				lowest(epoch, h, p.epoch)
			}
			if p.step >= 0 && (p.epoch < 0 || p.epoch == epoch[h]) {
				lowest(step, h, p.step)
			}
		}
	}
	return ops, completed, epoch, step
}

// rankKey keys a rank of host h (a line without a rank: the host's
// unranked lines, one key); rankHost gives the host back.
func rankKey(h string, rank int) string { return h + "\x00" + strconv.Itoa(rank) }

func rankHost(k string) string { h, _, _ := strings.Cut(k, "\x00"); return h }

// lowest keeps in m[h] the lowest non-negative v.
func lowest(m map[string]int64, h string, v int64) {
	if v < 0 {
		return
	}
	if old, ok := m[h]; !ok || v < old {
		m[h] = v
	}
}

// sortedSeqs returns ops as a list ordered by sequence number, so that the
// rule looks at sequence numbers in a fixed order. It yields, like a map
// range, the sequence number and the op per rank.
func sortedSeqs(ops map[int64]map[string]string) func(yield func(int64, map[string]string) bool) {
	seqs := make([]int64, 0, len(ops))
	for s := range ops {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return func(yield func(int64, map[string]string) bool) {
		for _, s := range seqs {
			if !yield(s, ops[s]) {
				return
			}
		}
	}
}

// oddCategorical names the hosts whose value differs from the unique most
// common one; when no value is the unique most common, every host. Fewer
// than two hosts, or all equal: none.
func oddCategorical[V comparable](vals map[string]V) []string {
	if len(vals) < 2 || allEqual(vals) {
		return nil
	}
	count := map[V]int{}
	for _, v := range vals {
		count[v]++
	}
	var top V
	most, unique := 0, false
	for v, n := range count {
		switch {
		case n > most:
			top, most, unique = v, n, true
		case n == most:
			unique = false
		}
	}
	var out []string
	for h, v := range vals {
		if !unique || v != top {
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}

// oddBehind names the hosts behind: below the value a strict majority
// holds; without a majority, the hosts at the lowest value when they are
// at most half. Fewer than two hosts, or all equal: none.
func oddBehind(vals map[string]int64) []string {
	if len(vals) < 2 || allEqual(vals) {
		return nil
	}
	count := map[int64]int{}
	low := int64(-1)
	for _, v := range vals {
		count[v]++
		if low < 0 || v < low {
			low = v
		}
	}
	bar := int64(-1)
	for v, n := range count {
		if 2*n > len(vals) {
			bar = v // below the majority
		}
	}
	if bar < 0 && 2*count[low] <= len(vals) {
		bar = low + 1 // at the lowest
	}
	var out []string
	for h, v := range vals {
		if v < bar {
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}

func allEqual[V comparable](vals map[string]V) bool {
	first, set := *new(V), false
	for _, v := range vals {
		if set && v != first {
			return false
		}
		first, set = v, true
	}
	return true
}

func maxOf(vals map[string]int64) int64 {
	m := int64(-1)
	for _, v := range vals {
		m = max(m, v)
	}
	return m
}

// commonOther is the most common value among the hosts other than h (ties:
// the value of the first such host by name).
func commonOther[V comparable](vals map[string]V, h string) V {
	hosts := make([]string, 0, len(vals))
	for x := range vals {
		if x != h {
			hosts = append(hosts, x)
		}
	}
	sort.Strings(hosts)
	count := map[V]int{}
	var top V
	most := 0
	for _, x := range hosts {
		v := vals[x]
		count[v]++
		if count[v] > most {
			top, most = v, count[v]
		}
	}
	return top
}

// placeCulprits makes culprits of hosts for reason, with the evidence e
// gives and the host's last watchdog or progress lines.
func placeCulprits(hosts []string, reason string, ev evidence, e func(string) map[string]any) []DigestCulprit {
	out := make([]DigestCulprit, 0, len(hosts))
	for _, h := range hosts {
		x := e(h)
		ls := ev.of(h, func(m joblog.Match) bool { return m.Kind == joblog.KindWatchdog || m.Kind == joblog.KindProgress })
		if len(ls) > evidenceLines {
			ls = ls[len(ls)-evidenceLines:]
		}
		x["lines"] = lines(ls)
		out = append(out, DigestCulprit{Host: h, Reason: reason, Evidence: x})
	}
	return out
}
