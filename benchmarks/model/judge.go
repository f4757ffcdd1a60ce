package model

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/stats"
)

// Reasons of the model checks.
const (
	// ReasonModelLossAbnormal: a rank's loss was not finite, or the loss
	// did not fall, or it left the reference curve (fail).
	ReasonModelLossAbnormal = "ModelLossAbnormal"
	// ReasonModelStepSlow: a device's steps took too long, against the
	// model's floor or the run's other devices (fail).
	ReasonModelStepSlow = "ModelStepSlow"
	// ReasonModelError: a rank ended with an exception (fail).
	ReasonModelError = "ModelError"
	// ReasonModelHang: a rank that had started stayed silent past the
	// step timeout while computing (fail).
	ReasonModelHang = "ModelHang"
	// ReasonModelNoPyTorch: no interpreter with PyTorch for the node's
	// devices (unknown).
	ReasonModelNoPyTorch = "ModelNoPyTorch"
	// ReasonModelNotStarted: the ranks did not start training (could not
	// meet, or failed before the first step alike) (unknown).
	ReasonModelNotStarted = "ModelNotStarted"
	// ReasonModelScriptError: every rank failed with the same error: the
	// script or its environment, not a device (unknown).
	ReasonModelScriptError = "ModelScriptError"
	// ReasonModelPeerWait: this node's ranks waited in a collective for
	// ranks on other nodes (unknown).
	ReasonModelPeerWait = "ModelPeerWait"
	// ReasonModelPeerLost: a collective failed because a peer went away (unknown).
	ReasonModelPeerLost = "ModelPeerLost"
	// ReasonModelUnfinished: the budget ran out while the ranks were still
	// training (unknown).
	ReasonModelUnfinished = "ModelUnfinished"
)

// reasons are the tokens a model check's results can carry.
var reasons = []string{ReasonModelLossAbnormal, ReasonModelStepSlow, ReasonModelError, ReasonModelHang,
	ReasonModelNoPyTorch, ReasonModelNotStarted, ReasonModelScriptError, ReasonModelPeerWait,
	ReasonModelPeerLost, ReasonModelUnfinished}

// verdict is a judgement before it becomes a result.
type verdict struct {
	status benchmarks.Status
	reason string
	msg    string
	device string
}

func pass(msg string) verdict { return verdict{status: benchmarks.StatusPass, msg: msg} }

func fail(reason, device, format string, args ...any) verdict {
	return verdict{status: benchmarks.StatusFail, reason: reason, device: device, msg: fmt.Sprintf(format, args...)}
}

func unknown(reason, format string, args ...any) verdict {
	return verdict{status: benchmarks.StatusUnknown, reason: reason, msg: fmt.Sprintf(format, args...)}
}

// judging is what a judgement needs beside the outcome.
type judging struct {
	// Model is "gpt" or "resnet"; Unit what its rate counts ("tokens/s").
	Model, Unit string
	// Settings are the check's settings.
	Settings Settings
	// Reference is the curve to compare with (nil: none known); RefName
	// says which it is, for messages.
	Reference []float64
	RefName   string
	// Alone is set when every rank of the run is on this node: a
	// collective that hangs is then this node's.
	Alone bool
	// Where names the remote ranks in messages ("another node").
	Where string
}

// errorSep ends a ModelError message's first part; the exception follows.
const errorSep = ": "

// judge turns a run's outcome into its verdict: errors first, then hangs,
// then the loss, then the step times. Pure.
func (j judging) judge(o outcome) verdict {
	if v, done := j.ended(o); done {
		return v
	}
	if v, done := j.hung(o); done {
		return v
	}
	if v, done := j.nonFinite(o); done {
		return v
	}
	if o.Expired && !allDone(o) {
		return unknown(ReasonModelUnfinished, "the budget (%v) ran out at step %d of %d", j.Settings.Budget, lastStep(o), j.Settings.Steps)
	}
	if v, done := j.slow(o); done {
		return v
	}
	if v, done := j.curve(o); done {
		return v
	}
	return pass(j.summary(o))
}

