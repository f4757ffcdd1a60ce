package model

import (
	"slices"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// Settings are the settings of a model check ([checks.model-gpt],
// [checks.model-resnet], [checks.model-gpt-multinode]).
type Settings struct {
	// Python is the interpreter with PyTorch: a path, or a name looked up
	// in PATH, then in /usr/bin and /usr/local/bin ("python3": slurmd runs
	// the Prolog without PATH); sites with PyTorch in a venv or a module
	// name the venv's ("/opt/torch/bin/python").
	Python string `toml:"python"`
	// Script is the site's own training script; empty runs the script
	// vigil ships (written to a private temporary directory). It must
	// speak the same lines (docs/model.md).
	Script string `toml:"script"`
	// Steps is how many training steps each run takes.
	Steps int `toml:"steps"`
	// Batch is the global batch (sequences or images), split over the ranks.
	Batch int `toml:"batch"`
	// Width and Layers size the model (0: the script's defaults: GPT 128
	// wide and 2 blocks, ResNet 16 channels and 2 stages).
	Width  int `toml:"width"`
	Layers int `toml:"layers"`
	// DType is "float32", "bfloat16", "float16", or "auto": bfloat16 on
	// GPUs and NPUs, float32 on CPUs.
	DType string `toml:"dtype"`
	// Ranks is how many processes run on this node: 0 is one per device
	// of the job (one on a node without accelerators, which trains on
	// its CPUs).
	Ranks int `toml:"ranks"`
	// Threads is each rank's CPU thread count (0: PyTorch's default).
	Threads int `toml:"threads"`
	// Env are extra KEY=VALUE entries of the ranks' environment
	// ("GLOO_SOCKET_IFNAME=ib0", "NCCL_SOCKET_IFNAME=ib0").
	Env []string `toml:"env"`
	// Budget is the most the check may take, start to end; its ranks are
	// killed (process group) when it runs out.
	Budget time.Duration `toml:"budget"`
	// StepTimeout is the longest a rank may go between two lines once it
	// has started: a rank silent for longer is hung (ModelHang).
	StepTimeout time.Duration `toml:"step_timeout"`
	// LossTolerance is how far the run's loss may be from the reference
	// curve at each point, relative to the reference (0.15: 15%).
	LossTolerance float64 `toml:"loss_tolerance"`
	// MinLossDrop is how much the loss must fall over the run: the mean of
	// the last fifth of the steps at most (1 - MinLossDrop) times the mean
	// of the first fifth.
	MinLossDrop float64 `toml:"min_loss_drop"`
	// Reference is this site's reference curve: the mean loss after every
	// ReferenceEvery steps, as a known-good node printed it (docs/model.md
	// says how to learn it); empty uses the shipped reference for the
	// model, dtype and device kind, if there is one.
	Reference []float64 `toml:"reference"`
	// Thresholds are the longest a step may take, in milliseconds, by
	// device model: [checks.NAME.thresholds."H200"] step_ms = 45. A key
	// matches a device whose name contains it ("cpu" for CPU runs); the
	// longest matching key wins; none: no floor. vigil-baseline proposes
	// them from the fleet's reports.
	Thresholds devcheck.Thresholds `toml:"thresholds"`
	// SlowFactor names a rank slow when its median compute time is above
	// this many times the median over every rank of the run.
	SlowFactor float64 `toml:"slow_factor"`
}

// CheckBudget is s.Budget (benchmarks.Budgeter).
func (s Settings) CheckBudget() time.Duration { return s.Budget }

// StepMetric is the value name of a run's median step time, and its key
// in thresholds.
const StepMetric = "step_ms"

// ReferenceEvery is the step spacing of a reference curve.
const ReferenceEvery = 10

// defaults returns the shipped settings of a model with the given steps,
// batch and budget.
func defaults(steps, batch int, budget time.Duration) Settings {
	return Settings{
		Python:        "python3",
		Steps:         steps,
		Batch:         batch,
		DType:         "auto",
		Budget:        budget,
		StepTimeout:   30 * time.Second,
		LossTolerance: 0.15,
		MinLossDrop:   0.05,
		Thresholds:    devcheck.Thresholds{},
		SlowFactor:    2,
	}
}

// Validate reports out-of-range settings, naming the key.
func (s *Settings) Validate() error {
	switch {
	case s.Python == "":
		return benchmarks.BadSetting("python", "empty: want an interpreter with PyTorch (\"python3\", \"/opt/torch/bin/python\")")
	case s.Steps < 2*ReferenceEvery || s.Steps > 100000:
		return benchmarks.BadSetting("steps", "%d: want %d to 100000", s.Steps, 2*ReferenceEvery)
	case s.Batch < 1 || s.Batch > 1<<20:
		return benchmarks.BadSetting("batch", "%d: want 1 to %d", s.Batch, 1<<20)
	case s.Width < 0 || s.Layers < 0 || s.Width > 1<<16 || s.Layers > 1024:
		return benchmarks.BadSetting("width", "width %d, layers %d: want 0 (the script's) or a size", s.Width, s.Layers)
	case !slices.Contains([]string{"auto", "float32", "bfloat16", "float16"}, s.DType):
		return benchmarks.BadSetting("dtype", "%q: want auto, float32, bfloat16 or float16", s.DType)
	case s.Ranks < 0 || s.Ranks > 1024:
		return benchmarks.BadSetting("ranks", "%d: want 0 (one per device) to 1024", s.Ranks)
	case s.Threads < 0 || s.Threads > 1024:
		return benchmarks.BadSetting("threads", "%d: want 0 to 1024", s.Threads)
	case s.Budget < 10*time.Second || s.Budget > 2*time.Hour:
		return benchmarks.BadSetting("budget", "%v: want 10s to 2h", s.Budget)
	case s.StepTimeout < time.Second || s.StepTimeout > s.Budget:
		return benchmarks.BadSetting("step_timeout", "%v: want 1s to the budget (%v)", s.StepTimeout, s.Budget)
	case s.LossTolerance <= 0 || s.LossTolerance > 10:
		return benchmarks.BadSetting("loss_tolerance", "%v: want above 0, at most 10", s.LossTolerance)
	case s.MinLossDrop < 0 || s.MinLossDrop >= 1:
		return benchmarks.BadSetting("min_loss_drop", "%v: want 0 to below 1", s.MinLossDrop)
	case s.SlowFactor < 1.05 || s.SlowFactor > 100:
		return benchmarks.BadSetting("slow_factor", "%v: want 1.05 to 100", s.SlowFactor)
	}
	for _, e := range s.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return benchmarks.BadSetting("env", "%q: want KEY=VALUE", e)
		}
	}
	for i, v := range s.Reference {
		if !(v > 0) {
			return benchmarks.BadSetting("reference", "point %d is %v: want positive losses", i+1, v)
		}
	}
	for model, lim := range s.Thresholds {
		for metric, v := range lim {
			if metric != StepMetric {
				return benchmarks.BadSetting("thresholds", "%q: unknown metric %q: want %s", model, metric, StepMetric)
			}
			if !(v > 0) {
				return benchmarks.BadSetting("thresholds", "%q %s = %v: want a positive number of milliseconds", model, metric, v)
			}
		}
	}
	return nil
}
