package digest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// TestRootOutranksItsConsequence: a device fault or a transport error
// whose line names no host is the cause, and the host whose ranks died
// after it (processes gone, judged in a two-host job too) or the rank the
// line names is the culprit; a rank that died never outranks the root
// that explains it, and the digest says the chain.
func TestRootOutranksItsConsequence(t *testing.T) {
	gone := func(vs []HostView, host string) []HostView {
		for i := range vs {
			if vs[i].Host == host {
				vs[i].Latest.Procs = 0
			}
		}
		return vs
	}
	ecc := lg("", "RuntimeError: CUDA error: uncorrectable ECC error encountered")
	tests := []struct {
		name   string
		hosts  []HostView
		logs   []LogEvidence
		layout joblog.Layout
		want   string
	}{
		{"ECC, three hosts, one gone", gone(views(3), "gpu03"), []LogEvidence{ecc}, joblog.Layout{}, "bad-device gpu03 ProcessesGone"},
		{"ECC, two hosts, one gone", gone(views(2), "gpu02"), []LogEvidence{ecc}, joblog.Layout{}, "bad-device gpu02 ProcessesGone"},
		{"ECC, nobody gone: names nobody", views(2), []LogEvidence{ecc}, joblog.Layout{}, "bad-device"},
		{"torchrun names the rank", views(2), []LogEvidence{lg("", "rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>")},
			joblog.Layout{Nodes: []string{"gpu01", "gpu02"}, Ranks: map[int]string{0: "gpu01", 1: "gpu01", 2: "gpu02", 3: "gpu02"}},
			"rank-failed gpu02 RankNamed"},
		{"every host gone: names nobody", gone(gone(views(2), "gpu01"), "gpu02"), []LogEvidence{ecc}, joblog.Layout{}, "bad-device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Digest(DigestInput{Time: t0, Job: "1", Hosts: tt.hosts, Logs: tt.logs, Layout: tt.layout}, testConfig())
			got := d.Cause
			for _, c := range d.Culprits {
				got += " " + c.Host + " " + c.Reason
			}
			if got != tt.want {
				t.Fatalf("digest %q, want %q (because %q)", got, tt.want, d.Because)
			}
			if len(d.Culprits) > 0 && (len(d.Because) < 2 || !strings.Contains(d.Because[0], "(root, names no host)")) {
				t.Errorf("because %q: want the root, then what names the culprit", d.Because)
			}
		})
	}
}

// TestTwoHostJobJudgedOnItsReadings: a two-host job whose lines say
// nothing is judged on its readings, which the telemetry rules leave
// blank (they name a minority, never one host of two): one host's ranks
// gone while the other's run is rank-failed there, checked first; one
// host's processes in uninterruptible sleep (D) while the other's have
// none is data-stall there. Both alike, a line that says more, or a job
// that ended name nobody.
func TestTwoHostJobJudgedOnItsReadings(t *testing.T) {
	inD := func(vs []HostView, host string) []HostView {
		for i := range vs {
			if vs[i].Host == host {
				vs[i].Latest.ProcsD, vs[i].Latest.Accel = 4, []trace.Accel{{ID: "0", Util: 0}}
			}
		}
		return vs
	}
	gone := func(vs []HostView, host string) []HostView {
		for i := range vs {
			if vs[i].Host == host {
				vs[i].Latest.Procs, vs[i].Latest.Accel = 0, []trace.Accel{{ID: "0", Util: 0}}
			}
		}
		return vs
	}
	timeout := lg("gpu01", "[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 1 Rank 0] Timeout at NCCL work: 15734, last enqueued NCCL work: 15735, last completed NCCL work: 15733.")
	for _, tt := range []struct {
		name  string
		hosts []HostView
		logs  []LogEvidence
		ended bool
		want  string
	}{
		{"one host in D, the other none", inD(views(2), "gpu02"), nil, false, "data-stall gpu02 ProcessesInD"},
		{"both hosts in D", inD(inD(views(2), "gpu01"), "gpu02"), nil, false, "unknown"},
		{"gone first, then D", inD(gone(views(2), "gpu02"), "gpu01"), nil, false, "rank-failed gpu02 ProcessesGone"},
		{"one host gone", gone(views(2), "gpu01"), nil, false, "rank-failed gpu01 ProcessesGone"},
		{"in D after a collective timed out", inD(views(2), "gpu02"), []LogEvidence{timeout}, false, "unknown"},
		{"in D in a job that ended", inD(views(2), "gpu02"), nil, true, "unknown"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Digest(DigestInput{Time: t0, Job: "1", Hosts: tt.hosts, Logs: tt.logs, Ended: tt.ended}, testConfig())
			got := d.Cause
			for _, c := range d.Culprits {
				got += " " + c.Host + " " + c.Reason
			}
			if got != tt.want {
				t.Fatalf("digest %q, want %q (because %q)", got, tt.want, d.Because)
			}
			if len(d.Culprits) > 0 && d.Cause == CauseDataStall && (d.Culprits[0].Evidence["procs_d"] != 4 || len(d.Because) != 1) {
				t.Errorf("evidence %v, because %q", d.Culprits[0].Evidence, d.Because)
			}
		})
	}
}