// ended judges ranks that exited with an error.
func (j judging) ended(o outcome) (verdict, bool) {
	var failed, lost, early []*rank
	for _, r := range o.Ranks {
		switch {
		case r.Exit == PeerLostExit:
			lost = append(lost, r)
		case r.Exit > 0 || r.NotRun:
			failed = append(failed, r)
			if !r.Started {
				early = append(early, r)
			}
		}
	}
	if len(failed) == 0 {
		if len(lost) > 0 {
			return unknown(ReasonModelPeerLost, "%s: %s", labels(lost), lastLine(lost[0])), true
		}
		return verdict{}, false
	}
	first := failed[0]
	same := true
	for _, r := range failed[1:] {
		same = same && lastLine(r) == lastLine(first)
	}
	switch {
	case len(early) == len(failed):
		// Before its start line a rank has not met the others: a port
		// taken, a peer unreachable, an interpreter or script that
		// cannot start say nothing sure about the devices.
		return unknown(ReasonModelNotStarted, "%s failed before the first step: %s", labels(failed), lastLine(first)), true
	case same && len(failed) == len(o.Ranks) && len(o.Ranks) > 1:
		return unknown(ReasonModelScriptError, "every rank failed alike (the script or its environment, not a device): %s", lastLine(first)), true
	}
	return fail(ReasonModelError, first.Label, "%s (rank %d) failed at step %d"+errorSep+"%s", first.Label, first.Rank, first.Stepped+1, lastLine(first)), true
}

// hung judges ranks killed for silence: a rank silent while computing is
// its device's hang; ranks silent in the collective wait for a peer.
func (j judging) hung(o outcome) (verdict, bool) {
	var computing, waiting []*rank
	for _, r := range o.Ranks {
		if !r.Silent {
			continue
		}
		if r.Computed > r.Stepped {
			waiting = append(waiting, r)
		} else {
			computing = append(computing, r)
		}
	}
	switch {
	case len(computing) > 0:
		r := computing[0]
		return fail(ReasonModelHang, r.Label, "%s (rank %d) computed nothing for %v after step %d",
			labels(computing), r.Rank, j.Settings.StepTimeout, r.Stepped), true
	case len(waiting) > 0 && j.Alone:
		r := waiting[0]
		return fail(ReasonModelHang, "", "every rank stopped in the collective of step %d for %v (%s)",
			r.Computed, j.Settings.StepTimeout, labels(waiting)), true
	case len(waiting) > 0:
		r := waiting[0]
		return unknown(ReasonModelPeerWait, "%s waited %v in the collective of step %d for ranks on %s",
			labels(waiting), j.Settings.StepTimeout, r.Computed, j.Where), true
	}
	return verdict{}, false
}

// nonFinite judges the first step at which some rank's own loss was not
// finite: those ranks are the culprits, on this node or another.
func (j judging) nonFinite(o outcome) (verdict, bool) {
	for _, s := range o.Steps {
		var bad []int
		for r, l := range s.Losses {
			if math.IsNaN(l) || math.IsInf(l, 0) {
				bad = append(bad, r)
			}
		}
		if len(bad) == 0 {
			continue
		}
		for _, r := range o.Ranks {
			if slices.Contains(bad, r.Rank) {
				return fail(ReasonModelLossAbnormal, r.Label, "%s (rank %d) loss %v at step %d; the other ranks' finite",
					r.Label, r.Rank, s.Losses[r.Rank], s.Step), true
			}
		}
		return pass(fmt.Sprintf("rank %s on %s had a loss of %v at step %d; this node's ranks did not",
			joinInts(bad), j.Where, s.Losses[bad[0]], s.Step)), true
	}
	return verdict{}, false
}

// warmup is how many first steps the step-time rules leave out.
const warmup = 2

