package hang

import (
	"fmt"
	"sort"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Culprit reasons.
const (
	// CulpritProcessesGone: the host has no job processes left while its
	// peers still have theirs (a rank died; the others wait for it).
	CulpritProcessesGone = "ProcessesGone"
	// CulpritFewerProcesses: the host has less than half the processes of
	// its peers (median).
	CulpritFewerProcesses = "FewerProcesses"
	// CulpritIdleWhilePeersBusy: the host's devices are idle while most of
	// its peers' devices spin at high utilisation (the peers wait in a
	// collective for this host).
	CulpritIdleWhilePeersBusy = "IdleWhilePeersBusy"
	// CulpritProcessesInD: the host has processes in uninterruptible sleep
	// (waiting on storage or a driver) and its peers none.
	CulpritProcessesInD = "ProcessesInD"
	// CulpritStaleSamples: the host's latest sample is more than two periods
	// older than the newest of its peers (its watcher or the node is gone).
	CulpritStaleSamples = "StaleSamples"
)

// Culprit is a host named as the likely cause of a job's hang.
type Culprit struct {
	Host    string `json:"host"`
	Reason  string `json:"reason"`  // one of the Culprit constants
	Message string `json:"message"` // for people
}

// Culprits names the hosts that likely cause a multi-host job's hang, from
// the latest sample of each host (as Detector.Latest gives).
//
// Heuristic: a culprit is an outlier among its peers. The rules, tried in
// this order, each name at most a minority of the hosts (fewer than half;
// a rule that would name half or more names none, since then nothing stands
// out), and a host is named once, by the first rule that matches:
//  1. ProcessesGone: no processes while some peer has processes;
//  2. FewerProcesses: fewer than half the median process count of the
//     others (when that median is at least 2);
//  3. IdleWhilePeersBusy: mean device utilisation at most c.IdleUtil while
//     more than half of the other hosts with devices are at or above
//     c.HighUtil;
//  4. ProcessesInD: processes in state D while no peer has any;
//  5. StaleSamples: latest sample older than the newest by more than two
//     c.Period.
//
// A single host has no peers: Culprits returns nil for fewer than two hosts.
// The result is sorted by host name.
func Culprits(latest map[string]trace.Sample, c Config) []Culprit {
	if len(latest) < 2 {
		return nil
	}
	hosts := make([]string, 0, len(latest))
	var newest time.Time
	for h, s := range latest {
		hosts = append(hosts, h)
		if s.Time.After(newest) {
			newest = s.Time
		}
	}
	sort.Strings(hosts)
	named := map[string]bool{}
	var out []Culprit
	// rule applies pred to every host not yet named and keeps the matches
	// if they are a minority.
	rule := func(reason string, pred func(h string, s trace.Sample) (string, bool)) {
		var hits []Culprit
		for _, h := range hosts {
			if named[h] {
				continue
			}
			if msg, ok := pred(h, latest[h]); ok {
				hits = append(hits, Culprit{Host: h, Reason: reason, Message: msg})
			}
		}
		if len(hits) == 0 || 2*len(hits) >= len(hosts) {
			return
		}
		for _, x := range hits {
			named[x.Host] = true
			out = append(out, x)
		}
	}
	// Per-host facts and their totals, so that each rule is O(hosts).
	procs := make([]float64, 0, len(hosts))
	withProcs, withD, withDevs, busy := 0, 0, 0, 0
	for _, h := range hosts {
		s := latest[h]
		procs = append(procs, float64(s.Procs))
		if s.Procs > 0 {
			withProcs++
		}
		if s.ProcsD > 0 {
			withD++
		}
		if u, ok := meanUtil(s); ok {
			withDevs++
			if u >= c.HighUtil {
				busy++
			}
		}
	}
	sort.Float64s(procs)
	// medianOthers is the median process count of the hosts other than one
	// with x processes.
	medianOthers := func(x float64) float64 {
		idx := sort.SearchFloat64s(procs, x)
		at := func(k int) float64 {
			if k >= idx {
				k++
			}
			return procs[k]
		}
		n := len(procs) - 1
		if n%2 == 1 {
			return at(n / 2)
		}
		return (at(n/2-1) + at(n/2)) / 2
	}
	rule(CulpritProcessesGone, func(h string, s trace.Sample) (string, bool) {
		if s.Procs == 0 && withProcs > 0 {
			return "no job processes left while peers still run theirs", true
		}
		return "", false
	})
	rule(CulpritFewerProcesses, func(h string, s trace.Sample) (string, bool) {
		m := medianOthers(float64(s.Procs))
		if m >= 2 && float64(s.Procs) < m/2 {
			return fmt.Sprintf("%d processes, peers have %.0f (median)", s.Procs, m), true
		}
		return "", false
	})
	rule(CulpritIdleWhilePeersBusy, func(h string, s trace.Sample) (string, bool) {
		u, ok := meanUtil(s)
		if !ok || u > c.IdleUtil {
			return "", false
		}
		// This host is idle, so it is not among the busy ones.
		if others := withDevs - 1; others > 0 && 2*busy > others {
			return fmt.Sprintf("devices at %.0f%% while %d of %d peers spin at >= %.0f%%", u, busy, others, c.HighUtil), true
		}
		return "", false
	})
	rule(CulpritProcessesInD, func(h string, s trace.Sample) (string, bool) {
		if s.ProcsD > 0 && withD == 1 {
			return fmt.Sprintf("%d processes in uninterruptible sleep (D), peers none", s.ProcsD), true
		}
		return "", false
	})
	rule(CulpritStaleSamples, func(h string, s trace.Sample) (string, bool) {
		if age := newest.Sub(s.Time); age > 2*c.Period {
			return fmt.Sprintf("latest sample %v older than its peers'", age), true
		}
		return "", false
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

func meanUtil(s trace.Sample) (float64, bool) {
	if len(s.Accel) == 0 {
		return 0, false
	}
	var sum float64
	for _, a := range s.Accel {
		sum += a.Util
	}
	return sum / float64(len(s.Accel)), true
}
