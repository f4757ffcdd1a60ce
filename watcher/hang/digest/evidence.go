package digest

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/watcher/joblog"
)

// evidence is the matched lines of a digest's input by host and kind.
type evidence struct {
	byHost map[string][]LogEvidence
	hosts  []string      // hosts with lines, sorted
	job    []LogEvidence // lines that name no host (job-level)
}

// newEvidence sorts in's lines by host. A task's exit is no evidence that its rank failed when something else
// ended it: a task killed by SIGTERM (srun's "Terminated", torchrun's
// exit code -15), the signal of a cancel, of a time limit and of a
// launcher that tears the job down, a task that srun reports ended
// after slurmstepd said the step or the job was cancelled (afterCancel),
// and tasks srun reports killed when it says so of several on one host
// with no out-of-memory word there (outsideKills). Nor is a task's exit or
// a traceback on a host whose rank could not reach the job's rendezvous
// (joblog.KindRendezvous): it never met its peers, and left for that.
func newEvidence(in DigestInput) evidence {
	e := evidence{byHost: map[string][]LogEvidence{}}
	plain, sched := cancels(in.Logs)
	outside := outsideKills(in.Logs)
	unmet := map[string]bool{}
	for _, l := range in.Logs {
		if l.Match.Kind == joblog.KindRendezvous && l.Host != "" {
			unmet[l.Host] = true
		}
	}
	for _, l := range in.Logs {
		if l.Match.Kind == joblog.KindTaskExit && (teardown(l.Line) || afterCancel(l.Time, plain, sched) ||
			outside[l.Host] && reSrunKilled.MatchString(l.Line)) {
			continue
		}
		if (l.Match.Kind == joblog.KindTraceback || l.Match.Kind == joblog.KindPeerClosed) && inOutsideTeardown(l.Time, sched) {
			continue
		}
		if unmet[l.Host] && (l.Match.Kind == joblog.KindTaskExit || l.Match.Kind == joblog.KindTraceback) {
			continue
		}
		if l.Host == "" {
			e.job = append(e.job, l)
			continue
		}
		if _, ok := e.byHost[l.Host]; !ok {
			e.hosts = append(e.hosts, l.Host)
		}
		e.byHost[l.Host] = append(e.byHost[l.Host], l)
	}
	sort.Strings(e.hosts)
	return e
}

