package digest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/joblog"
)

// TestJobLevelLinesNeverMakeACulprit: a CUDA ECC error with no prefix,
// read on the batch host from the job's output, supports the cause
// bad-device but names no host: before, it was charged to the batch host,
// which the epilog then re-checked while the faulty host ran on.
func TestJobLevelLinesNeverMakeACulprit(t *testing.T) {
	in := DigestInput{Time: t0, Job: "7", Hosts: views(4), Logs: []LogEvidence{
		lg("", "RuntimeError: CUDA error: uncorrectable ECC error encountered"),
		lg("", "Traceback (most recent call last):"),
	}}
	d := Digest(in, watchcfg.DefaultHang())
	if d.Cause != CauseBadDevice || len(d.Culprits) != 0 || len(d.JobEvidence) != 1 {
		t.Fatalf("digest %+v, want bad-device with no culprit and the line as job evidence", d)
	}
	if slices.Contains(d.Hosts, "") || !strings.Contains(d.Hint, "no line names the host") {
		t.Errorf("hosts %v, hint %q", d.Hosts, d.Hint)
	}
}

// TestTaskExitNamesItsHost: srun's "task 2: Exited" line, read on the
// batch host but naming gpu03, makes gpu03 the rank that failed.
func TestTaskExitNamesItsHost(t *testing.T) {
	line := "srun: error: gpu03: task 2: Exited with exit code 1"
	src := joblog.Attribute(line, joblog.Layout{Nodes: []string{"gpu01", "gpu02", "gpu03"}})
	in := DigestInput{Time: t0, Job: "7", Hosts: views(3), Logs: []LogEvidence{lg(src.Host, line)}}
	d := Digest(in, watchcfg.DefaultHang())
	if d.Cause != CauseRankFailed || len(d.Culprits) != 1 || d.Culprits[0].Host != "gpu03" {
		t.Fatalf("digest %+v, want rank-failed gpu03", d)
	}
}

// TestExitAfterCancelIsNoFailure: a task that srun reports ended by
// SIGTERM ("Terminated"), or ended after slurmstepd said the scheduler
// cancelled the job (a requeue, a time limit: read in the same poll or
// later), is no rank that failed; a task that died of a signal before a
// plain cancel (srun's own teardown after it, read in the same poll) and
// one that ended before the scheduler's cancel was read still are.
func TestExitAfterCancelIsNoFailure(t *testing.T) {
	at := func(l LogEvidence, m int) LogEvidence { l.Time = t0.Add(time.Duration(m) * time.Minute); return l }
	requeue := "slurmstepd: error: *** JOB 608 ON gpu01 CANCELLED AT 2022-08-12T02:06:12 DUE TO JOB REQUEUE ***"
	plain := "slurmstepd: error: *** STEP 3495450.0 ON gpu01 CANCELLED AT 2021-10-27T20:22:22 ***"
	exit1 := "srun: error: gpu02: tasks 2-3: Exited with exit code 1"
	bus := "srun: error: gpu02: task 289: Bus error"
	for _, tt := range []struct {
		name    string
		logs    []LogEvidence
		cause   string
		culprit string
	}{
		{"terminated by SIGTERM", []LogEvidence{lg("gpu01", "srun: error: gpu01: task 0: Terminated")}, CauseUnknown, ""},
		{"after a requeue, same poll", []LogEvidence{at(lg("", requeue), 30), at(lg("gpu02", exit1), 30)}, CauseUnknown, ""},
		{"after a requeue, later", []LogEvidence{at(lg("", requeue), 30), at(lg("gpu02", exit1), 31)}, CauseUnknown, ""},
		{"before a requeue", []LogEvidence{at(lg("gpu02", exit1), 29), at(lg("", requeue), 30)}, CauseRankFailed, "gpu02"},
		{"before srun's own cancel, same poll", []LogEvidence{at(lg("gpu02", bus), 30), at(lg("", plain), 30)}, CauseRankFailed, "gpu02"},
		{"after a plain cancel", []LogEvidence{at(lg("", plain), 30), at(lg("gpu02", bus), 31)}, CauseUnknown, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Digest(DigestInput{Time: t0, Job: "7", Hosts: views(3), Logs: tt.logs}, watchcfg.DefaultHang())
			named := ""
			for _, c := range d.Culprits {
				named += c.Host
			}
			if d.Cause != tt.cause || named != tt.culprit {
				t.Errorf("digest %s %q, want %s %q", d.Cause, named, tt.cause, tt.culprit)
			}
		})
	}
	if _, ok := joblog.LineIn("", "slurmstepd: error: *** JOB 7 ON gpu01 CANCELLED AT 2024-01-01T00:00:00 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"); ok {
		t.Error("a cancel due to a node failure is read as the scheduler's cancel")
	}
}

// TestCauseByTime: a transport error at 10:30 on gpu01's link to gpu03,
// then tracebacks of ranks that exit because of it at 10:31: the earliest
// anomaly explains what follows, so the cause is network, and the digest
// lists the chain it saw. The same lines the other way round (a crash,
// then the peers' transport errors) stay rank-failed.
func TestCauseByTime(t *testing.T) {
	ib := "gpu01:100:200 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.3<52318> with error 12, opcode 1, len 0, vendor err 129"
	ib2 := "gpu02:100:200 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.3<52318> with error 12, opcode 1, len 0, vendor err 129"
	tb := "Traceback (most recent call last):"
	at := func(l LogEvidence, m int) LogEvidence { l.Time = t0.Add(time.Duration(m) * time.Minute); return l }
	addrs := map[string]string{"10.0.0.3": "gpu03"}
	for _, tt := range []struct {
		name  string
		logs  []LogEvidence
		cause string
	}{
		{"transport errors first", []LogEvidence{at(lg("gpu01", ib), 30), at(lg("gpu02", ib2), 30), at(lg("gpu04", tb), 31)}, CauseNetwork},
		{"a crash first", []LogEvidence{at(lg("gpu04", tb), 29), at(lg("gpu01", ib), 30), at(lg("gpu02", ib2), 30)}, CauseRankFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Digest(DigestInput{Time: t0, Job: "7", Hosts: views(4), Logs: tt.logs, Addrs: addrs}, watchcfg.DefaultHang())
			if d.Cause != tt.cause || len(d.Chain) != 2 || !strings.HasPrefix(d.Chain[0], tt.cause+" at ") {
				t.Errorf("cause %s, chain %q; want %s first", d.Cause, d.Chain, tt.cause)
			}
		})
	}
}
