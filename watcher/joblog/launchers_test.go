package joblog

import (
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/internal/linerules"
)

// launcherRules are the shipped rules for each emitter's own words.
var launcherRules = map[string][]string{
	"slurm":   {"srun-task-oom", "slurmstepd-oom-kill"},
	"prrte":   {"mpirun-rank-signalled"},
	"openmpi": {"ompi-process-received-signal", "ompi-peer-disconnected", "ompi-peer-hung-up"},
	"torch":   {"torchrun-child-signal", "c10d-collective-mismatch", "c10d-monitored-barrier"},
	"nccl":    {"nccl-mismatched-collective"},
	"horovod": {"horovod-stalled-ranks", "horovod-stall-warning"},
	"hccl":    {"hccl-transport-init", "hccl-connect-timeout"},
	"lustre":  {"lustre-connection-lost"},
	"jax":     {"jax-heartbeat-timeout"},
}

// TestLauncherRules: per emitter, each rule is shipped with its origin
// (the emitter's source) and a public report's line, and its examples
// read as its kind; the ranks a mismatch names are the line's.
func TestLauncherRules(t *testing.T) {
	s, err := ShippedRules()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]bool{}
	for _, r := range s.Rules() {
		byName[r.Name] = true
		for _, ex := range r.Examples {
			stream := ""
			if r.Stream == "kmsg" {
				stream = "kmsg"
			}
			if m, ok := LineIn(stream, ex); r.Kind == linerules.KindIgnore && ok || r.Kind != linerules.KindIgnore && (!ok || m.Rule != r.Name) {
				t.Errorf("%s: %q read as %+v", r.Name, ex, m)
			}
		}
	}
	for emitter, names := range launcherRules {
		for _, n := range names {
			if !byName[n] {
				t.Errorf("%s: rule %s not shipped", emitter, n)
				continue
			}
			if o := RuleOrigin(n); o == "" {
				t.Errorf("%s: rule %s has no origin", emitter, n)
			}
		}
	}
	for line, want := range map[string]string{
		"RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=3104, OpType=ALLREDUCE), but Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=3104, OpType=ALLREDUCE).": "1,0",
		"RuntimeError: [Rank 0]: Ranks 2, 5 failed to pass monitoredBarrier in 30000 ms":                                   "2,5",
		"HorovodBroadcast_global_step_0 [missing ranks: 0]":                                                                "0",
		"init.cc:1247 NCCL WARN Mismatched collective detected, please check your collective calls at and around rank 39.": "39",
	} {
		m, ok := LineIn("", line)
		if !ok || m.Kind != KindMismatch || m.Ranks != want {
			t.Errorf("%q: %+v, want ranks %s", line, m, want)
		}
	}
}

// TestSlurmLinesAreNoProgress: Slurm's cancellation line carries the job
// and step ids, no training step; its daemons' lines are no progress.
func TestSlurmLinesAreNoProgress(t *testing.T) {
	for _, line := range []string{
		"slurmstepd: error: *** STEP 123.0 ON n3 CANCELLED AT 2024-05-01T10:00:00 ***",
		"*** STEP 123.0 ON n3 CANCELLED AT 2024-05-01T10:00:00 DUE TO TIME LIMIT ***",
		"slurmstepd: error: *** JOB 4242 ON gpu01 CANCELLED AT 2024-05-01T10:00:00 ***",
		"srun: Job step aborted: Waiting up to 32 seconds for job step 123.0 to finish.",
	} {
		if m, ok := LineIn("", line); ok && m.Kind == KindProgress {
			t.Errorf("%q reads as progress: %+v", line, m)
		}
	}
	if m, ok := LineIn("", "epoch 3 step 1500 loss 0.21"); !ok || m.Kind != KindProgress || m.Step != 1500 {
		t.Errorf("a progress line: %+v %v", m, ok)
	}
	if !strings.Contains(reSlurmLine.String(), "CANCELLED AT") {
		t.Fatal("pattern")
	}
}