// TestCrashSignalOnEveryHost: tasks that died of a crash signal on every
// host of the job (Open MPI's "*** Process received signal ***", srun's
// "Segmentation fault") are the program's failure, no host's: rank-failed,
// naming nobody. SIGKILL everywhere is a teardown; a crash on one host
// names it; a device fault or a collective that timed out first explains
// the crashes.
func TestCrashSignalOnEveryHost(t *testing.T) {
	ompi1 := lg("gpu01", "[gpu01:07215] *** Process received signal ***")
	ompi2 := lg("gpu02", "[gpu02:15288] *** Process received signal ***")
	segv1 := lg("gpu01", "srun: error: gpu01: task 0: Segmentation fault")
	segv2 := lg("gpu02", "srun: error: gpu02: task 2: Segmentation fault")
	killed1 := lg("gpu01", "srun: error: gpu01: task 0: Killed")
	killed2 := lg("gpu02", "srun: error: gpu02: task 2: Killed")
	ecc := lg("", "RuntimeError: CUDA error: uncorrectable ECC error encountered")
	wd1, wd2 := lg("gpu01", wd(0, "ALLREDUCE", 76)), lg("gpu02", wd(2, "ALLREDUCE", 76))
	late := func(l LogEvidence) LogEvidence { l.Time = t0.Add(time.Minute); return l }
	for _, tt := range []struct {
		name string
		logs []LogEvidence
		want string
	}{
		{"Open MPI's handler on both hosts", []LogEvidence{ompi1, ompi2}, "rank-failed"},
		{"srun's segfaults on both hosts", []LogEvidence{segv1, segv2}, "rank-failed"},
		{"killed on both hosts: a teardown", []LogEvidence{killed1, killed2}, "unknown"},
		{"a segfault on one host: its crash, not a kill", []LogEvidence{segv2}, "rank-failed gpu02 Crashed"},
		{"after a device fault", []LogEvidence{ecc, ompi1, ompi2}, "bad-device"},
		{"after a collective timed out", []LogEvidence{wd1, wd2, late(ompi1), late(ompi2)}, "unknown"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Digest(DigestInput{Time: t0, Job: "1", Hosts: views(2), Logs: tt.logs}, testConfig())
			got := d.Cause
			for _, c := range d.Culprits {
				got += " " + c.Host + " " + c.Reason
			}
			if got != tt.want {
				t.Fatalf("digest %q, want %q (because %q)", got, tt.want, d.Because)
			}
			if tt.want == CauseRankFailed && (len(d.Because) != 3 || !strings.Contains(d.Because[0], "every host (gpu01,gpu02)") ||
				!strings.Contains(d.Hint, "every host") || d.Origin != OriginJob) {
				t.Errorf("because %q, hint %q, origin %q", d.Because, d.Hint, d.Origin)
			}
		})
	}
}