// slow judges compute times against the run's other ranks, then whole
// steps against the model's floor for the device.
func (j judging) slow(o outcome) (verdict, bool) {
	med := rankMedians(o)
	mine := map[int]*rank{}
	for _, r := range o.Ranks {
		mine[r.Rank] = r
	}
	if len(med) >= 2 {
		for r := range len(med) {
			others := slices.Concat(med[:r], med[r+1:])
			m := stats.Median(others)
			if m > 0 && med[r] > j.Settings.SlowFactor*m {
				if lr, ok := mine[r]; ok {
					return fail(ReasonModelStepSlow, lr.Label, "%s (rank %d) computes a step in %.1f ms, the run's other ranks in %.1f ms (limit %.1f×)",
						lr.Label, r, med[r], m, j.Settings.SlowFactor), true
				}
			}
		}
	}
	limit, key := j.maxStep(o)
	if limit > 0 {
		if ms := medianStep(o); ms > limit {
			if j.Alone {
				return fail(ReasonModelStepSlow, "", "a step takes %.1f ms, above %s's %.0f ms", ms, key, limit), true
			}
			return unknown(ReasonModelStepSlow, "a step of the whole run takes %.1f ms, above %s's %.0f ms, and no rank stands out", ms, key, limit), true
		}
	}
	return verdict{}, false
}

// curve judges the mean loss: it must fall, and stay near the reference.
func (j judging) curve(o outcome) (verdict, bool) {
	var losses []float64
	for _, s := range o.Steps {
		losses = append(losses, s.Loss)
	}
	if len(losses) < 2*ReferenceEvery {
		return verdict{}, false
	}
	fifth := max(len(losses)/5, 1)
	first, last := mean(losses[:fifth]), mean(losses[len(losses)-fifth:])
	bad := func(format string, args ...any) (verdict, bool) {
		if j.Alone {
			return fail(ReasonModelLossAbnormal, "", format, args...), true
		}
		return unknown(ReasonModelLossAbnormal, format+"; the whole run's loss, no rank stands out", args...), true
	}
	if last > (1-j.Settings.MinLossDrop)*first {
		return bad("the loss did not fall: %.4f over the first %d steps, %.4f over the last %d", first, fifth, last, fifth)
	}
	pts := curvePoints(losses)
	for i, want := range j.Reference {
		if i >= len(pts) {
			break
		}
		if d := math.Abs(pts[i]-want) / want; d > j.Settings.LossTolerance {
			return bad("loss %.4f at step %d, %s %.4f (%.0f%% off, tolerance %.0f%%)",
				pts[i], (i+1)*ReferenceEvery, j.RefName, want, 100*d, 100*j.Settings.LossTolerance)
		}
	}
	return verdict{}, false
}

// curvePoints are the loss curve as references hold it: the mean loss of
// the ReferenceEvery steps up to each ReferenceEvery-th step.
func curvePoints(losses []float64) []float64 {
	var out []float64
	for end := ReferenceEvery; end <= len(losses); end += ReferenceEvery {
		out = append(out, mean(losses[end-ReferenceEvery:end]))
	}
	return out
}

// maxStep is the model's step floor for the devices of the run (the
// thresholds' key that matched; 0 when none did).
func (j judging) maxStep(o outcome) (float64, string) {
	for _, r := range o.Ranks {
		if r.Name != "" {
			v, key, _ := j.Settings.Thresholds.Lookup(r.Name, StepMetric)
			return v, key
		}
	}
	return 0, ""
}

// summary is a passing run's message.
func (j judging) summary(o outcome) string {
	msg := fmt.Sprintf("%d steps on %d ranks, loss %.3f → %.3f", len(o.Steps), worldOf(o), firstLoss(o), lastLoss(o))
	if j.Reference != nil {
		pts := curvePoints(losses(o))
		if n := min(len(pts), len(j.Reference)); n > 0 {
			msg += fmt.Sprintf(" (%s %.3f)", j.RefName, j.Reference[n-1])
		}
	} else {
		msg += " (no reference curve for this model, dtype and device: falling and finite only)"
	}
	msg += fmt.Sprintf(", %.1f ms per step", medianStep(o))
	if rate := rate(o); rate > 0 {
		msg += fmt.Sprintf(", %.0f %s", rate, j.Unit)
	}
	return msg
}

