package hang

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// failedJob feeds Episodes the batch host's records of a 3-host job that
// ended: the layout (with the nodes' addresses), lines, then gpu01's end
// record with role; it returns what Due gives after the end.
func failedJob(t *testing.T, role string, lines ...string) []any {
	t.Helper()
	hosts := []string{"gpu01", "gpu02", "gpu03"}
	lay, _ := json.Marshal(joblog.Layout{Nodes: hosts, Addrs: map[string]string{"gpu01": "10.0.0.1", "gpu02": "10.0.0.2", "gpu03": "10.0.0.3"}})
	end, _ := json.Marshal(trace.End{Role: role, Why: trace.EndSignalled})
	e := NewLiveEpisodes(watchcfg.DefaultHang())
	at := t0.Add(time.Hour)
	rec := func(stream, line string) {
		e.Observe(trace.Sample{V: 1, Time: at, Host: "gpu01", Job: "9", Log: &trace.Log{Stream: stream, Line: line}}, nil)
		at = at.Add(time.Second)
	}
	rec(trace.StreamLayout, string(lay))
	for _, l := range lines {
		rec(trace.StreamStderr, l)
	}
	rec(trace.StreamEnd, string(end))
	return e.Due(at)
}

// TestFailedJobDigest: the words of the two real PyTorch jobs that fail
// within a second of their fault (watcher/realjob faults a and d) name the
// rank that left first, not the ranks that failed after it; a job that
// ends without a failure line, or whose end record is a member's, gets
// nothing, and a job whose every task died of a signal (its teardown)
// names nobody.
func TestFailedJobDigest(t *testing.T) {
	for _, tt := range []struct {
		name, role    string
		lines         []string
		none          bool
		cause, origin string
		culprit, why  string
	}{
		{"a rank killed", trace.RoleCoordinator, []string{
			"RuntimeError: [./gloo/transport/tcp/pair.cc:589] Read error [10.0.0.2]:56211: Connection reset by peer",
			"RuntimeError: [./gloo/transport/tcp/pair.cc:589] Read error [127.0.0.1]:10961: Connection reset by peer",
			"srun: error: gpu02: task 1: Killed",
			"srun: error: gpu01: task 0: Exited with exit code 1",
			"srun: error: gpu03: task 2: Exited with exit code 1",
		}, false, digest.CauseRankFailed, digest.OriginJob, "gpu02", digest.DigestRankKilled},
		{"a rank that left a collective early", trace.RoleLone, []string{
			"RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:21648",
			"RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.2]:38324",
			"srun: error: gpu01: task 0: Exited with exit code 1",
			"srun: error: gpu03: task 2: Exited with exit code 1",
		}, false, digest.CauseRankFailed, digest.OriginJob, "gpu02", digest.DigestPeerClosed},
		// srun reports a task's exit before the task's last output reaches
		// the file (watcher TestE2EFailedJobRecheck's job): the ranks that
		// exited after the transport error are not the culprits.
		{"a transport error, the exits first in the file", trace.RoleCoordinator, []string{
			"srun: error: gpu02: task 1: Exited with exit code 1",
			"gpu02:4100:4177 [0] NCCL WARN NET/IB : Got completion from peer 10.9.9.9<45123> with status=12 opcode=0 len=0 vendor err 129",
			"srun: error: gpu03: task 2: Exited with exit code 1",
			"srun: error: gpu01: task 0: Exited with exit code 1",
		}, false, digest.CauseNetwork, digest.OriginCluster, "gpu02", digest.DigestTransportErrors},
		// watcher/realjob fault d, whose gloo lines accused the wrong peer in a
		// cascade: rank 1 finished early and exited 0, rank 0 failed on the
		// closed connection, rank 2 on rank 0's.
		{"a rank that finished early, its peers' lines naming another", trace.RoleCoordinator, []string{
			"RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:21648",
			"RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.1]:38324",
			"srun: error: gpu01: task 0: Exited with exit code 1",
			"srun: error: gpu03: task 2: Exited with exit code 1",
		}, false, digest.CauseRankFailed, digest.OriginJob, "gpu02", digest.DigestLeftEarly},
		{"every task terminated", trace.RoleCoordinator, []string{
			"srun: error: gpu01: task 0: Killed", "srun: error: gpu02: task 1: Killed", "srun: error: gpu03: task 2: Killed",
		}, false, digest.CauseUnknown, digest.OriginUnknown, "", ""},
		// watcher/realjob row h, cancelled by its user: slurmstepd's
		// cancel, then srun's word of the task its SIGTERM ended.
		{"a job cancelled", trace.RoleCoordinator, []string{
			"slurmstepd-gpu01: error: *** STEP 8.0 ON gpu01 CANCELLED AT 2026-12-02T17:37:12 ***",
			"slurmstepd-gpu01: error: *** JOB 8 ON gpu01 CANCELLED AT 2026-12-02T17:37:13 ***",
			"srun: error: gpu03: task 2: Terminated",
		}, true, "", "", "", ""},
		// watcher/realjob row h on Slurm 22.05 (cgroup v1), cancelled by its
		// user: rank 1's peers died of the SIGTERM first, so it failed on
		// the closed connection, and its traceback reached the file before
		// slurmstepd's words of the cancel.
		{"a job cancelled, a rank's traceback first", trace.RoleCoordinator, []string{
			"srun: Job step aborted: Waiting up to 7 seconds for job step to finish.",
			"Traceback (most recent call last):",
			"RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:59609",
			"slurmstepd-gpu01: error: *** STEP 7.1 ON gpu01 CANCELLED AT 2026-12-02T21:03:28 ***",
			"slurmstepd-gpu01: error: *** JOB 7 ON gpu01 CANCELLED AT 2026-12-02T21:03:28 ***",
		}, true, "", "", "", ""},
		// A step that failed long before the job was cancelled: the failure
		// stands.
		{"a rank killed, the job cancelled later", trace.RoleCoordinator, append([]string{
			"srun: error: gpu02: task 1: Killed",
			"RuntimeError: [./gloo/transport/tcp/pair.cc:589] Read error [10.0.0.2]:56211: Connection reset by peer",
			"[rank0]: epoch 3 step 250/250 loss 0.01", "[rank0]: epoch 3 step 250/250 loss 0.01", "[rank0]: epoch 3 step 250/250 loss 0.01",
			"[rank0]: epoch 3 step 250/250 loss 0.01", "[rank0]: epoch 3 step 250/250 loss 0.01", "[rank0]: epoch 3 step 250/250 loss 0.01"},
			"slurmstepd-gpu01: error: *** JOB 7 ON gpu01 CANCELLED AT 2026-12-02T21:03:28 ***",
		), false, digest.CauseRankFailed, digest.OriginJob, "gpu02", digest.DigestRankKilled},
		{"a clean end", trace.RoleCoordinator, []string{"[rank0]: epoch 3 step 250/250 loss 0.01"}, true, "", "", "", ""},
		{"a member's end", trace.RoleMember, []string{"srun: error: gpu02: task 1: Killed"}, true, "", "", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := failedJob(t, tt.role, tt.lines...)
			if tt.none {
				if len(out) != 0 {
					t.Fatalf("events %+v, want none", out)
				}
				return
			}
			if len(out) != 1 {
				t.Fatalf("events %+v, want one failed digest", out)
			}
			d, ok := out[0].(digest.DigestEvent)
			if !ok || d.Event != digest.EventFailed || d.Cause != tt.cause || d.Origin != tt.origin || d.Since.IsZero() {
				t.Fatalf("event %+v, want a failed digest, cause %s, origin %s, with its since", out[0], tt.cause, tt.origin)
			}
			switch {
			case tt.culprit == "" && len(d.Culprits) != 0:
				t.Errorf("culprits %+v, want none", d.Culprits)
			case tt.culprit != "" && (len(d.Culprits) != 1 || d.Culprits[0].Host != tt.culprit || d.Culprits[0].Reason != tt.why):
				t.Errorf("culprits %+v, want %s (%s)", d.Culprits, tt.culprit, tt.why)
			}
		})
	}
}
