package model

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/internal/textutil"
	"github.com/vigil-hpc/vigil/internal/vendors"
)

// rankLine is one line a rank prints on stdout (scripts/train.py's doc).
type rankLine struct {
	E         string    `json:"e"`
	Rank      int       `json:"rank"`
	World     int       `json:"world"`
	Device    string    `json:"device"`
	Name      string    `json:"name"`
	Torch     string    `json:"torch"`
	Step      int       `json:"step"`
	MS        float64   `json:"ms"`
	Loss      *float64  `json:"loss"`
	Losses    []loss    `json:"losses"`
	Computes  []float64 `json:"computes"`
	Steps     int       `json:"steps"`
	ItemsPerS float64   `json:"items_per_s"`
}

// loss is a rank's loss as the script prints it: a number, or "nan",
// "inf", "-inf" as a string (JSON has no such numbers).
type loss float64

func (l *loss) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err == nil {
		*l = loss(f)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("loss %q: %w", s, err)
	}
	*l = loss(f)
	return nil
}

// step is what a run learnt of one training step: the mean loss, each
// rank's own loss and compute time (gathered by the script), and the
// step's wall time on the rank that said it.
type step struct {
	Step     int
	MS       float64
	Loss     float64
	Losses   []float64
	Computes []float64
}

// rank is what one of this node's ranks did.
type rank struct {
	// Rank is its global rank; Label names its device ("gpu3", "cpu1").
	Rank  int
	Label string
	// Name is the device's model as PyTorch names it ("NVIDIA H200", "cpu").
	Name string
	// Started is set once it printed its start line (it met its peers).
	Started bool
	// Computed and Stepped are the last step it finished computing, and
	// the last step it finished (the collective and the update included).
	Computed, Stepped int
	// ComputeMS are its own compute times, one per step computed.
	ComputeMS []float64
	// Done is set when it printed its last line; ItemsPerS is its rate.
	Done      bool
	ItemsPerS float64
	// Exit is its exit status (-1: killed or not waited for); Stderr its
	// last lines of standard error.
	Exit   int
	Stderr []string
	// Silent is set when it was killed for saying nothing within the
	// step timeout.
	Silent bool
	// Torch is the PyTorch version it reported.
	Torch string
	// NotRun is set when its process could not be started (Stderr says why).
	NotRun bool
}

// PeerLostExit is the exit status of a rank whose collective failed
// because a peer went away (the script's own convention): it says
// nothing against this rank's device.
const PeerLostExit = 3

// outcome is a whole run on this node: its ranks, and the steps as the
// first of them saw them (each rank sees every rank's losses and times).
type outcome struct {
	Ranks []*rank
	Steps []step
	// Expired is set when the budget ran out before every rank ended.
	Expired bool
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
}

// launch is how to start this node's ranks.
type launch struct {
	// Argv is the interpreter, the script and its arguments.
	Argv []string
	// Env is added to each rank's environment, before its own entries.
	Env []string
	// Kind is "cuda", "npu" or "cpu"; Devices the device index of each
	// local rank (for cpu: 0, 1, ... as labels only).
	Kind    string
	Devices []int
	// First and World are the first global rank of this node and the
	// rank count of the whole run; MasterAddr and MasterPort where rank 0
	// listens.
	First, World int
	MasterAddr   string
	MasterPort   int
	// StepTimeout is the silence after which a started rank is hung.
	StepTimeout time.Duration
	// Dir is the ranks' working directory.
	Dir string
}

// labelPrefix is how a device kind's devices are named in results: the
// prefix of the vendor whose PyTorch device type kind is ("gpu" for cuda),
// "cpu" on CPUs.
func labelPrefix(kind string) string {
	if r, ok := vendors.ByTorchDevice(kind); ok {
		return r.DevPrefix
	}
	return "cpu"
}

// event is a line or an end from one rank.
type event struct {
	local int
	line  *rankLine
	bad   string // a line that was not JSON
	exit  *int   // set when the rank exited
}