// all returns every line, of the hosts and of the job, in time order.
func (e evidence) all() []LogEvidence {
	out := append([]LogEvidence(nil), e.job...)
	for _, h := range e.hosts {
		out = append(out, e.byHost[h]...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// of returns host's lines for which keep holds.
func (e evidence) of(host string, keep func(joblog.Match) bool) []LogEvidence {
	var out []LogEvidence
	for _, l := range e.byHost[host] {
		if keep(l.Match) {
			out = append(out, l)
		}
	}
	return out
}

// any reports whether some host has a line for which keep holds.
func (e evidence) any(keep func(joblog.Match) bool) bool {
	for _, h := range e.hosts {
		if len(e.of(h, keep)) > 0 {
			return true
		}
	}
	return false
}

// lines is the text of the first evidenceLines of ls.
func lines(ls []LogEvidence) []string {
	out := make([]string, 0, min(len(ls), evidenceLines))
	for _, l := range ls[:min(len(ls), evidenceLines)] {
		out = append(out, l.Line)
	}
	return out
}

// FirstFailure is the earliest of ls that says something failed
// (IsFailure), less the task exits something else ended (newEvidence's
// rules: a teardown's SIGTERM, an exit after a cancel, several tasks of a
// host killed at once): a job cancelled by its user (srun's "task 2:
// Terminated" after slurmstepd's "STEP ... CANCELLED") has none. False for
// none.
func FirstFailure(ls []LogEvidence) (LogEvidence, bool) {
	for _, l := range newEvidence(DigestInput{Logs: ls}).all() {
		if IsFailure(l.Match) {
			return l, true
		}
	}
	return LogEvidence{}, false
}

// outsideKills are the hosts where srun says several tasks were killed
// (SIGKILL: "task 3: Killed", "tasks 0-7: Killed") and no line of the
// host's is an out-of-memory kill. The kernel's OOM killer takes one
// process at a time, and a memory limit Slurm enforces is reported as
// "Out Of Memory" or an oom_kill event, so several tasks killed without
// that are the work of a signal from outside: a time limit, scancel, or
// srun tearing the step down after another task failed
// (--kill-on-bad-exit). One task killed may be the OOM killer's victim.
func outsideKills(ls []LogEvidence) map[string]bool {
	n, oom := map[string]int{}, map[string]bool{}
	for _, l := range ls {
		if l.Match.Kind == joblog.KindOOMKill {
			oom[l.Host] = true
		}
		m := reSrunKilled.FindStringSubmatch(l.Line)
		if m == nil || l.Match.Kind != joblog.KindTaskExit {
			continue
		}
		for _, r := range strings.Split(m[1], ",") {
			lo, hi, isRange := strings.Cut(r, "-")
			a, errA := strconv.Atoi(lo)
			b, errB := strconv.Atoi(hi)
			switch {
			case isRange && errA == nil && errB == nil && b >= a:
				n[l.Host] += b - a + 1
			case !isRange && errA == nil:
				n[l.Host]++
			}
		}
	}
	out := map[string]bool{}
	for h, k := range n {
		out[h] = k >= 2 && !oom[h]
	}
	return out
}

var reSrunKilled = regexp.MustCompile(`: tasks? ([\d,-]+): Killed\b`)

// cancels are the times of the first cancel of the step or the job that
// slurmstepd reported: plain ("*** STEP 7.0 ON n1 CANCELLED AT ... ***":
// scancel, or srun's own teardown after a task failed) and from outside
// ("... DUE TO TIME LIMIT ***", a requeue, a preemption, srun's "forcing
// job termination" when it was signalled, and "*** JOB 7 ON n1 CANCELLED
// AT ... ***": the whole job cancelled, which srun's teardown of a step
// never does); zero for none.
func cancels(ls []LogEvidence) (plain, sched time.Time) {
	for _, l := range ls {
		if l.Match.Kind != joblog.KindCancelled {
			continue
		}
		t := &plain
		if strings.Contains(l.Line, " DUE TO ") || strings.Contains(l.Line, "forcing job termination") || strings.Contains(l.Line, "*** JOB ") {
			t = &sched // the scheduler's, srun signalled from outside (joblog's reCancelled), or the whole job cancelled
		}
		if t.IsZero() || l.Time.Before(*t) {
			*t = l.Time
		}
	}
	return plain, sched
}

// afterCancel reports whether a task exit read at t followed a cancel: a
// plain one before t (srun's teardown follows the task failure that caused
// it, in the same read), or the scheduler's at t or before (a time limit
// does not wait for a task; a task that failed before it was read before).
func afterCancel(t, plain, sched time.Time) bool {
	return !plain.IsZero() && t.After(plain) || !sched.IsZero() && !t.Before(sched)
}

// outsideSlack is how long before the line of a cancel from outside its
// teardown may already show in the job's output: the ranks die of the
// signal slurmstepd sends before it writes the line, and their output
// reaches the file first (a rank whose peers died first prints gloo's
// "Connection closed by peer" and a traceback).
const outsideSlack = 5 * time.Second

// inOutsideTeardown reports whether a traceback or a peer's closed
// connection read at t belongs to the teardown of a cancel from outside at
// sched: at most outsideSlack before it, or after it.
func inOutsideTeardown(t, sched time.Time) bool {
	return !sched.IsZero() && !t.Before(sched.Add(-outsideSlack))
}

// reTeardown is a task ended by SIGTERM: srun's "task 0: Terminated"
// (strsignal(SIGTERM)), torchrun's "exitcode: -15" and "Signal 15
// (SIGTERM)".
var reTeardown = regexp.MustCompile(`: tasks? [\d,-]+: Terminated\b|exitcode\s*:\s*-15\b|\(exitcode: -15\)|(?i)\bsignal 15 \(SIGTERM\)`)

// teardown reports whether a task-exit line says SIGTERM ended the task.
func teardown(line string) bool { return reTeardown.MatchString(line) }
