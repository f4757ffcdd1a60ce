package hang

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// logAt is a log record of host at minute m.
func logAt(host string, m int, stream, line string) trace.Sample {
	return trace.Sample{V: 1, Time: t0.Add(time.Duration(m) * time.Minute), Host: host, Job: "4242",
		Log: &trace.Log{Stream: stream, Line: line}}
}

// layoutAt is the step's layout record the live watcher writes on the
// batch host: task i on hosts[i], one task per rank.
func layoutAt(hosts ...string) trace.Sample {
	l := joblog.Layout{Nodes: hosts, Tasks: map[int]string{}}
	for i, h := range hosts {
		l.Tasks[i] = h
	}
	b, _ := json.Marshal(l)
	return logAt(hosts[0], 0, trace.StreamLayout, string(b))
}

// withLogs interleaves the hosts' readings and the log records in time
// order (at the same minute, readings first).
func withLogs(logs []trace.Sample, gens ...gen) []trace.Sample {
	all := jobTrace(gens...)
	all = append(all, logs...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	return all
}

// ncclAddr is NCCL's start-up line naming host gpu0N's address 10.0.0.N.
func ncclAddr(n int) trace.Sample {
	return logAt(fmt.Sprintf("gpu%02d", n), 1, trace.StreamStderr,
		fmt.Sprintf("gpu%02d:4100:4100 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.%d<0>", n, n))
}

// ibError is gpu0N's NCCL transport error naming peer 10.0.0.P at minute m.
func ibError(n, peer, m int) trace.Sample {
	return logAt(fmt.Sprintf("gpu%02d", n), m, trace.StreamStderr, fmt.Sprintf(
		"gpu%02d:4100:4177 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.%d<45123> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.%d remoteGid ::ffff:10.0.0.%d",
		n, peer, n, peer))
}

// retried is a benign NCCL warning that NCCL retries.
func retried(host string, m int) trace.Sample {
	return logAt(host, m, trace.StreamStderr, host+":4100:4180 [0] NCCL WARN Call to connect returned Connection refused, retrying")
}

func watchdogLine(host string, rank, m int, op string, completed int) []trace.Sample {
	return []trace.Sample{
		logAt(host, m, trace.StreamStderr, fmt.Sprintf("[rank%d]:[E ProcessGroupNCCL.cpp:607] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1234, OpType=%s, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=480000) ran for 480021 milliseconds before timing out.", rank, rank, op)),
		logAt(host, m, trace.StreamStderr, fmt.Sprintf("[rank%d]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank %d] Timeout at NCCL work: 1234, last enqueued NCCL work: 1234, last completed NCCL work: %d.", rank, rank, completed)),
	}
}

// progressLines has host's rank log "epoch E step S" every minute from
// minute from to minute to, step = 10*minute - lag.
func progressLines(host string, rank, from, to, lag int) []trace.Sample {
	var out []trace.Sample
	for m := from; m < to; m++ {
		out = append(out, logAt(host, m, trace.StreamStdout, fmt.Sprintf("[rank%d]: epoch 1 step %d loss 2.31", rank, 10*m-lag)))
	}
	return out
}

// progressLine is rank's progress line at epoch and step.
func progressLine(rank int, epoch, step int) string {
	return fmt.Sprintf("[rank%d]: epoch %d step %d", rank, epoch, step)
}

// digestTraces are the synthetic multi-host traces with log records, one
// per cause, and the look-alikes that must give no digest or straggler.
func digestTraces() map[string][]trace.Sample {
	host := func(name string, seed int64, ph ...phase) gen {
		return gen{Host: name, Job: "4242", Seed: seed, Period: time.Minute, N: 50, Devs: 2, Phases: ph}
	}
	var addrs []trace.Sample
	for n := 1; n <= 4; n++ {
		addrs = append(addrs, ncclAddr(n))
	}
	cat := func(xs ...[]trace.Sample) []trace.Sample {
		var out []trace.Sample
		for _, x := range xs {
			out = append(out, x...)
		}
		return out
	}
	noisy := training
	noisy.UtilJitter, noisy.PowerJitter = 25, 150
	idleWait := training
	idleWait.Util, idleWait.UtilJitter = 25, 10
	pinned := training
	pinned.Util, pinned.UtilJitter = 98, 2
	return map[string][]trace.Sample{
		// gpu02's GPU falls off the bus at minute 30; an application XID
		// on gpu04 earlier is no fault.
		"digest-bad-device": withLogs([]trace.Sample{
			logAt("gpu04", 12, trace.StreamKmsg, "NVRM: Xid (PCI:0000:3b:00): 13, pid=5120, name=python, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address"),
			logAt("gpu02", 30, trace.StreamKmsg, "NVRM: Xid (PCI:0000:b1:00): 79, pid=5188, name=python, GPU has fallen off the bus."),
		}, host("gpu01", 21, training, at(stuck, 30)), host("gpu02", 22, training, at(dead, 30)),
			host("gpu03", 23, training, at(stuck, 30)), host("gpu04", 24, training, at(stuck, 30))),
		// gpu03's link is bad: three peers report it; retried warnings
		// everywhere are benign.
		"digest-network": withLogs(cat(addrs,
			[]trace.Sample{retried("gpu01", 5), retried("gpu03", 5), ibError(1, 3, 30), ibError(2, 3, 30), ibError(4, 3, 31), ibError(3, 1, 31)}),
			host("gpu01", 31, training, at(stuck, 30)), host("gpu02", 32, training, at(stuck, 30)),
			host("gpu03", 33, training, at(stuck, 30)), host("gpu04", 34, training, at(stuck, 30))),
		// gpu03's rank crashes with a CUDA error; its processes exit.
		"digest-rank-failed": withLogs([]trace.Sample{
			layoutAt("gpu01", "gpu02", "gpu03"),
			logAt("gpu03", 30, trace.StreamStderr, "[rank2]: Traceback (most recent call last):"),
			logAt("gpu03", 30, trace.StreamStderr, "[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered"),
		}, host("gpu01", 41, training, at(stuck, 30)), host("gpu02", 42, training, at(stuck, 30)), host("gpu03", 43, training, at(dead, 30))),
		// gpu02's loader deadlocks; a retried NCCL warning on gpu01 is no
		// network error.
		"digest-data-stall": withLogs([]trace.Sample{retried("gpu01", 26), retried("gpu01", 27)},
			host("gpu01", 51, training, at(stuck, 25)), host("gpu02", 52, training, at(deadlocked, 25)), host("gpu03", 53, training, at(stuck, 25))),
		// gpu03 is in another collective at the same sequence number.
		"digest-different-progress": withLogs(cat([]trace.Sample{layoutAt("gpu01", "gpu02", "gpu03", "gpu04")},
			watchdogLine("gpu01", 0, 38, "ALLREDUCE", 1233), watchdogLine("gpu02", 1, 38, "ALLREDUCE", 1233),
			watchdogLine("gpu03", 2, 38, "BROADCAST", 1233), watchdogLine("gpu04", 3, 38, "ALLREDUCE", 1233)),
			host("gpu01", 61, training, at(stuck, 30)), host("gpu02", 62, training, at(stuck, 30)),
			host("gpu03", 63, training, at(stuck, 30)), host("gpu04", 64, training, at(stuck, 30))),
		// Every rank times out on the same sequence number and op (the
		// first digest can say no more than unknown); the monitored
		// barrier of PyTorch's debug wrapper names rank 2 seven minutes
		// later: the digest is revised once.
		"digest-different-progress-late": withLogs(cat([]trace.Sample{layoutAt("gpu01", "gpu02", "gpu03", "gpu04")},
			watchdogLine("gpu01", 0, 36, "ALLREDUCE", 1233), watchdogLine("gpu02", 1, 36, "ALLREDUCE", 1233),
			watchdogLine("gpu03", 2, 36, "ALLREDUCE", 1233), watchdogLine("gpu04", 3, 36, "ALLREDUCE", 1233),
			[]trace.Sample{logAt("gpu01", 43, trace.StreamStderr, "[rank0]: RuntimeError: [Rank 0]: Rank 2 failed to pass monitoredBarrier in 30000 ms")}),
			host("gpu01", 65, training, at(stuck, 30)), host("gpu02", 66, training, at(stuck, 30)),
			host("gpu03", 67, training, at(stuck, 30)), host("gpu04", 68, training, at(stuck, 30))),
		// The ranks' progress lines are block-buffered and reach the
		// output file only after the window's digest (unknown): rank 2 is
		// still in epoch 3 while the others are in epoch 4.
		"digest-different-progress-epoch": withLogs([]trace.Sample{layoutAt("gpu01", "gpu02", "gpu03", "gpu04"),
			logAt("gpu01", 43, trace.StreamStdout, progressLine(0, 4, 20)), logAt("gpu01", 43, trace.StreamStdout, progressLine(1, 4, 20)),
			logAt("gpu01", 43, trace.StreamStdout, progressLine(2, 3, 1250)), logAt("gpu01", 43, trace.StreamStdout, progressLine(3, 4, 20))},
			host("gpu01", 75, training, at(stuck, 30)), host("gpu02", 76, training, at(stuck, 30)),
			host("gpu03", 77, training, at(stuck, 30)), host("gpu04", 78, training, at(stuck, 30))),
		// Everything waits, nothing points at a host.
		"digest-unknown": withLogs(nil, host("gpu01", 71, training, at(stuck, 30)), host("gpu02", 72, training, at(stuck, 30))),
		// A healthy job with noisy utilisation, balanced progress lines and
		// an application XID: no digest, no straggler.
		"balanced-noisy": withLogs(cat(progressLines("gpu01", 0, 2, 50, 0), progressLines("gpu02", 8, 2, 50, 0), progressLines("gpu03", 16, 2, 50, 0),
			[]trace.Sample{logAt("gpu02", 20, trace.StreamKmsg, "NVRM: Xid (PCI:0000:3b:00): 31, pid=5120, name=python, Ch 00000010, intr 10000000. MMU Fault")}),
			host("gpu01", 81, noisy), host("gpu02", 82, noisy), host("gpu03", 83, noisy)),
		// gpu02's devices are pinned busy from minute 20 while its peers
		// idle-wait for it.
		"straggler-busy": withLogs(nil, host("gpu01", 91, training, at(idleWait, 20)), host("gpu02", 92, training, at(pinned, 20)),
			host("gpu03", 93, training, at(idleWait, 20)), host("gpu04", 94, training, at(idleWait, 20))),
		// gpu03's rank is 2.5 times slower from minute 20 to 25.
		"straggler-progress": stragglerProgressTrace(),
	}
}

// jobEvent is a digest or straggler line in short form.
type jobEvent struct {
	Event, Cause, Host, Reason string
	Culprits                   []digest.DigestCulprit
	Revises                    time.Time
	Time                       time.Time
	Detection                  *digest.Detection
}

func replayJobEvents(t *testing.T, ss []trace.Sample) []jobEvent {
	t.Helper()
	var out bytes.Buffer
	if err := Replay(bytes.NewReader(encode(t, ss)), testConfig(), &out); err != nil {
		t.Fatal(err)
	}
	_, jobs := splitJobEvents(out.String())
	var evs []jobEvent
	for _, line := range strings.Split(strings.TrimSpace(jobs), "\n") {
		if line == "" {
			continue
		}
		var e jobEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	return evs
}

// TestDigestCauses checks the meaning of the synthetic traces' job events:
// one digest per hang episode with its cause and culprits, stragglers only
// where a host holds the others back.
func TestDigestCauses(t *testing.T) {
	tests := map[string]string{
		"digest-bad-device":               "digest bad-device gpu02 DeviceFault",
		"digest-network":                  "digest network gpu03 BadLinks",
		"digest-rank-failed":              "digest rank-failed gpu03 ProcessesGone",
		"digest-data-stall":               "digest data-stall gpu02 IdleWhilePeersBusy",
		"digest-different-progress":       "digest different-progress gpu03 OtherCollective",
		"digest-different-progress-late":  "digest unknown; digest different-progress gpu03 CollectiveMismatch (revised)",
		"digest-different-progress-epoch": "digest unknown; digest different-progress gpu03 OtherEpoch (revised)",
		"digest-unknown":                  "digest unknown",
		"balanced-noisy":                  "",
		"straggler-busy":                  "straggler gpu02 BusyWhilePeersIdle",
		"straggler-progress":              "straggler gpu03 SlowSteps",
		"rank-died":                       "digest rank-failed gpu03 ProcessesGone",
		"loader-deadlock":                 "digest data-stall gpu02 IdleWhilePeersBusy",
		"checkpoint-and-eval":             "",
		"recovery":                        "digest unknown",
	}
	traces := goldenTraces()
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range replayJobEvents(t, traces[name]) {
				s := e.Event
				if e.Event == digest.EventDigest {
					s += " " + e.Cause
					for _, c := range e.Culprits {
						s += " " + c.Host + " " + c.Reason
					}
					if !e.Revises.IsZero() {
						s += " (revised)"
					}
				} else {
					s += " " + e.Host + " " + e.Reason
				}
				got = append(got, s)
			}
			if strings.Join(got, "; ") != want {
				t.Fatalf("job events %q, want %q", got, want)
			}
		})
	}
}

