package joblog

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// progressLines are real progress lines of each format, as the public
// issue named beside each printed them (the code that prints each is cited
// beside its pattern in progress.go), with the epoch and step (or
// advancing counter) each gives.
var progressLines = []struct {
	format, source, line string
	epoch, step          int64
}{
	{"transformers-trainer", "https://github.com/huggingface/transformers/issues/14531",
		"{'loss': 6.2645, 'learning_rate': 0.001, 'epoch': 0.02}", -1, 200},
	{"transformers-trainer", "issue 34 (the brief's line)",
		"{'loss': 1.2345, 'grad_norm': 0.98, 'learning_rate': 4.9e-05, 'epoch': 0.12}", -1, 1200},
	{"tqdm (Lightning)", "https://github.com/Lightning-AI/pytorch-lightning/issues/20344",
		"Epoch 0:  14%|█▍        | 100/704 [00:44<04:29,  2.24it/s, v_num=11, train_loss=4.600]", 0, 100},
	{"tqdm (Lightning, no bar)", "https://github.com/Lightning-AI/pytorch-lightning/issues/3866",
		"Epoch 0:  97% 1651/1702 [13:00<00:24,  2.11it/s, loss=0.158, v_num=0, train_loss=0.149]", 0, 1651},
	{"tqdm (fairseq)", "https://github.com/facebookresearch/fairseq/issues/503",
		"epoch 001:   0%| | 2/10127 [00:02<3:21:57,  1.20s/it, loss=13.988, nll_loss=13.986, ppl=16222.38]", 1, 2},
	{"tqdm (plain)", "https://github.com/huggingface/transformers/issues/14531",
		"  8%|█████████████            | 1999/24128 [1:52:09<20:27:23,  3.33s/it]", -1, 1999},
	{"torchtitan", "https://github.com/pytorch/torchtitan/pull/1287",
		"[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%", -1, 200},
	{"torchtitan (coloured)", "https://github.com/pytorch/torchtitan/pull/2389, coloured as MetricsProcessor.log() prints it",
		"[titan] 2026-02-24 19:46:19,145 - root - INFO - \x1b[31mstep:  5  \x1b[32mloss:  7.07623  \x1b[38;2;180;60;0mgrad_norm: 46.5000  \x1b[36mmemory: 66.91GiB(37.51%)  \x1b[34mtps: 10,007  \x1b[36mtflops: 313.36  \x1b[35mmfu: 13.93%\x1b[39m", -1, 5},
	{"mmengine", "https://github.com/vllm-project/vllm/issues/8444",
		"09/13 13:28:11 - mmengine - INFO - Epoch(train)   [1][ 100/2566]  base_lr: 3.9643e-04 lr: 3.9643e-04  eta: 5 days, 16:43:34  time: 0.6257  data_time: 0.0032  memory: 12397  loss: 2.1314", 1, 100},
	{"mmengine (val)", "https://github.com/AILab-CVC/YOLO-World/issues/396",
		"2024/06/16 20:02:03 - mmengine - INFO - Epoch(val) [10][4000/4809]    eta: 0:06:54  time: 0.5256  data_time: 0.0006  memory: 979  ", 10, 4000},
	{"epoch-bracket (mmcv)", "https://github.com/open-mmlab/mmaction/issues/199",
		"2020-07-27 05:30:00,056 - INFO - Epoch [1][640/1730]\tlr: 1.000e-02, eta: 1 day, 14:05:50, time: 0.828, data_time: 0.050, memory: 8342, loss_cls: 3.7828, loss: 3.7828", 1, 640},
	{"epoch-bracket (torchvision)", "https://github.com/mlcommons/training/issues/546",
		"Epoch: [0]  [ 260/9143]  eta: 1:27:06  lr: 0.000003  loss: 1.6425 (2.0424)  bbox_regression: 0.6106 (0.6751)  classification: 1.0362 (1.3673)  time: 0.5645  data: 0.0003  max mem: 26787", 0, 260},
	{"epoch-bracket (field report)", "issue 34's field report",
		"[INFO][train_epoch]:Rank:0 Epoch:[3][1000/all] Data Time 0.012 Batch Time 0.481", 3, 1000},
	{"fairseq", "https://github.com/facebookresearch/fairseq/issues/940",
		"| epoch 001:    450 / 1891 loss=11.521, nll_loss=10.881, ppl=1886.05, wps=52922, ups=0.5, wpb=104928, bsz=5325, num_updates=445", 1, 450},
	{"fairseq (old)", "https://github.com/facebookresearch/fairseq/issues/301",
		"| epoch 010  2000 / 8223 loss=1.27 (1.50), wps=962, wpb=908, bsz=32, lr=0.001, clip=100%, gnorm=2.1427", 10, 2000},
	{"fairseq-json", "https://github.com/facebookresearch/fairseq/issues/233",
		`{"epoch": 10, "loss": "3.180", "nll_loss": "1.417", "ppl": "2.67", "wps": 1671182, "ups": "2.7", "wpb": 617154, "bsz": 16625, "num_updates": 21497, "lr": 0.00030195283218121974}`, 10, 21497},
	{"keras 2", "https://github.com/qqwweee/keras-yolo3/issues/299",
		"  8/110 [=>............................] - ETA: 7:39 - loss: 6723.7268", -1, 8},
	{"keras 2 (end of epoch)", "https://github.com/keras-team/keras/issues/10506",
		"423/423 [==============================] - 192s 454ms/step - loss: 1.8386 - mean_squared_error: 0.0049 - acc: 0.6136", -1, 423},
	{"keras 3", "Progbar.update()'s own output (keras/src/utils/progbar.py)",
		"\x1b[1m450/1000\x1b[0m \x1b[32m━━━━━━━━━\x1b[0m\x1b[37m━━━━━━━━━━━\x1b[0m \x1b[1m1:23\x1b[0m 184ms/step - loss: 2.3100", -1, 450},
	{"keras (unknown total)", "https://github.com/Sanjana7395/Face_segmentation/issues/4",
		"      7/Unknown - 15s 2s/step - loss: 2.9064 - acc: 0.1288 - mIoU: 0.0217", -1, 7},
	{"composer", "ConsoleLogger._get_progress_string()'s own output (composer/loggers/console_logger.py)",
		"[epoch=1][batch=10/1000]:", 1, 10},
	{"composer (batches)", "ConsoleLogger._get_progress_string()'s own output",
		"[batch=10/1000]:", -1, 10},
	{"maxtext", "https://github.com/AI-Hypercomputer/maxtext/issues/8",
		"completed step: 15107, seconds: 2.167, TFLOP/s: 36.722, loss: 2.191", -1, 15107},
	{"maxtext (glog)", "https://github.com/AI-Hypercomputer/maxtext/pull/761",
		"completed step: 9, seconds: 1.341, TFLOP/s/device: 257.929, Tokens/s/device: 36653.244, loss: 0.000", -1, 9},
	{"deepspeed", "https://github.com/huggingface/transformers/issues/14531",
		"[2021-11-26 03:07:16,494] [INFO] [logging.py:69:log_dist] [Rank 0] step=2000, skipped=1995, lr=[0.001, 0.001], mom=[0.0, 0.0]", -1, 2000},
}

