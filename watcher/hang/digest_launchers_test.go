package hang

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// endedJob feeds Episodes, as the batch host gpu01 records them, the
// layout of a 3-host job (ranks 0-3 on gpu01, 4-7 on gpu02, 8-11 on
// gpu03; the nodes' addresses), the lines of stream, then the
// coordinator's end record; it returns the failed digest.
func endedJob(t *testing.T, stream string, lines ...string) digest.DigestEvent {
	t.Helper()
	out := endedJobEvents(stream, lines...)
	if len(out) != 1 {
		t.Fatalf("events %+v, want one failed digest", out)
	}
	d, ok := out[0].(digest.DigestEvent)
	if !ok || d.Event != digest.EventFailed {
		t.Fatalf("event %+v, want a failed digest", out[0])
	}
	return d
}

// endedJobEvents is endedJob's job, and every event Due gives after its end.
func endedJobEvents(stream string, lines ...string) []any {
	hosts := []string{"gpu01", "gpu02", "gpu03"}
	l := joblog.Layout{Nodes: hosts, Ranks: map[int]string{},
		Addrs: map[string]string{"gpu01": "10.0.0.1", "gpu02": "10.0.0.2", "gpu03": "10.0.0.3"}}
	for r := range 12 {
		l.Ranks[r] = hosts[r/4]
	}
	lay, _ := json.Marshal(l)
	end, _ := json.Marshal(trace.End{Role: trace.RoleCoordinator, Why: trace.EndSignalled})
	e := NewLiveEpisodes(watchcfg.DefaultHang())
	at := t0.Add(time.Hour)
	rec := func(stream, line string) {
		e.Observe(trace.Sample{V: 1, Time: at, Host: "gpu01", Job: "9", Log: &trace.Log{Stream: stream, Line: line}}, nil)
		at = at.Add(time.Second)
	}
	rec(trace.StreamLayout, string(lay))
	for _, line := range lines {
		rec(stream, line)
	}
	rec(trace.StreamEnd, string(end))
	return e.Due(at)
}