// TestNoRevisionAfterTeardown: once Slurm says the step is cancelled, what
// changes is the teardown, not the hang: the late fingerprint line that
// would revise the digest (digest-different-progress-late) comes after a
// cancel line and revises nothing.
func TestNoRevisionAfterTeardown(t *testing.T) {
	ss := slices.Clone(goldenTraces()["digest-different-progress-late"])
	ss = append(ss, logAt("gpu01", 42, trace.StreamStderr, "slurmstepd: error: *** STEP 4242.0 ON gpu01 CANCELLED AT 2026-11-29T10:42:00 ***"))
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].Time.Before(ss[j].Time) })
	var got []string
	for _, e := range replayJobEvents(t, ss) {
		s := e.Event + " " + e.Cause
		if !e.Revises.IsZero() {
			s += " (revised)"
		}
		got = append(got, s)
	}
	if strings.Join(got, "; ") != "digest unknown" {
		t.Fatalf("job events %q, want only the first digest", got)
	}
}

// TestNoRevisionFromProcessesLeaving: the processes of a hung job leave as
// it is torn down or its own watchdog aborts it; that is a consequence of
// the hang, not new evidence of its cause. gpu02's processes exit twenty
// minutes after the digest (unknown) and a line comes after: the digest is
// not revised to name gpu02 as the rank that failed.
func TestNoRevisionFromProcessesLeaving(t *testing.T) {
	host := func(name string, seed int64, ph ...phase) gen {
		return gen{Host: name, Job: "4242", Seed: seed, Period: time.Minute, N: 60, Devs: 8, Phases: ph}
	}
	ss := withLogs(watchdogLine("gpu01", 0, 52, "ALLREDUCE", 1233),
		host("gpu01", 71, training, at(stuck, 5)), host("gpu02", 72, training, at(stuck, 5), at(dead, 50)), host("gpu03", 73, training, at(stuck, 5)))
	var got []string
	for _, e := range replayJobEvents(t, ss) {
		s := e.Event + " " + e.Cause
		if !e.Revises.IsZero() {
			s += " (revised)"
		}
		got = append(got, s)
	}
	if strings.Join(got, "; ") != "digest unknown" {
		t.Fatalf("job events %q, want only the first digest", got)
	}
}

