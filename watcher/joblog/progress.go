package joblog

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Terminal is line as a terminal shows it: ANSI escape sequences (colours,
// cursor moves, OSC titles) and other control characters but the tab
// dropped. Frames a '\r' separates are Follower's business, not this.
func Terminal(line string) string {
	if !strings.ContainsFunc(line, isControl) {
		return line
	}
	line = reANSI.ReplaceAllString(line, "")
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return -1
		}
		return r
	}, line)
}

func isControl(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }

// reANSI is an escape sequence: CSI (ESC [ ... final byte), OSC (ESC ] ...
// BEL or ESC \), or a two-byte escape.
var reANSI = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])`)

// progressFormat is one framework's progress line: the groups named epoch
// and step (either may be absent), read from the line as a terminal shows
// it. fraction says the epoch group is a fractional epoch, the line's
// advancing counter: Step holds it in ten-thousandths of an epoch.
type progressFormat struct {
	name     string
	re       *regexp.Regexp
	fraction bool
}

// progressFormats are the frameworks' own progress lines, each with the
// code that prints it and a line a public issue shows. docs/hang-detection.md
// ("Progress formats") lists the same.
var progressFormats = []progressFormat{
	// Hugging Face transformers: Trainer.log() adds the float epoch to the
	// logs and ProgressCallback.on_log() prints str(logs), a Python dict
	// (src/transformers/trainer.py, trainer_callback.py); no step in it.
	// "{'loss': 6.2645, 'learning_rate': 0.001, 'epoch': 0.02}"
	// https://github.com/huggingface/transformers/issues/14531
	{name: "transformers-trainer", re: regexp.MustCompile(`^\s*\{'[^{}]*'epoch': (?P<epoch>\d+(?:\.\d+)?(?:[eE]-?\d+)?)[,}]`), fraction: true},
	// tqdm's format_meter (tqdm/std.py): l_bar '{desc}: {percentage:3.0f}%|',
	// r_bar '| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, ...]'; Lightning's
	// TQDMProgressBar (lightning/pytorch/callbacks/progress/tqdm_progress.py)
	// sets desc to "Epoch {current_epoch}"; fairseq's TqdmProgressBar to
	// "epoch 001". Bars without '|' are tqdm's own when it cannot draw.
	// "Epoch 0:  14%|█▍        | 100/704 [00:44<04:29,  2.24it/s, v_num=11, train_loss=4.600]"
	// https://github.com/Lightning-AI/pytorch-lightning/issues/20344
	// "Epoch 0:  97% 1651/1702 [13:00<00:24,  2.11it/s, loss=0.158, v_num=0, train_loss=0.149]"
	// https://github.com/Lightning-AI/pytorch-lightning/issues/3866
	{name: "tqdm", re: regexp.MustCompile(`(?i)(?:\bepoch (?P<epoch>\d+)(?:/\d+)?:\s*)?\b\d{1,3}%(?:\|[^|]*\|)?\s*(?P<step>\d+)/\d+\s*\[`)},
	// torchtitan: MetricsProcessor.log() (torchtitan/components/metrics.py),
	// f"{color.red}step: {step:2}  {color.green}loss: ...", coloured.
	// "[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%"
	// https://github.com/pytorch/torchtitan/pull/1287
	{name: "torchtitan", re: regexp.MustCompile(`\bstep:\s*(?P<step>\d+)\s+loss:`)},
	// MMEngine: LogProcessor.get_log_after_iter() (mmengine/runner/log_processor.py),
	// f'Epoch({mode}){cur_epoch_str}[{cur_iter_str}/{dataloader_len}]' or
	// f'Iter({mode}) [{cur_iter_str}/{runner.max_iters}]'.
	// "09/13 13:28:11 - mmengine - INFO - Epoch(train)   [1][ 100/2566]  base_lr: 3.9643e-04 ..."
	// https://github.com/vllm-project/vllm/issues/8444
	{name: "mmengine", re: regexp.MustCompile(`\b(?:Epoch\((?:train|val|test)\)\s*\[(?P<epoch>\d+)\]|Iter\((?:train|val|test)\)\s*)\[\s*(?P<step>\d+)/\d+\]`)},
	// The bracketed epoch and step of MMCV's TextLoggerHook, torchvision's
	// reference scripts' MetricLogger and the field report's trainer, whose
	// total may be "all": "Epoch [1][640/1730]", "Epoch: [0]  [ 260/9143]",
	// "[INFO][train_epoch]:Rank:0 Epoch:[3][1000/all] Data Time ...".
	// https://github.com/open-mmlab/mmaction/issues/199
	// https://github.com/mlcommons/training/issues/546
	{name: "epoch-bracket", re: regexp.MustCompile(`\bEpoch\s*:?\s*\[\s*(?P<epoch>\d+)\s*\]\s*\[\s*(?P<step>\d+)\s*/\s*(?:\d+|all)\s*\]`)},
	// fairseq: SimpleProgressBar.log() (fairseq/logging/progress_bar.py),
	// "{}:  {:5d} / {:d} {}".format(self.prefix, self.i + 1, self.size, ...)
	// with the prefix "epoch {:03d}"; older releases printed no colon.
	// "| epoch 001:    450 / 1891 loss=11.521, nll_loss=10.881, ppl=1886.05, ..."
	// https://github.com/facebookresearch/fairseq/issues/940
	{name: "fairseq", re: regexp.MustCompile(`\bepoch (?P<epoch>\d+):?\s+(?P<step>\d+) / \d+\b`)},
	// fairseq's JsonProgressBar: json.dumps of {"epoch": ..., "update": ...,
	// ..., "num_updates": ...} (the same file).
	// https://github.com/facebookresearch/fairseq/issues/233
	{name: "fairseq-json", re: regexp.MustCompile(`^\s*\{"epoch": (?P<epoch>\d+),.*"num_updates": "?(?P<step>\d+)`)},
	// Keras: Progbar.update() (keras/src/utils/progbar.py), "%{numdigits}d/%d"
	// then a bar of '━' (Keras 3, coloured) or "[====>....]" (Keras 2), or
	// "%7d/Unknown"; verbose=2 prints "423/423 - 186s - ..." at the end.
	// "  8/110 [=>............................] - ETA: 7:39 - loss: 6723.7268"
	// https://github.com/qqwweee/keras-yolo3/issues/299
	{name: "keras", re: regexp.MustCompile(`^\s*(?P<step>\d+)/(?:\d+ (?:\[[=>.]*\]|━|- \d+s)|Unknown\b)`)},
	// Composer: ConsoleLogger._get_progress_string()
	// (composer/loggers/console_logger.py), f'[epoch={cur_epoch + 1}]' +
	// f'[batch={cur_batch}/{total}]', or f'[{unit}={curr}/{total}]'.
	// "[epoch=1][batch=10/1000]:" (the format string's output; no public
	// issue quotes one)
	{name: "composer", re: regexp.MustCompile(`(?:\[epoch=(?P<epoch>\d+)\])?\[(?:batch|sample|token|iteration)=(?P<step>\d+)(?:/\d+)?\]`)},
	// MaxText: metric_logger.py, f"completed step: {step}, seconds: ...".
	// "completed step: 15107, seconds: 2.167, TFLOP/s: 36.722, loss: 2.191"
	// https://github.com/AI-Hypercomputer/maxtext/issues/8
	{name: "maxtext", re: regexp.MustCompile(`\bcompleted step: (?P<step>\d+)`)},
	// DeepSpeed: DeepSpeedEngine._report_progress() (deepspeed/runtime/engine.py),
	// log_dist(f"step={step}, skipped={self.skipped_steps}, lr=..., mom=...",
	// ranks=[0]), which prefixes "[Rank 0] ".
	// "[2021-11-26 03:07:16,494] [INFO] [logging.py:69:log_dist] [Rank 0] step=2000, skipped=1995, lr=[0.001, 0.001], mom=[0.0, 0.0]"
	// https://github.com/huggingface/transformers/issues/14531
	{name: "deepspeed", re: regexp.MustCompile(`\bstep=(?P<step>\d+), skipped=\d+`)},
}