// TestLauncherWordsDigest: a job that ends with nothing but a launcher's
// or runtime's own line gets a cause and the host the line names: an OOM
// kill or a signal is a rank killed on its node; ranks at odd with a
// collective are the odd ones out, on the hosts the layout places them;
// a lost Lustre connection is a data stall. Lines are real (public
// reports; hosts renamed to the job's).
func TestLauncherWordsDigest(t *testing.T) {
	for _, tt := range []struct {
		name, stream string
		lines        []string
		cause        string
		culprits     []string
		why, hint    string
	}{
		// https://github.com/jdh4/out_of_memory
		{"srun's OOM", trace.StreamStderr, []string{
			"srun: error: gpu02: task 1: Out Of Memory",
			"slurmstepd: error: Detected 1 oom-kill event(s) in step 3955284.0 cgroup. Some of your processes may have been killed by the cgroup out-of-memory handler.",
		}, digest.CauseRankFailed, []string{"gpu02"}, digest.DigestOOMKilled, "out of memory (OOM)"},
		// https://github.com/open-mpi/ompi/issues/2661
		{"mpirun's signal 9", trace.StreamStderr, []string{
			"mpirun noticed that process rank 0 with PID 21183 on node gpu03 exited on signal 9 (Killed).",
		}, digest.CauseRankFailed, []string{"gpu03"}, digest.DigestRankKilled, "killed by a signal"},
		{"mpirun's signal 9 by address", trace.StreamStderr, []string{
			"mpirun noticed that process rank 4 with PID 21183 on node 10.0.0.2 exited on signal 9 (Killed).",
		}, digest.CauseRankFailed, []string{"gpu02"}, digest.DigestRankKilled, "killed by a signal"},
		// https://github.com/open-mpi/ompi/pull/7735: the peer every rank names.
		{"Open MPI's peer hung up", trace.StreamStderr, []string{
			"An MPI communication peer process has unexpectedly disconnected.  This",
			"  Local host: gpu01",
			"  Peer host:  gpu02",
		}, digest.CauseRankFailed, []string{"gpu02"}, digest.DigestPeerClosed, ""},
		// https://github.com/modelscope/ms-swift/pull/9443
		{"c10d's collective mismatch", trace.StreamStderr, []string{
			"[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=3104, OpType=ALLREDUCE, TensorShape=[195812480], TensorDtypes=BFloat16), but Rank 5 is running collective: CollectiveFingerPrint(SequenceNumber=3104, OpType=ALLREDUCE, TensorShape=[51123456], TensorDtypes=BFloat16).",
		}, digest.CauseDifferentProgress, []string{"gpu01", "gpu02"}, digest.DigestCollectiveMismatch, "different places"},
		// https://pytorch.org/docs/stable/distributed.html (monitored_barrier)
		{"monitoredBarrier's failed ranks", trace.StreamStderr, []string{
			"RuntimeError: [Rank 0]: Ranks 9, 10 failed to pass monitoredBarrier in 30000 ms",
		}, digest.CauseDifferentProgress, []string{"gpu03"}, digest.DigestCollectiveMismatch, ""},
		// https://github.com/horovod/horovod/issues/1012
		{"Horovod's missing rank", trace.StreamStderr, []string{
			"[1,0]<stderr>:[2019-04-13 13:53:31.851506: W horovod/common/operations.cc:588] HorovodBroadcast_dense_1_bias_Momentum_0 [missing ranks: 5]",
		}, digest.CauseDifferentProgress, []string{"gpu02"}, digest.DigestCollectiveMismatch, ""},
		// https://github.com/pytorch/pytorch/issues/152623 (TraceUtils.h's desync report)
		{"PyTorch's desync report: a rank that did not join the next collective", trace.StreamStderr, []string{
			"[rank0]:[E515 18:36:47.341808597 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=241, OpType=ALLREDUCE, NumelIn=6, NumelOut=6, Timeout(ms)=600000) ran for 600086 milliseconds before timing out.",
			"         - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
			"             [9] finished collective #182, but didn't join collective #183 (count from 1)",
			"             [9] finished ALLREDUCE",
			"             [0, 1, 2] started ALLREDUCE",
		}, digest.CauseDifferentProgress, []string{"gpu03"}, digest.DigestCollectiveMismatch, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := endedJob(t, tt.stream, tt.lines...)
			var got []string
			for _, c := range d.Culprits {
				got = append(got, c.Host)
				if c.Reason != tt.why {
					t.Errorf("culprit %+v, want reason %s", c, tt.why)
				}
			}
			if d.Cause != tt.cause || strings.Join(got, ",") != strings.Join(tt.culprits, ",") {
				t.Errorf("cause %s culprits %v, want %s %v (%+v)", d.Cause, got, tt.cause, tt.culprits, d)
			}
			if !strings.Contains(d.Hint, tt.hint) {
				t.Errorf("hint %q, want it to say %q", d.Hint, tt.hint)
			}
		})
	}
}

// TestLauncherLooksAlike: a torchrun rank terminated by the job's own
// teardown (SIGTERM) is no failure (no digest); a mismatch naming ranks
// the layout cannot place, and one naming every rank, name nobody.
func TestLauncherLooksAlike(t *testing.T) {
	if out := endedJobEvents(trace.StreamStderr, "traceback : Signal 15 (SIGTERM) received by PID 2410413"); len(out) != 0 {
		t.Errorf("teardown: %+v, want no digest", out)
	}
	d := endedJob(t, trace.StreamStderr, "HorovodBroadcast_global_step_0 [missing ranks: 40]")
	if len(d.Culprits) != 0 {
		t.Errorf("an unplaced rank: %+v", d)
	}
	// https://github.com/hiyouga/LlamaFactory/issues/9496: every rank
	// joined the collective none finished.
	d = endedJob(t, trace.StreamStderr, "\t   - [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] joined but didn't finish collective #730 (count from 1)")
	if len(d.Culprits) != 0 {
		t.Errorf("every rank named: %+v", d)
	}
}