// TestHydraBannerPlacesExitCode: MPICH Hydra's "PID P RUNNING AT HOST"
// places the "EXIT CODE" line printed after it on that host; the same
// line with no banner before it, or a banner read on another node, names
// nobody.
func TestHydraBannerPlacesExitCode(t *testing.T) {
	block := func(reader, banner string) []trace.Sample {
		ss := []trace.Sample{layoutAt("gpu01", "gpu02", "gpu03"),
			logAt(reader, 31, trace.StreamStdout, "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES")}
		if banner != "" {
			ss = append(ss, logAt(banner, 31, trace.StreamStdout, "=   PID 9665 RUNNING AT gpu03"))
		}
		return append(ss, logAt(reader, 31, trace.StreamStdout, "=   EXIT CODE: 9"))
	}
	for _, tc := range []struct {
		name, banner, want string
	}{
		{"banner before the exit code", "gpu01", "gpu03"},
		{"no banner", "", ""},
		{"banner read on another node", "gpu02", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEpisodes(testConfig())
			for _, x := range block("gpu01", tc.banner) {
				e.Observe(x, nil)
			}
			in := e.digestInput("4242", e.jobs["4242"])
			var got []string
			for _, l := range in.Logs {
				if l.Match.Kind == joblog.KindTaskExit {
					got = append(got, l.Host)
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("the EXIT CODE line is placed on %q, want %q", got, tc.want)
			}
		})
	}
}
