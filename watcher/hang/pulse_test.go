package hang

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// pulseConfig is the shipped configuration: window 30 minutes, period
// 30 s, grace 10 minutes, pulse factor 3, floor 2 minutes.
func pulseConfig() Config { return watchcfg.DefaultHang() }

// progressAt is rank 0's progress line at sample i of 30 s periods,
// printed on gpu01's output (the batch host reads the job's output).
func progressAt(i int, step int) trace.Sample {
	return trace.Sample{V: 1, Time: t0.Add(time.Duration(i) * 30 * time.Second).Add(time.Millisecond), Host: "gpu01", Job: "4242",
		Log: &trace.Log{Stream: trace.StreamStdout, Line: fmt.Sprintf("[rank0]: epoch 0 step %d/100000 loss 0.1234", step)}}
}

// progressEvery prints a progress line every `every` samples in [from, to).
func progressEvery(from, to, every int) []trace.Sample {
	var out []trace.Sample
	for i := from; i < to; i += every {
		out = append(out, progressAt(i, i*10))
	}
	return out
}

// pulseJob is a two-host job sampled every 30 s for n samples, with the
// job's lines.
func pulseJob(n int, logs []trace.Sample, phases1, phases2 []phase) []trace.Sample {
	g1 := gen{Host: "gpu01", Job: "4242", Seed: 71, Period: 30 * time.Second, N: n, Devs: 2, Phases: phases1}
	g2 := gen{Host: "gpu02", Job: "4242", Seed: 72, Period: 30 * time.Second, N: n, Devs: 2, Phases: phases2}
	all := append(jobTrace(g1, g2), layoutAt("gpu01", "gpu02"))
	all = append(all, logs...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	return all
}

type replayed struct {
	hung    []Event
	digests []digest.DigestEvent
}

func replayPulse(t *testing.T, c Config, ss []trace.Sample) replayed {
	t.Helper()
	var out bytes.Buffer
	if err := Replay(bytes.NewReader(encode(t, ss)), c, &out); err != nil {
		t.Fatal(err)
	}
	var r replayed
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var kind struct{ Event string }
		if err := json.Unmarshal([]byte(line), &kind); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		switch kind.Event {
		case EventHung:
			var e Event
			json.Unmarshal([]byte(line), &e)
			r.hung = append(r.hung, e)
		case digest.EventDigest:
			var d digest.DigestEvent
			if err := json.Unmarshal([]byte(line), &d); err != nil {
				t.Fatal(err)
			}
			r.digests = append(r.digests, d)
		}
	}
	return r
}

// at30 is phase p from sample i (30 s periods).
func at30(p phase, i int) phase { p.From = i; return p }

// TestPulseVerdict: a job that prints progress once a minute and hangs at
// minute 40 is called hung by its pulse within 5 minutes of its last
// progress line, not at the window (minute 70): once, with the detection
// said.
func TestPulseVerdict(t *testing.T) {
	c := pulseConfig()
	stall := 80 // sample 80: minute 40
	ss := pulseJob(160, progressEvery(4, stall, 2),
		[]phase{training, at30(stuck, stall)}, []phase{training, at30(stuck, stall)})
	r := replayPulse(t, c, ss)
	if len(r.digests) != 1 {
		t.Fatalf("%d digests, want 1: %+v", len(r.digests), r.digests)
	}
	d := r.digests[0]
	last := progressAt(stall-2, 0).Time
	if d.Detection == nil || d.Detection.By != digest.DetectedPulse {
		t.Fatalf("detection %+v, want pulse", d.Detection)
	}
	after := d.Time.Sub(last)
	t.Logf("pulse verdict %s after the last progress (cadence %.0fs, deadline %.0fs); window verdicts at %v",
		after, d.Detection.CadenceS, d.Detection.DeadlineS, r.hung[0].Time.Sub(last))
	if after > 5*time.Minute || after < 3*time.Minute {
		t.Errorf("verdict %s after the last progress, want 3 to 5 minutes (cadence 1m × 3)", after)
	}
	if !d.Since.Equal(last) || !d.Detection.LastProgress.Equal(last) {
		t.Errorf("since %v, last progress %v; want %v", d.Since, d.Detection.LastProgress, last)
	}
	if d.Detection.CadenceS != 60 || d.Detection.Beats != (stall-4)/2 {
		t.Errorf("cadence %vs over %d beats, want 60s over %d", d.Detection.CadenceS, d.Detection.Beats, (stall-4)/2)
	}
	if w := d.Detection.Words(); !strings.HasPrefix(w, "pulse: 3m") {
		t.Errorf("Words() = %q", w)
	}
}