// TestLocalRankClosedNamesItsHost: NCCL's service-thread INFO line
// "Connection closed by localRank 7", printed by several processes of one
// host, all naming the same local rank, with no collective timed out: that
// process left first, and its host is rank-failed. The same line at every
// exit or after a timeout (processes naming different local ranks, one
// process alone, every host alike, a timeout in the job) names nobody, and
// is no failure by itself.
func TestLocalRankClosedNamesItsHost(t *testing.T) {
	closed := func(host string, pid, dev, local int) LogEvidence {
		return lg(host, fmt.Sprintf("%s:%d:%d [%d] NCCL INFO [Service thread] Connection closed by localRank %d", host, pid, pid+870, dev, local))
	}
	seven := []LogEvidence{ // sgl-project/sglang#5013's, on gpu01
		lg("gpu01", "gpu01:343:1213 [5] NCCL INFO [Service thread] Connection closed by localRank 7"),
		lg("gpu01", "gpu01:344:1208 [6] NCCL INFO [Service thread] Connection closed by localRank 7"),
		lg("gpu01", "gpu01:341:1216 [3] NCCL INFO [Service thread] Connection closed by localRank 7"),
	}
	threeFour := []LogEvidence{ // modelscope/FunASR#2006's, on gpu02
		lg("gpu02", "gpu02:14051:14895 [0] NCCL INFO [Service thread] Connection closed by localRank 3"),
		lg("gpu02", "gpu02:14053:14893 [2] NCCL INFO [Service thread] Connection closed by localRank 3"),
		lg("gpu02", "gpu02:14051:14895 [0] NCCL INFO [Service thread] Connection closed by localRank 4"),
	}
	timeout := lg("gpu02", "[rank11]:[E ProcessGroupNCCL.cpp:1537] [PG 1 Rank 11] Timeout at NCCL work: 15734, last enqueued NCCL work: 15735, last completed NCCL work: 15733.")
	for _, tt := range []struct {
		name string
		logs []LogEvidence
		want string
	}{
		{"three processes name local rank 7", seven, "rank-failed gpu01 LocalRankClosed"},
		{"they name local ranks 3 and 4", threeFour, "unknown"},
		{"one process alone", []LogEvidence{seven[0], closed("gpu01", 343, 5, 7)}, "unknown"},
		{"every host alike", append(slices.Clone(seven), closed("gpu02", 51, 0, 1), closed("gpu02", 52, 2, 1)), "unknown"},
		{"a collective timed out", append(slices.Clone(seven), timeout), "unknown"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Digest(DigestInput{Time: t0, Job: "1", Hosts: views(2), Logs: tt.logs}, testConfig())
			got := d.Cause
			for _, c := range d.Culprits {
				got += " " + c.Host + " " + c.Reason
			}
			if got != tt.want {
				t.Fatalf("digest %q, want %q (because %q)", got, tt.want, d.Because)
			}
			if len(d.Culprits) == 1 && (d.Culprits[0].Evidence["local_rank"] != 7 || d.Culprits[0].Evidence["reported_by"] != 3) {
				t.Errorf("evidence %v", d.Culprits[0].Evidence)
			}
		})
	}
	if IsFailure(seven[0].Match) {
		t.Errorf("%q is a failure by itself", seven[0].Line)
	}
}

// TestSeveralTasksKilled: srun's word that several tasks of one host were
// killed (SIGKILL) with no out-of-memory word there is a kill from
// outside (a time limit, scancel, srun tearing the step down after another
// task failed), no fault of that host's; one task killed may be the OOM
// killer's victim and names its host.
func TestSeveralTasksKilled(t *testing.T) {
	runDigestCases(t, func(logs []LogEvidence) DigestInput {
		return DigestInput{Time: t0, Job: "1", Hosts: views(2), Logs: logs, Ended: true}
	}, nil, []digestCase{
		{"one task killed", []LogEvidence{lg("gpu01", "srun: error: gpu01: task 0: Killed")}, "rank-failed gpu01 RankKilled"},
		{"tasks 0-3 killed in one line", []LogEvidence{lg("gpu01", "srun: error: gpu01: tasks 0-3: Killed")}, "unknown"},
		{"two tasks killed, a line each", []LogEvidence{lg("gpu01", "srun: error: gpu01: task 11: Killed"),
			lg("gpu01", "srun: error: gpu01: task 19: Killed")}, "unknown"},
		{"tasks killed beside the host's oom-kill event", []LogEvidence{lg("gpu01", "srun: error: gpu01: tasks 0-3: Killed"),
			lg("gpu01", "slurmstepd: error: Detected 1 oom_kill event in StepId=7.0. Some of the step tasks have been OOM Killed.")},
			"rank-failed gpu01 OOMKilled"},
		{"srun kills the rest after one task failed", []LogEvidence{lg("gpu02", "srun: error: gpu02: task 5: Exited with exit code 1"),
			lg("gpu01", "srun: error: gpu01: tasks 0-3: Killed")}, "rank-failed gpu02 Crashed"},
	})
}