// TestProgressFormats: each framework's real line is progress with the
// epoch and step (or counter) it carries.
func TestProgressFormats(t *testing.T) {
	for _, tc := range progressLines {
		t.Run(tc.format, func(t *testing.T) {
			m, ok := LineIn(trace.StreamStderr, tc.line)
			if !ok || m.Kind != KindProgress || m.Epoch != tc.epoch || m.Step != tc.step {
				t.Errorf("%s (%s):\n%q\n= %v %+v; want progress, epoch %d, step %d", tc.format, tc.source, tc.line, ok, m, tc.epoch, tc.step)
			}
		})
	}
}

// TestProgressNotFormats: lines with a percentage, a fraction or a dict
// that are no progress stay none.
func TestProgressNotFormats(t *testing.T) {
	for _, line := range []string{
		"Downloading model.safetensors:  45%|████▌     | 2.21G/4.94G [00:31<00:38, 71.2MB/s]",
		"{'train_runtime': 123.4, 'train_samples_per_second': 8.1}",
		"NCCL version 2.21.5+cuda12.4",
		"srun: error: gpu03: task 2: Exited with exit code 1",
		"*** STEP 123.0 ON n3 CANCELLED AT 2024-05-01T10:00:00 ***",
	} {
		if m, ok := LineIn(trace.StreamStdout, line); ok && m.Kind == KindProgress {
			t.Errorf("%q = %+v, want no progress", line, m)
		}
	}
}