// TestPulseNoFalseAlarms: progress lines stop for minutes while the job
// works (a checkpoint written, an evaluation on busy devices, a slower
// cadence after a change of phase) or before the cadence is learned: no
// verdict at all.
func TestPulseNoFalseAlarms(t *testing.T) {
	c := pulseConfig()
	resume := func(from, to int) []trace.Sample {
		return append(progressEvery(4, 80, 2), progressEvery(from, to, 2)...)
	}
	tests := []struct {
		name   string
		logs   []trace.Sample
		phases []phase
		n      int
	}{
		{"checkpoint save of 10 minutes", resume(100, 200), []phase{training, at30(checkpoint, 80), at30(training, 100)}, 200},
		{"evaluation of 15 minutes", resume(110, 200), []phase{training, at30(evaluation, 80), at30(training, 110)}, 200},
		{"cadence from 1 to 5 minutes", append(progressEvery(4, 80, 2), progressEvery(80, 200, 10)...), []phase{training}, 200},
		{"a first compile of 25 minutes, then training", progressEvery(50, 200, 2), []phase{loading, at30(training, 50)}, 200},
		{"four lines only, then a long pause", append(progressEvery(4, 12, 2), progressEvery(60, 200, 2)...), []phase{training, at30(loading, 12), at30(training, 60)}, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := replayPulse(t, c, pulseJob(tc.n, tc.logs, tc.phases, tc.phases))
			if len(r.digests) > 0 || len(r.hung) > 0 {
				t.Errorf("%d digests (%+v), %d hung events; want none", len(r.digests), r.digests, len(r.hung))
			}
		})
	}
}

// TestPulseRecovers: a pulse verdict ends when progress resumes; the next
// stall is a new episode with a digest of its own.
func TestPulseRecovers(t *testing.T) {
	c := pulseConfig()
	logs := append(progressEvery(4, 80, 2), progressEvery(100, 150, 2)...)
	ph := []phase{training, at30(stuck, 80), at30(training, 100), at30(stuck, 150)}
	r := replayPulse(t, c, pulseJob(200, logs, ph, ph))
	if len(r.digests) != 2 {
		t.Fatalf("%d digests, want 2 (one per stall): %+v", len(r.digests), r.digests)
	}
	for i, d := range r.digests {
		if d.Detection == nil || d.Detection.By != digest.DetectedPulse {
			t.Errorf("digest %d: detection %+v, want pulse", i, d.Detection)
		}
	}
	if len(r.hung) > 0 {
		t.Errorf("hung events %v: both stalls are shorter than the window", r.hung)
	}
}

// TestPulseOff: pulse_factor = 0 leaves the window rule alone.
func TestPulseOff(t *testing.T) {
	c := pulseConfig()
	c.PulseFactor, c.ConfirmPeriods = 0, 0
	stall := 80
	ph := []phase{training, at30(stuck, stall)}
	r := replayPulse(t, c, pulseJob(160, progressEvery(4, stall, 2), ph, ph))
	if len(r.digests) != 1 || r.digests[0].Detection == nil || r.digests[0].Detection.By != digest.DetectedWindow {
		t.Fatalf("digests %+v, want one detected by the window", r.digests)
	}
	if after := r.digests[0].Time.Sub(progressAt(stall-2, 0).Time); after < c.Window {
		t.Errorf("window digest %s after the last progress, want at least the window", after)
	}
}

// TestEvidenceVerdict: strong evidence, then a few flat periods, is a
// verdict minutes after it, whether or not the job prints progress; the
// same evidence followed by progress, or by I/O, is none.
func TestEvidenceVerdict(t *testing.T) {
	c := pulseConfig()
	xid := func(i int) trace.Sample {
		return trace.Sample{V: 1, Time: t0.Add(time.Duration(i) * 30 * time.Second).Add(time.Millisecond), Host: "gpu02", Job: "4242",
			Log: &trace.Log{Stream: trace.StreamKmsg, Line: "NVRM: Xid (PCI:0000:b1:00): 79, pid=5188, name=python, GPU has fallen off the bus."}}
	}
	timeout := func(i int) trace.Sample {
		return trace.Sample{V: 1, Time: t0.Add(time.Duration(i) * 30 * time.Second).Add(time.Millisecond), Host: "gpu01", Job: "4242",
			Log: &trace.Log{Stream: trace.StreamStderr, Line: "[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before timing out."}}
	}
	t.Run("fault XID, no progress lines", func(t *testing.T) {
		ph := []phase{training, at30(stuck, 80)}
		r := replayPulse(t, c, pulseJob(160, []trace.Sample{xid(80)}, ph, []phase{training, at30(deadlocked, 80)}))
		if len(r.digests) != 1 || r.digests[0].Detection == nil || r.digests[0].Detection.By != digest.DetectedEvidence {
			t.Fatalf("digests %+v, want one detected by evidence", r.digests)
		}
		d := r.digests[0]
		if after := d.Time.Sub(xid(80).Time); after > 3*time.Minute {
			t.Errorf("verdict %s after the XID, want at most a period + 3 periods + a round", after)
		}
		if d.Cause != digest.CauseBadDevice || len(d.Culprits) != 1 || d.Culprits[0].Host != "gpu02" {
			t.Errorf("digest %s %+v, want bad-device on gpu02", d.Cause, d.Culprits)
		}
	})
	t.Run("collective timeout after progress", func(t *testing.T) {
		ph := []phase{training, at30(stuck, 80)}
		r := replayPulse(t, c, pulseJob(160, append(progressEvery(4, 40, 2), timeout(80)), ph, ph))
		if len(r.digests) != 1 || r.digests[0].Detection.By != digest.DetectedEvidence {
			t.Fatalf("digests %+v, want one detected by evidence", r.digests)
		}
	})
	t.Run("fault XID, the job goes on", func(t *testing.T) {
		r := replayPulse(t, c, pulseJob(160, []trace.Sample{xid(80)}, []phase{training}, []phase{training}))
		if len(r.digests) > 0 {
			t.Fatalf("digests %+v, want none: the job kept its I/O", r.digests)
		}
	})
	t.Run("transport error, then progress", func(t *testing.T) {
		ph := []phase{training, at30(stuck, 80), at30(training, 84)}
		r := replayPulse(t, c, pulseJob(160, append(progressEvery(84, 160, 2), ibError(2, 1, 40)), ph, ph))
		for _, d := range r.digests {
			if d.Detection.By == digest.DetectedEvidence {
				t.Fatalf("digest %+v: progress came after the error", d)
			}
		}
	})
}