// values are a run's readings for the report and the textfile.
func (j judging) values(o outcome) []benchmarks.Value {
	var out []benchmarks.Value
	if ms := medianStep(o); ms > 0 {
		v := benchmarks.Value{Name: StepMetric, Value: ms, Unit: "ms", Op: "<=", Status: benchmarks.StatusPass}
		if limit, _ := j.maxStep(o); limit > 0 {
			v.Threshold = &limit
			if ms > limit {
				v.Status = benchmarks.StatusFail
			}
		}
		out = append(out, v)
	}
	if r := rate(o); r > 0 {
		name := strings.ReplaceAll(strings.TrimSuffix(j.Unit, "/s"), " ", "_") + "_per_s"
		out = append(out, benchmarks.Value{Name: name, Value: r, Unit: j.Unit, Status: benchmarks.StatusPass})
	}
	if l := lastLoss(o); !math.IsNaN(l) {
		out = append(out, benchmarks.Value{Name: "final_loss", Value: l, Status: benchmarks.StatusPass})
	}
	for _, r := range o.Ranks {
		if len(r.ComputeMS) > warmup {
			out = append(out, benchmarks.Value{Device: r.Label, Name: "compute_ms", Value: stats.Median(r.ComputeMS[warmup:]),
				Unit: "ms", Status: benchmarks.StatusPass})
		}
	}
	for i, p := range curvePoints(losses(o)) {
		out = append(out, benchmarks.Value{Name: "loss_step_" + strconv.Itoa((i+1)*ReferenceEvery), Value: p, Status: benchmarks.StatusPass})
	}
	return out
}

// rankMedians are every rank's median compute time after the warm-up, as
// the gathered step lines report them, indexed by global rank.
func rankMedians(o outcome) []float64 {
	var per [][]float64
	for i, s := range o.Steps {
		if i < warmup {
			continue
		}
		for r, ms := range s.Computes {
			for len(per) <= r {
				per = append(per, nil)
			}
			per[r] = append(per[r], ms)
		}
	}
	out := make([]float64, len(per))
	for r, v := range per {
		out[r] = stats.Median(v)
	}
	return out
}

func medianStep(o outcome) float64 {
	var ms []float64
	for i, s := range o.Steps {
		if i >= warmup {
			ms = append(ms, s.MS)
		}
	}
	if len(ms) == 0 {
		return 0
	}
	return stats.Median(ms)
}

func losses(o outcome) []float64 {
	out := make([]float64, 0, len(o.Steps))
	for _, s := range o.Steps {
		out = append(out, s.Loss)
	}
	return out
}

func firstLoss(o outcome) float64 {
	if len(o.Steps) == 0 {
		return math.NaN()
	}
	return o.Steps[0].Loss
}

func lastLoss(o outcome) float64 {
	if len(o.Steps) == 0 {
		return math.NaN()
	}
	return o.Steps[len(o.Steps)-1].Loss
}

// rate is the items per second of the run: the sum of... each rank
// reports the whole run's rate, so the first that did.
func rate(o outcome) float64 {
	for _, r := range o.Ranks {
		if r.ItemsPerS > 0 {
			return r.ItemsPerS
		}
	}
	return 0
}

func worldOf(o outcome) int {
	if len(o.Steps) > 0 && len(o.Steps[0].Losses) > 0 {
		return len(o.Steps[0].Losses)
	}
	return len(o.Ranks)
}

func lastStep(o outcome) int {
	n := 0
	for _, r := range o.Ranks {
		n = max(n, r.Stepped)
	}
	return n
}

func allDone(o outcome) bool {
	for _, r := range o.Ranks {
		if !r.Done {
			return false
		}
	}
	return len(o.Ranks) > 0
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// lastLine is the line of a rank's standard error that says what went
// wrong: the last one (a traceback's exception), or its exit status.
func lastLine(r *rank) string {
	if len(r.Stderr) > 0 {
		return r.Stderr[len(r.Stderr)-1]
	}
	return "exit status " + strconv.Itoa(r.Exit)
}

func labels(rs []*rank) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Label)
	}
	return strings.Join(out, ", ")
}

func joinInts(v []int) string {
	var out []string
	for _, x := range v {
		out = append(out, strconv.Itoa(x))
	}
	return strings.Join(out, ", ")
}