// progressIn reads a progress line into m: a framework's own format
// first, then a generic epoch or step number. A line of Slurm's own is
// none.
func progressIn(line string, m *Match) bool {
	line = Terminal(line)
	if reSlurmLine.MatchString(line) {
		return false
	}
	if !knownProgress(line, m) {
		m.Epoch = num(reEpoch, line, 1<<40)
		m.Step = num(reStep, line, 1<<62)
		if m.Step < 0 && m.Epoch >= 0 {
			m.Step = num(reBracket, line, 1<<62)
		}
	}
	if m.Epoch < 0 && m.Step < 0 {
		return false
	}
	m.Kind = KindProgress
	return true
}

// knownProgress reads line by the first of progressFormats that matches.
func knownProgress(line string, m *Match) bool {
	for _, f := range progressFormats {
		g := f.re.FindStringSubmatch(line)
		if g == nil {
			continue
		}
		epoch, step := int64(-1), int64(-1)
		for i, name := range f.re.SubexpNames() {
			if g[i] == "" {
				continue
			}
			switch {
			case name == "epoch" && f.fraction:
				x, err := strconv.ParseFloat(g[i], 64)
				if err == nil && x >= 0 && x < 1<<40 {
					step = int64(math.Round(x * 10000))
				}
			case name == "epoch":
				epoch = parseNum(g[i], 1<<40)
			case name == "step":
				step = parseNum(g[i], 1<<62)
			}
		}
		if epoch < 0 && step < 0 {
			continue
		}
		m.Epoch, m.Step = epoch, step
		return true
	}
	return false
}

