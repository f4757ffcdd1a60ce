// Package model holds vigil's model benchmarks: a few real training steps
// of a small model on the node's devices with the site's PyTorch, before
// the job's own. model-gpt trains a small decoder-only transformer,
// model-resnet a small residual CNN, model-gpt-multinode the transformer
// across every node of the job (in the prolog's cross-node phase).
//
// The training script ships inside vigil (scripts/train.py) and is written
// to a private temporary directory when a check runs; a site may name its
// own. One process per device, data-parallel over the vendor's collective
// library (NCCL, HCCL through torch_npu, gloo on CPUs), synthetic data and
// a fixed seed. The check reads the ranks' JSON lines and judges the loss
// (finite, falling, near the reference curve), the step times (against a
// floor per device model and against the run's other devices), errors and
// hangs. Everything the script does is bounded by the check's budget; its
// ranks run in their own process groups and are killed when it ends.
package model

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/internal/textutil"
	"github.com/vigil-hpc/vigil/internal/vendors"
)

//go:embed scripts/train.py
var trainScript []byte

// Script is the training script vigil ships (scripts/train.py).
func Script() []byte { return append([]byte(nil), trainScript...) }

// Names of the model checks.
const (
	GPT          = "model-gpt"
	ResNet       = "model-resnet"
	GPTMultinode = "model-gpt-multinode"
)

// check is one model check: which model, its shipped settings, its face.
type check struct {
	spec     benchmarks.Descriptor
	model    string
	unit     string
	defaults func() Settings
}

func newCheck(name, model, unit, desc string, defaults func() Settings, scope benchmarks.Scope) *check {
	c := &check{model: model, unit: unit, defaults: defaults}
	rs := reasons
	if scope == benchmarks.ScopeCrossNode {
		// The phase gives these when it cannot run the check across the
		// nodes (no meeting, outside the prolog, ...).
		rs = slices.Concat(reasons, benchmarks.CrossNodeReasons())
	}
	c.spec = benchmarks.Descriptor{Name: name, Kind: benchmarks.KindPerf, Vendor: benchmarks.VendorNone, Scope: scope,
		Description: desc, Reasons: rs, Settings: func() any { s := defaults(); return &s }}
	return c
}

var (
	gptCheck = newCheck(GPT, "gpt", "tokens/s",
		"a few training steps of a small GPT with the site's PyTorch: loss, step time, hangs",
		func() Settings { return defaults(40, 16, time.Minute) }, benchmarks.ScopeNode)
	resnetCheck = newCheck(ResNet, "resnet", "images/s",
		"a few training steps of a small ResNet with the site's PyTorch: loss, step time, hangs",
		func() Settings { return defaults(60, 32, 2*time.Minute) }, benchmarks.ScopeNode)
)

func init() {
	benchmarks.Register(gptCheck)
	benchmarks.Register(resnetCheck)
}

// Spec is the check's descriptor.
func (c *check) Spec() benchmarks.Descriptor { return c.spec }

// Run trains the model on this node's devices alone.
func (c *check) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	t0 := time.Now()
	res := benchmarks.Result{Check: c.spec.Name, Attempts: 1}
	p, v := c.prepare(ctx, env)
	if v.status == "" {
		defer p.cleanup()
		// The ranks meet on this node at a port that was free a moment
		// ago; one taken meanwhile is tried again with another.
		for try := 1; ; try++ {
			o := p.launch(0, len(p.devices), "127.0.0.1", 0).start(p.ctx)
			j := p.judging(true, "")
			v = j.judge(o)
			res.Values = j.values(o)
			if try == 3 || v.reason != ReasonModelNotStarted || !strings.Contains(v.msg, "Address already in use") || p.ctx.Err() != nil {
				break
			}
		}
		p.cancel()
	}
	res.Status, res.Reason, res.Message, res.Device = v.status, v.reason, v.msg, v.device
	if p != nil {
		res.Message += p.usedNote()
	}
	res.Duration = time.Since(t0)
	return res
}

// usedNote names the interpreter and PyTorch a run used, for its message.
func (p *prepared) usedNote() string {
	return fmt.Sprintf(" (python %s, PyTorch %s)", p.python, p.torch)
}

// prepared is a run made ready: settings, interpreter, script, devices.
type prepared struct {
	c       *check
	s       Settings
	python  string
	script  string
	dir     string
	kind    string
	devices []int
	dtype   string
	torch   string
	ctx     context.Context
	cancel  context.CancelFunc
}

