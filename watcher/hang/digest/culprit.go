package digest

import (
	"fmt"
	"sort"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
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
	// CulpritProcessesStopped: some of the host's job processes are
	// stopped or traced (state T or t: SIGSTOP, a debugger, a job-control
	// stop) while no peer has any stopped (a rank suspended; the others
	// wait for it).
	CulpritProcessesStopped = "ProcessesStopped"
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
// the latest sample of each host (as hang.Detector.Latest gives).
//
// Heuristic: a culprit is an outlier among its peers. The rules, tried in
// this order, each name at most a minority of the hosts (fewer than half;
// a rule that would name half or more names none, since then nothing stands
// out), and a host is named once, by the first rule that matches:
//  1. ProcessesGone: no processes while some peer has processes;
//  2. FewerProcesses: fewer than half the median process count of the
//     others (when that median is at least 2);
//  3. ProcessesStopped: processes stopped or traced (state T or t) while
//     no peer has any (one stopped rank of several on the host, under a
//     launcher such as torchrun, stops the job as surely as all);
//  4. IdleWhilePeersBusy: mean device utilisation at most c.IdleUtil while
//     more than half of the other hosts with devices are at or above
//     c.HighUtil;
//  5. ProcessesInD: processes in state D while no peer has any;
//  6. StaleSamples: latest sample older than the newest by more than two
//     c.Period.
//
// A single host has no peers: Culprits returns nil for fewer than two hosts.
// The result is sorted by host name.
func Culprits(latest map[string]trace.Sample, c watchcfg.Hang) []Culprit {
	if len(latest) < 2 {
		return nil
	}
	p := newPeers(latest, c)
	named := map[string]bool{}
	var out []Culprit
	for _, r := range culpritRules {
		out = p.apply(r, c, named, out)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

// peers holds the facts about a job's hosts that the culprit rules compare
// each host with, gathered in one pass so that each rule is O(hosts).
type peers struct {
	latest    map[string]trace.Sample
	hosts     []string  // sorted
	newest    time.Time // of the latest samples
	procs     []float64 // process count of each host, sorted
	withProcs int       // hosts with processes
	withD     int       // hosts with processes in state D
	withT     int       // hosts with processes in state T or t
	withDevs  int       // hosts with devices
	busy      int       // hosts whose mean device utilisation is at least c.HighUtil
}

// newPeers gathers the facts of the hosts of latest.
func newPeers(latest map[string]trace.Sample, c watchcfg.Hang) peers {
	p := peers{latest: latest, hosts: make([]string, 0, len(latest)), procs: make([]float64, 0, len(latest))}
	for h, s := range latest {
		p.hosts = append(p.hosts, h)
		if s.Time.After(p.newest) {
			p.newest = s.Time
		}
	}
	sort.Strings(p.hosts)
	for _, h := range p.hosts {
		s := latest[h]
		p.procs = append(p.procs, float64(s.Procs))
		if s.Procs > 0 {
			p.withProcs++
		}
		if s.ProcsD > 0 {
			p.withD++
		}
		if s.ProcsT > 0 {
			p.withT++
		}
		if u, ok := meanUtil(s); ok {
			p.withDevs++
			if u >= c.HighUtil {
				p.busy++
			}
		}
	}
	sort.Float64s(p.procs)
	return p
}

// medianOthers is the median process count of the hosts other than one
// with x processes.
func (p *peers) medianOthers(x float64) float64 {
	idx := sort.SearchFloat64s(p.procs, x)
	at := func(k int) float64 {
		if k >= idx {
			k++
		}
		return p.procs[k]
	}
	n := len(p.procs) - 1
	if n%2 == 1 {
		return at(n / 2)
	}
	return (at(n/2-1) + at(n/2)) / 2
}

// culpritRule names a host for reason when match holds for its latest
// sample s; match's message says why, for people. match takes the peers by
// value: a pointer passed through a function value would move them to the
// heap on every call of Culprits.
type culpritRule struct {
	reason string
	match  func(p peers, s trace.Sample, c watchcfg.Hang) (msg string, ok bool)
}

// culpritRules are tried in this order; a host is named by the first that
// matches it.
var culpritRules = []culpritRule{
	{CulpritProcessesGone, processesGone},
	{CulpritFewerProcesses, fewerProcesses},
	{CulpritProcessesStopped, processesStopped},
	{CulpritIdleWhilePeersBusy, idleWhilePeersBusy},
	{CulpritProcessesInD, processesInD},
	{CulpritStaleSamples, staleSamples},
}

// apply tries r on every host not yet named and, if the matches are a
// minority of the hosts, names them: it marks them in named and appends
// them to out, which it returns.
func (p *peers) apply(r culpritRule, c watchcfg.Hang, named map[string]bool, out []Culprit) []Culprit {
	var hits []Culprit
	for _, h := range p.hosts {
		if named[h] {
			continue
		}
		if msg, ok := r.match(*p, p.latest[h], c); ok {
			hits = append(hits, Culprit{Host: h, Reason: r.reason, Message: msg})
		}
	}
	if len(hits) == 0 || 2*len(hits) >= len(p.hosts) {
		return out
	}
	for _, x := range hits {
		named[x.Host] = true
		out = append(out, x)
	}
	return out
}

// processesGone: no processes left while some peer has processes.
func processesGone(p peers, s trace.Sample, c watchcfg.Hang) (string, bool) {
	if s.Procs == 0 && p.withProcs > 0 {
		return "no job processes left while peers still run theirs", true
	}
	return "", false
}

// fewerProcesses: fewer than half the median process count of the others,
// when that median is at least 2.
func fewerProcesses(p peers, s trace.Sample, c watchcfg.Hang) (string, bool) {
	m := p.medianOthers(float64(s.Procs))
	if m >= 2 && float64(s.Procs) < m/2 {
		return fmt.Sprintf("%d processes, peers have %.0f (median)", s.Procs, m), true
	}
	return "", false
}

// processesStopped: more than half of the host's processes stopped or
// traced while no peer has any stopped.
func processesStopped(p peers, s trace.Sample, c watchcfg.Hang) (string, bool) {
	if s.ProcsT > 0 && p.withT == 1 {
		return fmt.Sprintf("%d of %d processes stopped (T: SIGSTOP, a debugger, job control), peers none", s.ProcsT, s.Procs), true
	}
	return "", false
}

// idleWhilePeersBusy: devices idle while more than half of the other hosts
// with devices spin at high utilisation.
func idleWhilePeersBusy(p peers, s trace.Sample, c watchcfg.Hang) (string, bool) {
	u, ok := meanUtil(s)
	if !ok || u > c.IdleUtil {
		return "", false
	}
	// This host is idle, so it is not among the busy ones.
	if others := p.withDevs - 1; others > 0 && 2*p.busy > others {
		return fmt.Sprintf("devices at %.0f%% while %d of %d peers spin at >= %.0f%%", u, p.busy, others, c.HighUtil), true
	}
	return "", false
}

// processesInD: processes in state D while no peer has any.
func processesInD(p peers, s trace.Sample, c watchcfg.Hang) (string, bool) {
	if s.ProcsD > 0 && p.withD == 1 {
		return fmt.Sprintf("%d processes in uninterruptible sleep (D), peers none", s.ProcsD), true
	}
	return "", false
}

// staleSamples: latest sample older than the newest by more than two
// periods.
func staleSamples(p peers, s trace.Sample, c watchcfg.Hang) (string, bool) {
	if age := p.newest.Sub(s.Time); age > 2*c.Period {
		return fmt.Sprintf("latest sample %v older than its peers'", age), true
	}
	return "", false
}

// meanUtil is the mean utilisation of s's devices; ok is false without
// devices.
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
