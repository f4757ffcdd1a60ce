package hang

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// pulseFormats print step n of a job in each framework's own format, the
// lines of watcher/joblog's TestProgressFormats (their sources cited
// there) with the step advanced, and one format nobody listed, which the
// job's learned heartbeat (joblog.Heartbeat) reads.
var pulseFormats = []struct {
	name string
	line func(n int) string
}{
	{"transformers-trainer", func(n int) string {
		return fmt.Sprintf("{'loss': 1.2345, 'grad_norm': 0.98, 'learning_rate': 4.9e-05, 'epoch': %.4f}", float64(n)/10000)
	}},
	{"tqdm (Lightning)", func(n int) string {
		return fmt.Sprintf("Epoch 0:  45%%|████▌     | %d/100000 [01:23<01:41,  5.42it/s, v_num=11, train_loss=2.31]", n)
	}},
	{"torchtitan (coloured)", func(n int) string {
		return fmt.Sprintf("[rank0]:[titan] 2026-02-24 19:46:19,145 - root - INFO - \x1b[31mstep: %d  \x1b[32mloss:  7.07623  \x1b[36mmemory: 66.91GiB(37.51%%)  \x1b[34mtps: 10,007\x1b[39m", n)
	}},
	{"field report", func(n int) string {
		return fmt.Sprintf("[INFO][train_epoch]:Rank:0 Epoch:[3][%d/all] Data Time 0.012 Batch Time 0.481", n)
	}},
	{"keras", func(n int) string {
		return fmt.Sprintf("%6d/100000 [=====>........................] - ETA: 7:39 - loss: 6723.7268", n)
	}},
	{"mmengine", func(n int) string {
		return fmt.Sprintf("09/13 13:28:11 - mmengine - INFO - Epoch(train)   [1][%6d/100000]  lr: 3.9643e-04  eta: 5 days, 16:43:34  time: 0.6257  loss: 2.1314", n)
	}},
	{"fairseq", func(n int) string {
		return fmt.Sprintf("| epoch 001:   %5d / 100000 loss=11.521, nll_loss=10.881, ppl=1886.05, wps=52922, ups=0.5", n)
	}},
	{"composer", func(n int) string { return fmt.Sprintf("[batch=%d/100000]:", n) }},
	{"maxtext", func(n int) string {
		return fmt.Sprintf("completed step: %d, seconds: 2.167, TFLOP/s: 36.722, loss: 2.191", n)
	}},
	{"deepspeed", func(n int) string {
		return fmt.Sprintf("[2021-11-26 03:07:16,494] [INFO] [logging.py:69:log_dist] [Rank 0] step=%d, skipped=0, lr=[0.001, 0.001], mom=[0.0, 0.0]", n)
	}},
	{"unlisted (learned heartbeat)", func(n int) string {
		return fmt.Sprintf("[train] it %d | loss %d.25 | 1.93 s/it", n, 5000-n)
	}},
}

// recordedEvery is what the watcher records of a job that prints
// line(step) every `every` samples in [from, to) on gpu01's output: the
// lines the loop keeps (joblog.Heartbeat.Keep), at the poll's time.
func recordedEvery(t *testing.T, line func(int) string, from, to, every int) []trace.Sample {
	t.Helper()
	var h joblog.Heartbeat
	var out []trace.Sample
	for i := from; i < to; i += every {
		at := t0.Add(time.Duration(i) * 30 * time.Second).Add(time.Millisecond)
		if stream, ok := h.Keep(at, trace.StreamStderr, line(i*10)); ok {
			out = append(out, trace.Sample{V: 1, Time: at, Host: "gpu01", Job: "4242",
				Log: &trace.Log{Stream: stream, Line: line(i * 10)}})
		}
	}
	if len(out) == 0 {
		t.Fatalf("no line of %q kept", line(1))
	}
	return out
}

// TestPulseEveryFormat: a job printing progress in each format, once a
// minute or every 30 s, hangs at minute 40: its pulse names the hang at
// most max(2 min, 3 × cadence) + one period after its last progress line.
// The p90 and worst times to the verdict over the formats are logged.
func TestPulseEveryFormat(t *testing.T) {
	c := pulseConfig()
	stall := 80
	var after []time.Duration
	for _, f := range pulseFormats {
		for _, every := range []int{1, 2} {
			cadence := time.Duration(every) * c.Period
			t.Run(fmt.Sprintf("%s every %s", f.name, cadence), func(t *testing.T) {
				logs := recordedEvery(t, f.line, 4, stall, every)
				ph := []phase{training, at30(stuck, stall)}
				r := replayPulse(t, c, pulseJob(160, logs, ph, ph))
				if len(r.digests) != 1 || r.digests[0].Detection == nil || r.digests[0].Detection.By != digest.DetectedPulse {
					t.Fatalf("digests %+v, want one detected by the pulse", r.digests)
				}
				last := logs[len(logs)-1].Time
				d := r.digests[0]
				got := d.Time.Sub(last)
				limit := max(2*time.Minute, 3*cadence) + c.Period
				if got > limit {
					t.Errorf("verdict %s after the last progress, want at most %s", got, limit)
				}
				if !d.Detection.LastProgress.Equal(last) || d.Detection.CadenceS != cadence.Seconds() {
					t.Errorf("last progress %v cadence %vs; want %v, %vs", d.Detection.LastProgress, d.Detection.CadenceS, last, cadence.Seconds())
				}
				t.Logf("verdict %s after the last progress (limit %s)", got, limit)
				after = append(after, got)
			})
		}
	}
	if len(after) == 0 {
		return
	}
	slices.Sort(after)
	t.Logf("time to verdict over %d format runs: p90 %s, worst %s", len(after), after[(len(after)*9+9)/10-1], after[len(after)-1])
}

// TestPulseFormatsNoFalseAlarms: the same formats' jobs stop printing for a
// checkpoint, an evaluation or a first compile while they work: no verdict.
func TestPulseFormatsNoFalseAlarms(t *testing.T) {
	c := pulseConfig()
	for _, f := range pulseFormats {
		t.Run(f.name, func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				logs   []trace.Sample
				phases []phase
			}{
				{"checkpoint", append(recordedEvery(t, f.line, 4, 80, 2), recordedEvery(t, f.line, 100, 200, 2)...),
					[]phase{training, at30(checkpoint, 80), at30(training, 100)}},
				{"evaluation", append(recordedEvery(t, f.line, 4, 80, 2), recordedEvery(t, f.line, 110, 200, 2)...),
					[]phase{training, at30(evaluation, 80), at30(training, 110)}},
				{"first compile", recordedEvery(t, f.line, 50, 200, 2), []phase{loading, at30(training, 50)}},
			} {
				r := replayPulse(t, c, pulseJob(200, tc.logs, tc.phases, tc.phases))
				if len(r.digests) > 0 || len(r.hung) > 0 {
					t.Errorf("%s: %d digests, %d hung events; want none", tc.name, len(r.digests), len(r.hung))
				}
			}
		})
	}
}