// TestTerminal: escape codes and control characters go, text stays.
func TestTerminal(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b[31mstep: 10\x1b[0m": "step: 10",
		"\x1b]0;title\x07text":    "text",
		"\b\b\bbar\tx":            "bar\tx",
		"plain":                   "plain",
	} {
		if got := Terminal(in); got != want {
			t.Errorf("Terminal(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFollowerFrames: a bar redrawn with '\r' (tqdm's and Lightning's, and
// Keras' with its backspaces and colours) reads as its newest complete
// frame per poll, escape codes gone; a line printed through the bar
// (tqdm.write: clear, print, redraw) is kept; the frame being written
// waits; a "\r\n" line ending is one line.
func TestFollowerFrames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slurm-9.err")
	f := &Follower{Path: path}
	appendTo(t, path, "\rEpoch 0:   0%|          | 0/1000 [00:00<?, ?it/s]"+
		"\rEpoch 0:  45%|████▌     | 450/1000 [01:23<01:41,  5.42it/s, loss=2.31]"+
		"\rEpoch 0:  46%|████▌     | 460/1000 [01:25<01:40,  5.42it/s, loss=2.30]"+
		"\rEpoch 0:  46%|████▋     | 461/10")
	poll(t, f, "Epoch 0:  46%|████▌     | 460/1000 [01:25<01:40,  5.42it/s, loss=2.30]")
	m, ok := LineIn(trace.StreamStderr, "Epoch 0:  46%|████▌     | 460/1000 [01:25<01:40,  5.42it/s, loss=2.30]")
	if !ok || m.Epoch != 0 || m.Step != 460 {
		t.Fatalf("frame = %+v", m)
	}
	appendTo(t, path, "00 [01:25<01:40,  5.42it/s, loss=2.30]\r"+
		strings.Repeat(" ", 60)+"\rNCCL WARN something\n"+
		"\rEpoch 0:  47%|████▋     | 470/1000 [01:27<01:38,  5.42it/s, loss=2.29]")
	poll(t, f, "Epoch 0:  46%|████▋     | 461/1000 [01:25<01:40,  5.42it/s, loss=2.30]", "NCCL WARN something")
	appendTo(t, path, "\rEpoch 0: 100%|██████████| 1000/1000 [03:05<00:00,  5.40it/s, loss=2.01]\n")
	poll(t, f, "Epoch 0:  47%|████▋     | 470/1000 [01:27<01:38,  5.42it/s, loss=2.29]",
		"Epoch 0: 100%|██████████| 1000/1000 [03:05<00:00,  5.40it/s, loss=2.01]")
	// Keras 3: backspaces over the previous frame, then '\r', coloured.
	appendTo(t, path, "\x1b[1m 10/100\x1b[0m \x1b[32m━━\x1b[0m\x1b[37m━━━━━━━━━━━━━━━━━━\x1b[0m \x1b[1m9s\x1b[0m 100ms/step - loss: 2.5"+
		strings.Repeat("\b", 50)+"\r\x1b[1m 20/100\x1b[0m \x1b[32m━━━━\x1b[0m\x1b[37m━━━━━━━━━━━━━━━━\x1b[0m \x1b[1m8s\x1b[0m 100ms/step - loss: 2.4"+
		strings.Repeat("\b", 50)+"\r")
	poll(t, f, " 20/100 ━━━━━━━━━━━━━━━━━━━━ 8s 100ms/step - loss: 2.4")
	if m, ok := LineIn(trace.StreamStdout, " 20/100 ━━━━━━━━━━━━━━━━━━━━ 8s 100ms/step - loss: 2.4"); !ok || m.Step != 20 {
		t.Fatalf("keras frame = %+v", m)
	}
	appendTo(t, path, "done\r\n")
	poll(t, f, "done")
}

// TestHeartbeat: a line of no known format that recurs at a steady cadence
// with changing numbers becomes a beat on its third sighting; one whose
// numbers repeat, one at an unsteady cadence, and a one-off never do.
func TestHeartbeat(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var h Heartbeat
	line := func(n int) string {
		return "\x1b[32m[train]\x1b[0m it " + itoa(n) + " | loss " + itoa(1000-n) + ".25 | 1.93 s/it"
	}
	if _, ok := LineIn(trace.StreamStdout, line(1)); ok {
		t.Fatalf("%q matches a known format; the test needs one that does not", line(1))
	}
	var beats []bool
	for i, s := range []int{0, 60, 120, 180, 180, 240} {
		beats = append(beats, h.Observe(at(s), line(i)))
	}
	if want := []bool{false, false, true, true, true, true}; !equalBools(beats, want) {
		t.Errorf("beats %v, want %v", beats, want)
	}
	if h.Observe(at(300), line(5)) {
		t.Errorf("the same numbers again is a beat")
	}
	if stream, ok := h.Keep(at(360), trace.StreamStdout, line(6)); !ok || stream != StreamHeartbeat {
		t.Errorf("Keep = %q %v, want %q", stream, ok, StreamHeartbeat)
	}
	if m, ok := LineIn(StreamHeartbeat, line(6)); !ok || m.Kind != KindProgress {
		t.Errorf("a heartbeat record reads %+v %v, want progress", m, ok)
	}
	var g Heartbeat
	for i, s := range []int{0, 10, 100, 110, 400} { // intervals 10 s, 90 s, 10 s, 290 s
		if g.Observe(at(s), line(i)) {
			t.Errorf("unsteady line %d at %ds is a beat", i, s)
		}
	}
	var k Heartbeat
	for i := 0; i < 10; i++ {
		if k.Observe(at(60*i), "WARNING: tokenizers 0.19 fork after parallelism, line 42") {
			t.Errorf("a repeated warning is a beat")
		}
	}
	if k.Observe(at(0), "srun: Job step aborted: Waiting up to 32 seconds") {
		t.Errorf("a Slurm line is a beat")
	}
}

// TestHeartbeatBounded: a job printing endless new templates keeps at most
// maxTemplates.
func TestHeartbeatBounded(t *testing.T) {
	var h Heartbeat
	t0 := time.Unix(1e9, 0)
	for i := 0; i < 3*maxTemplates; i++ {
		h.Observe(t0.Add(time.Duration(i)*time.Second), "template "+letters(i)+" 1")
	}
	if len(h.templates) > maxTemplates {
		t.Errorf("%d templates kept, want at most %d", len(h.templates), maxTemplates)
	}
}

func letters(i int) string {
	s := ""
	for ; i > 0 || s == ""; i /= 26 {
		s += string(rune('a' + i%26))
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