// root is where Probe looks for devices ("/"; tests point it elsewhere).
var root = "/"

// prepare reads the settings, finds the devices, the interpreter and its
// PyTorch, and writes the script; a verdict with a status says why not.
func (c *check) prepare(ctx context.Context, env *benchmarks.Env) (*prepared, verdict) {
	p := &prepared{c: c, s: c.defaults(), kind: "cpu"}
	if env != nil && env.Settings != nil {
		if err := env.Settings(&p.s); err != nil {
			return nil, unknown(benchmarks.ReasonInvalidSettings, "[checks.%s]: %v", c.spec.Name, err)
		}
	}
	if err := p.s.Validate(); err != nil {
		return nil, unknown(benchmarks.ReasonInvalidSettings, "[checks.%s] %v", c.spec.Name, err)
	}
	kind, count := nodeDevices()
	p.kind = kind
	p.devices = deviceList(kind, count, env, p.s.Ranks)
	path, searched, err := findPython(p.s.Python)
	if err != nil {
		return nil, unknown(ReasonModelNoPyTorch, "%v (searched: %s): set [checks.%s] python to the interpreter with PyTorch",
			err, strings.Join(searched, ", "), c.spec.Name)
	}
	p.python = path
	if v := p.probe(ctx); v.status != "" {
		return nil, v
	}
	p.dtype = p.s.DType
	if p.dtype == "auto" {
		p.dtype = map[bool]string{true: "float32", false: "bfloat16"}[p.kind == "cpu"]
	}
	if v := p.writeScript(); v.status != "" {
		return nil, v
	}
	p.ctx, p.cancel = context.WithTimeout(ctx, p.s.Budget)
	return p, verdict{}
}

// nodeDevices is the PyTorch device type of the node's accelerators and
// their count: the first vendor of the table that the node shows and
// PyTorch can drive (its row's TorchDevice), else "cpu".
func nodeDevices() (string, int) {
	for _, f := range vendors.Probe(root) {
		if f.Row.TorchDevice != "" {
			return f.Row.TorchDevice, f.Count
		}
	}
	return "cpu", 0
}

// deviceList is the device index of each local rank: the job's devices
// (all of the node's when the job names none), at most ranks of them; on
// CPUs, ranks of them (default one).
func deviceList(kind string, count int, env *benchmarks.Env, ranks int) []int {
	var devs []int
	if kind == "cpu" {
		for i := range max(ranks, 1) {
			devs = append(devs, i)
		}
		return devs
	}
	if env != nil && env.Devices != nil {
		devs = append(devs, env.Devices...)
	} else {
		for i := range count {
			devs = append(devs, i)
		}
	}
	if ranks > 0 && ranks < len(devs) {
		devs = devs[:ranks]
	}
	return devs
}

// probeCode asks the interpreter what its PyTorch can use.
const probeCode = `import json
try:
    import torch
except Exception as e:
    print(json.dumps({"error": type(e).__name__ + ": " + str(e)})); raise SystemExit(0)
out = {"torch": torch.__version__, "cuda": torch.cuda.is_available(), "gloo": torch.distributed.is_available() and torch.distributed.is_gloo_available()}
try:
    import torch_npu
    out["npu"] = torch.npu.is_available()
except Exception:
    out["npu"] = False
print(json.dumps(out))`

// probe checks that the interpreter's PyTorch can train on the node's
// kind of device.
func (p *prepared) probe(ctx context.Context) verdict {
	wait := min(p.s.Budget/2, time.Minute)
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cmd := osutil.Command(pctx, 2*time.Second, p.python, "-c", probeCode)
	out, err := cmd.Output()
	var got struct {
		Error     string `json:"error"`
		Torch     string `json:"torch"`
		CUDA, NPU bool
		Gloo      bool `json:"gloo"`
	}
	if err == nil {
		err = json.Unmarshal(out, &got)
	}
	name := p.c.spec.Name
	switch {
	case err != nil && pctx.Err() != nil && ctx.Err() == nil:
		return unknown(ReasonModelNoPyTorch, "%s did not say within %v whether it has PyTorch (importing torch hangs, or the node is loaded): raise [checks.%s] budget (the probe may take half of it, up to 1m)",
			p.python, wait, p.c.spec.Name)
	case err != nil:
		return unknown(ReasonModelNoPyTorch, "%s could not be asked about PyTorch: %v%s", p.python, err, stderrOf(err))
	case got.Error != "":
		return unknown(ReasonModelNoPyTorch, "%s cannot import torch (%s): set [checks.%s] python to the interpreter with PyTorch",
			p.python, got.Error, name)
	case p.kind == "cuda" && !got.CUDA:
		return unknown(ReasonModelNoPyTorch, "PyTorch %s of %s cannot use CUDA on a node with NVIDIA GPUs (a build without CUDA, or the driver failed: see gpu-count): set [checks.%s] python",
			got.Torch, p.python, name)
	case p.kind == "npu" && !got.NPU:
		return unknown(ReasonModelNoPyTorch, "PyTorch %s of %s has no usable torch_npu on a node with Ascend NPUs: set [checks.%s] python",
			got.Torch, p.python, name)
	case p.kind == "cpu" && len(p.devices) > 1 && !got.Gloo:
		return unknown(ReasonModelNoPyTorch, "PyTorch %s of %s has no gloo backend for %d CPU ranks", got.Torch, p.python, len(p.devices))
	}
	p.torch = got.Torch
	return verdict{}
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + textutil.Cut(strings.TrimSpace(string(ee.Stderr)), 300, "…")
	}
	return ""
}