func parseNum(s string, limit int64) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > limit {
		return -1
	}
	return n
}

// StreamHeartbeat marks a log record of the job's output (stdout or
// stderr) whose line is in no known format but recurs as the job's
// heartbeat (Heartbeat): it reads as a progress line without an epoch or
// step, a beat each time it is recorded.
const StreamHeartbeat = "heartbeat"

// Heartbeat learns the job's own pulse from lines in no known format: a
// line template (the line as a terminal shows it, its numbers masked)
// seen at least heartbeatSightings times at a steady cadence (the latest
// two intervals within a factor of 2 of each other), its numbers changing
// each time, becomes a beat source; each later line of it whose numbers
// changed is a beat. A line whose numbers repeat (the same warning again)
// never is. It keeps at most maxTemplates templates, the least recently
// seen dropped first. The zero Heartbeat is ready to use; it is not safe
// for concurrent use.
type Heartbeat struct {
	templates map[string]*template
}

type template struct {
	seen int       // sightings at distinct times with new numbers
	last time.Time // the latest sighting
	nums string    // its numbers
	gaps [2]time.Duration
	beat bool // a beat source
}

// Bounds of a Heartbeat.
const (
	heartbeatSightings = 3
	maxTemplates       = 256
	maxTemplateLen     = 256 // bytes of a template kept as its key
)

// heartbeatLine reads a StreamHeartbeat record's line: progress without
// an epoch or step (Heartbeat recorded it as a beat).
func heartbeatLine(line string, m *Match) bool {
	if reSlurmLine.MatchString(Terminal(line)) {
		return false
	}
	m.Kind = KindProgress
	return true
}

// Keep says how a line of the job's output stream at t is recorded: under
// stream when LineIn matches it, under StreamHeartbeat when it is a beat
// of a learned template, not at all (false) otherwise.
func (h *Heartbeat) Keep(t time.Time, stream, line string) (string, bool) {
	if _, ok := LineIn(stream, line); ok {
		return stream, true
	}
	if h.Observe(t, line) {
		return StreamHeartbeat, true
	}
	return "", false
}

// Observe takes a line at t that LineIn does not match and reports
// whether it is a beat of a learned template.
func (h *Heartbeat) Observe(t time.Time, line string) bool {
	line = Terminal(line)
	if len(line) > MaxLine {
		line = line[:MaxLine]
	}
	if reSlurmLine.MatchString(line) {
		return false
	}
	key, nums := mask(line)
	if nums == "" {
		return false
	}
	if h.templates == nil {
		h.templates = map[string]*template{}
	}
	e := h.templates[key]
	if e == nil {
		h.evict()
		h.templates[key] = &template{seen: 1, last: t, nums: nums}
		return false
	}
	if e.nums == nums {
		return false // the same values again: no progress
	}
	e.nums = nums
	if !t.After(e.last) {
		return e.beat // another line of the same poll
	}
	e.gaps = [2]time.Duration{e.gaps[1], t.Sub(e.last)}
	e.last = t
	e.seen++
	if !e.beat && e.seen >= heartbeatSightings {
		lo, hi := min(e.gaps[0], e.gaps[1]), max(e.gaps[0], e.gaps[1])
		e.beat = lo > 0 && hi <= 2*lo
	}
	return e.beat
}

// evict drops the least recently seen template when the table is full.
func (h *Heartbeat) evict() {
	if len(h.templates) < maxTemplates {
		return
	}
	var oldest string
	var at time.Time
	for k, e := range h.templates {
		if oldest == "" || e.last.Before(at) {
			oldest, at = k, e.last
		}
	}
	delete(h.templates, oldest)
}

// reNumber is a number in a line: digits with a decimal part or exponent.
var reNumber = regexp.MustCompile(`\d+(?:[.,:]\d+)*(?:[eE][-+]?\d+)?`)

// mask is line's template (every number replaced by '#', spaces
// collapsed, at most maxTemplateLen bytes) and its numbers, joined.
func mask(line string) (key, nums string) {
	var n []string
	key = reNumber.ReplaceAllStringFunc(line, func(s string) string {
		n = append(n, s)
		return "#"
	})
	key = strings.Join(strings.Fields(key), " ")
	if len(key) > maxTemplateLen {
		key = key[:maxTemplateLen]
	}
	return key, strings.Join(n, " ")
}