// TestRendezvousFailureNamesNobody: a rank that could not reach the job's
// TCPStore exits for that (its task's exit and traceback follow): the
// job's rendezvous failed, no host's fault shows, and the hint says what
// to check; another host's own crash is still named.
func TestRendezvousFailureNamesNobody(t *testing.T) {
	unmet := lg("gpu02", "gpu02: torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of (10.0.0.1, 1040). The client socket has failed to connect to 10.0.0.1:1040 (errno: 113 - No route to host).")
	exit := lg("gpu02", "gpu02: [2024-02-24 04:37:51,021] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3', '-u', 'train.py'] exits with return code = 1")
	tb := lg("gpu02", "gpu02: Traceback (most recent call last):")
	cuda := lg("gpu01", "srun: error: gpu01: task 0: Segmentation fault")
	runDigestCases(t, func(logs []LogEvidence) DigestInput {
		return DigestInput{Time: t0, Job: "1", Hosts: views(2), Logs: logs, Ended: true}
	}, func(t *testing.T, d DigestEvent) {
		if d.Cause == CauseUnknown && (d.Event != EventFailed || !strings.Contains(d.Hint, "MASTER_ADDR") || !strings.Contains(d.Hint, "10.0.0.1, 1040")) {
			t.Errorf("event %s, hint %q", d.Event, d.Hint)
		}
	}, []digestCase{
		{"the store unreachable, the rank's exit after", []LogEvidence{tb, unmet, exit}, "unknown"},
		{"beside another host's crash", []LogEvidence{unmet, exit, cuda}, "rank-failed gpu01 Crashed"},
	})
}

// TestWaiterThatLeftAfterTimeout: a coordination-service barrier timed
// out and its list names the tasks that never came (0 and 1); the host of
// task 3, gone after, waited at the barrier and left for the timeout: the
// tasks named are the odd ones out, not the host that left. Without the
// list, or without the timeout, the host whose processes are gone is
// named, as before.
func TestWaiterThatLeftAfterTimeout(t *testing.T) {
	layout := joblog.Layout{Nodes: []string{"gpu01", "gpu02", "gpu03", "gpu04"}, Ranks: map[int]string{0: "gpu01", 1: "gpu02", 2: "gpu03", 3: "gpu04"}}
	hosts := func() []HostView {
		vs := views(4)
		vs[3].Latest.Procs = 0
		return vs
	}
	deadline := lg("", "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: 0_async_write_complete.0.1. This usually happens because a task triggered the barrier too early or too slowly.")
	task0, task1 := lg("", "/job:jax_worker/replica:0/task:0"), lg("", "/job:jax_worker/replica:0/task:1")
	runDigestCases(t, func(logs []LogEvidence) DigestInput {
		return DigestInput{Time: t0, Job: "1", Hosts: hosts(), Logs: logs, Layout: layout}
	}, nil, []digestCase{
		{"the barrier names who never came", []LogEvidence{deadline, task0, task1}, "different-progress gpu01 CollectiveMismatch gpu02 CollectiveMismatch"},
		{"a timeout, no list", []LogEvidence{deadline}, "rank-failed gpu04 ProcessesGone"},
		{"a list, no timeout", []LogEvidence{task0, task1}, "rank-failed gpu04 ProcessesGone"},
	})
}

// digestCase is a table case of runDigestCases: the lines, and the digest
// as "cause host reason ...".
type digestCase struct {
	name string
	logs []LogEvidence
	want string
}

// runDigestCases runs Digest over in(case's lines) for each case and
// compares its cause and culprits; more, when set, checks the rest.
func runDigestCases(t *testing.T, in func([]LogEvidence) DigestInput, more func(*testing.T, DigestEvent), cases []digestCase) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			d := Digest(in(tt.logs), testConfig())
			got := d.Cause
			for _, c := range d.Culprits {
				got += " " + c.Host + " " + c.Reason
			}
			if got != tt.want {
				t.Fatalf("digest %q, want %q (because %q)", got, tt.want, d.Because)
			}
			if more != nil {
				more(t, d)
			}
		})
	}
}