// writeScript puts the shipped script in a private directory, or checks
// that the site's is there.
func (p *prepared) writeScript() verdict {
	dir, err := os.MkdirTemp("", "vigil-model-")
	if err != nil {
		return unknown(ReasonModelNotStarted, "a private directory for the script: %v", err)
	}
	p.dir = dir
	p.script = filepath.Join(dir, "train.py")
	if p.s.Script != "" {
		if _, err := os.Stat(p.s.Script); err != nil {
			p.cleanup()
			return unknown(ReasonModelNotStarted, "[checks.%s] script: %v", p.c.spec.Name, err)
		}
		p.script = p.s.Script
		return verdict{}
	}
	if err := os.WriteFile(p.script, trainScript, 0o600); err != nil {
		p.cleanup()
		return unknown(ReasonModelNotStarted, "writing the script: %v", err)
	}
	return verdict{}
}

func (p *prepared) cleanup() {
	if p.cancel != nil {
		p.cancel()
	}
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
	}
}

// launch is how this node starts its ranks first.. of world, meeting
// rank 0 at addr:port (port 0: a free port here).
func (p *prepared) launch(first, world int, addr string, port int) launch {
	if port == 0 {
		port = freePort(addr)
	}
	argv := []string{p.python, p.script, "--model", p.c.model, "--steps", strconv.Itoa(p.s.Steps),
		"--batch", strconv.Itoa(p.s.Batch), "--dtype", p.dtype}
	if p.s.Width > 0 {
		argv = append(argv, "--width", strconv.Itoa(p.s.Width))
	}
	if p.s.Layers > 0 {
		argv = append(argv, "--layers", strconv.Itoa(p.s.Layers))
	}
	if p.s.Threads > 0 {
		argv = append(argv, "--threads", strconv.Itoa(p.s.Threads))
	}
	env := append([]string{"PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"}, p.s.Env...)
	return launch{Argv: argv, Env: env, Kind: p.kind, Devices: p.devices,
		First: first, World: world, MasterAddr: addr, MasterPort: port, StepTimeout: p.s.StepTimeout, Dir: p.dir}
}

// judging is how this run is judged; alone when every rank is here.
func (p *prepared) judging(alone bool, where string) judging {
	j := judging{Model: p.c.model, Unit: p.c.unit, Settings: p.s, Alone: alone, Where: where}
	if len(p.s.Reference) > 0 {
		j.Reference, j.RefName = p.s.Reference, "the site's reference"
	} else if p.s.Script == "" {
		if ref, ok := lookupReference(p.c.model, p.dtype, p.kind, p.s); ok {
			j.Reference, j.RefName = ref, fmt.Sprintf("the shipped %s %s reference", p.kind, p.dtype)
		}
	}
	return j
}

// freePort is a TCP port free on addr now, 0 when none could be had (the
// ranks then fail to meet, which is unknown). It is drawn from below the
// kernel's ephemeral range, so that no outgoing connection (the ranks'
// own, anyone's) takes it between this test and rank 0's bind.
func freePort(addr string) int {
	lo, _ := ephemeralRange()
	if lo > 20000 {
		for range 64 {
			p := 10000 + rand.IntN(lo-10000)
			if l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(p))); err == nil {
				l.Close()
				return p
			}
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ephemeralRange is the kernel's range of ports for outgoing connections
// (0, 0 when unreadable).
func ephemeralRange() (int, int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		return 0, 0
	}
	return lo, hi
}