// TestSilentStart: a job that spends its first 35 minutes busy on one core
// with its devices idle and almost empty, doing no I/O (a compile, an
// unpack), is not hung; the same with the devices' memory full of a model
// (a deadlocked loader) is.
func TestSilentStart(t *testing.T) {
	c := pulseConfig()
	for _, tc := range []struct {
		name string
		mem  float64
		hung bool
	}{
		{"devices not used yet", 600, false},
		{"model loaded, loader deadlocked", 70000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := gen{Host: "gpu01", Job: "1", Seed: 3, Period: 30 * time.Second, N: 71, Devs: 4, MemMiB: tc.mem,
				Phases: []phase{loading}}
			d := New(c)
			var hung bool
			for _, s := range g.samples() {
				for _, ev := range d.Observe(s) {
					hung = hung || ev.Event == EventHung
				}
			}
			if hung != tc.hung {
				t.Errorf("hung %v after 35 minutes, want %v", hung, tc.hung)
			}
		})
	}
}

// TestPulseDeadline documents the deadline for a few cadences at the
// shipped settings.
func TestPulseDeadline(t *testing.T) {
	c := pulseConfig()
	for cadence, want := range map[time.Duration]time.Duration{
		30 * time.Second: 2 * time.Minute,
		time.Minute:      3 * time.Minute,
		5 * time.Minute:  15 * time.Minute,
	} {
		if got := PulseDeadline(c, cadence); got != want {
			t.Errorf("PulseDeadline(%v) = %v, want %v", cadence, got, want)
		}
	}
}

// TestEvidenceStoppedRank: one of gpu02's ranks is stopped (SIGSTOP) at
// minute 40 while gpu01's and gpu03's are not; the job stalls: a verdict by evidence
// minutes later, naming gpu02.
func TestEvidenceStoppedRank(t *testing.T) {
	c := pulseConfig()
	ph := []phase{training, at30(deadlocked, 80)}
	ss := pulseJob(160, nil, ph, ph)
	ss = append(ss, gen{Host: "gpu03", Job: "4242", Seed: 73, Period: 30 * time.Second, N: 160, Devs: 2, Phases: ph}.samples()...)
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].Time.Before(ss[j].Time) })
	for i := range ss {
		if ss[i].Host == "gpu02" && !ss[i].IsLog() && !ss[i].Time.Before(t0.Add(40*time.Minute)) {
			ss[i].ProcsT = 1
		}
	}
	r := replayPulse(t, c, ss)
	if len(r.digests) != 1 || r.digests[0].Detection == nil || r.digests[0].Detection.By != digest.DetectedEvidence {
		t.Fatalf("digests %+v, want one detected by evidence", r.digests)
	}
	d := r.digests[0]
	if after := d.Time.Sub(t0.Add(40 * time.Minute)); after > 3*time.Minute {
		t.Errorf("verdict %s after the stop", after)
	}
	if d.Cause != digest.CauseRankFailed || len(d.Culprits) != 1 || d.Culprits[0].Host != "gpu02" || d.Culprits[0].Reason != digest.CulpritProcessesStopped {
		t.Errorf("digest %s %+v, want rank-failed on gpu02 (ProcessesStopped)", d.Cause, d.Culprits)
	}
}