// start runs the ranks until they end, one of them fails or goes silent,
// or ctx ends; it kills every rank's process group before it returns.
func (l launch) start(ctx context.Context) outcome {
	t0 := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := outcome{}
	events := make(chan event, 64)
	var wg sync.WaitGroup
	cmds := make([]*exec.Cmd, len(l.Devices))
	running := 0
	for i, dev := range l.Devices {
		r := &rank{Rank: l.First + i, Label: labelPrefix(l.Kind) + strconv.Itoa(dev), Exit: -1}
		out.Ranks = append(out.Ranks, r)
		cmd := osutil.Command(ctx, 2*time.Second, l.Argv...)
		cmd.Dir = l.Dir
		cmd.Env = append(os.Environ(), l.Env...)
		cmd.Env = append(cmd.Env,
			"RANK="+strconv.Itoa(l.First+i), "LOCAL_RANK="+strconv.Itoa(i), "WORLD_SIZE="+strconv.Itoa(l.World),
			"MASTER_ADDR="+l.MasterAddr, "MASTER_PORT="+strconv.Itoa(l.MasterPort),
			"VIGIL_MODEL_DEVICE="+l.Kind, "VIGIL_MODEL_DEVICE_INDEX="+strconv.Itoa(dev))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			r.Stderr, r.NotRun = []string{err.Error()}, true
			continue
		}
		tail := &textutil.LineTail{Max: 20, Width: 300, Mark: "…"}
		cmd.Stderr = tail
		if err := cmd.Start(); err != nil {
			r.Stderr, r.NotRun = []string{err.Error()}, true
			continue
		}
		cmds[i] = cmd
		running++
		wg.Add(1)
		go func(i int, cmd *exec.Cmd, stdout io.Reader, tail *textutil.LineTail) {
			defer wg.Done()
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				var ln rankLine
				if err := json.Unmarshal(sc.Bytes(), &ln); err != nil || ln.E == "" {
					events <- event{local: i, bad: textutil.Cut(sc.Text(), 200, "…")}
					continue
				}
				events <- event{local: i, line: &ln}
			}
			_, _ = io.Copy(io.Discard, stdout)
			code := -1
			if err := cmd.Wait(); err == nil {
				code = 0
			} else if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.Exited() {
				code = ee.ExitCode()
			}
			out.Ranks[i].Stderr = tail.Lines()
			events <- event{local: i, exit: &code}
		}(i, cmd, stdout, tail)
	}
	go func() { wg.Wait(); close(events) }()
	l.follow(ctx, &out, events, running)
	cancel()
	for _, c := range cmds {
		if c != nil && c.Process != nil {
			_ = osutil.KillGroup(c.Process.Pid)
		}
	}
	for range events { // drain until every reader has ended
	}
	out.Elapsed = time.Since(t0)
	return out
}

// follow reads the ranks' events until every one of the running ranks has ended, or one
// failed, or a started rank stayed silent past the step timeout, or ctx
// ended (the budget: Expired).
func (l launch) follow(ctx context.Context, out *outcome, events <-chan event, running int) {
	last := make([]time.Time, len(out.Ranks))
	for i := range last {
		last[i] = time.Now()
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var grace <-chan time.Time
	for running > 0 {
		select {
		case <-ctx.Done():
			out.Expired = true
			return
		case <-grace:
			return
		case <-tick.C:
			hung := false
			for i, r := range out.Ranks {
				if r.Started && !r.Done && r.Exit < 0 && time.Since(last[i]) > l.StepTimeout {
					r.Silent, hung = true, true
				}
			}
			if hung {
				return
			}
		case ev, ok := <-events:
			if !ok {
				return
			}
			r := out.Ranks[ev.local]
			last[ev.local] = time.Now()
			switch {
			case ev.exit != nil:
				r.Exit = *ev.exit
				running--
				if r.Exit != 0 && grace == nil {
					// One rank failed: the others would wait for it in
					// vain. Those that fail with it (a peer lost, the same
					// error) have a moment to say so.
					grace = time.After(exitGrace)
				}
			case ev.line != nil:
				out.record(r, ev.local, ev.line)
			}
		}
	}
}

// record takes one line of a rank into the outcome.
func (out *outcome) record(r *rank, local int, ln *rankLine) {
	switch ln.E {
	case "start":
		r.Started, r.Name, r.Torch = true, ln.Name, ln.Torch
	case "computed":
		r.Computed = ln.Step
		r.ComputeMS = append(r.ComputeMS, ln.MS)
	case "step":
		r.Stepped = ln.Step
		if local == 0 {
			s := step{Step: ln.Step, MS: ln.MS, Loss: math.NaN(), Computes: ln.Computes}
			if ln.Loss != nil {
				s.Loss = *ln.Loss
			}
			for _, v := range ln.Losses {
				s.Losses = append(s.Losses, float64(v))
			}
			out.Steps = append(out.Steps, s)
		}
	case "done":
		r.Done, r.ItemsPerS = true, ln.ItemsPerS
	}
}

// exitGrace is how long the other ranks may take to end after one failed.
const exitGrace = 3 * time.Second
