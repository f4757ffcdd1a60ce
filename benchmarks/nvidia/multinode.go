package nvidia

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/nccl"
)

// Reasons of nccl-allreduce-multinode beside those of every vendor's
// (device.MultinodeReasons).
const (
	// ReasonNCCLError: an NCCL call failed (unknown: a remote rank's fault
	// reads the same here).
	ReasonNCCLError = "NCCLError"
)

// multinodeName is the registered name of the multi-node all-reduce.
const multinodeName = "nccl-allreduce-multinode"

// multinodeSettings are the settings of [checks.nccl-allreduce-multinode]:
// the keys of every collective check (bytes, verify_bytes, warmup, iters,
// thresholds: model → "busbw_gbps"). The libraries are [vendor.nvidia]'s.
type multinodeSettings struct {
	device.CollectiveSettings
}

// multinodeThresholds are the shipped floors: none. Inter-node bus
// bandwidth depends on the fabric (NICs per GPU, rate, SHARP) as much as
// on the GPU; set [checks.nccl-allreduce-multinode.thresholds.MODEL].
var multinodeThresholds = devcheck.Thresholds{}

// MultinodeRole is this node's part in the job's communicator, as the
// cross-node phase hands it out.
type MultinodeRole struct {
	// ID is the communicator's id (NewUniqueID on one node).
	ID nccl.UniqueID `json:"id"`
	// NRanks is the number of GPUs over all the job's nodes.
	NRanks int `json:"nranks"`
	// FirstRank is the rank of this node's first GPU; its GPUs (the job's,
	// Env.Devices, in order) are FirstRank, FirstRank+1, ...
	FirstRank int `json:"first_rank"`
}

// multinode is nccl-allreduce-multinode: registered so that it has
// settings, a description and a place in reports; it runs only through
// the cross-node phase (Setup, RunRanks).
type multinode struct {
	device.MultinodeCheck
	open Opener
}

var shippedMultinode = &multinode{MultinodeCheck: device.NewMultinodeCheck(benchmarks.Descriptor{
	Name: multinodeName, Vendor: benchmarks.VendorNVIDIA,
	Description: "NCCL all-reduce bus bandwidth over all GPUs of all the job's nodes, verified",
	Settings:    func() any { return defaultMultinodeSettings() },
	// Its own reasons, the vendor's and the cross-node phase's.
	Reasons: slices.Concat([]string{ReasonNCCLError}, device.MultinodeReasons(), nvidia.Reasons, benchmarks.CrossNodeReasons()),
}), open: OpenCUDA}

func init() { benchmarks.Register(shippedMultinode) }

// defaultMultinodeSettings returns the shipped settings: 256 MiB per rank,
// 20 timed after 5 untimed, verified on 1 MiB.
func defaultMultinodeSettings() *multinodeSettings {
	s := multinodeSettings{CollectiveSettings: device.DefaultCollectiveSettings(multinodeThresholds)}
	s.VerifyBytes = 1 << 20
	return &s
}

// settings decodes and validates the check's settings and its vendor's
// libraries.
func (c *multinode) settings(env *benchmarks.Env) (*multinodeSettings, Libraries, error) {
	s := defaultMultinodeSettings()
	if err := devcheck.DecodeThresholds(env, s, &s.Thresholds, multinodeThresholds); err != nil {
		return nil, Libraries{}, err
	}
	libs, err := libraries(env)
	if err != nil {
		return nil, Libraries{}, err
	}
	return s, libs, s.Validate()
}

// Ranks is how many ranks this node brings: the job's GPUs here
// (env.Devices), or every GPU the driver shows when that is nil; 0 when
// CUDA cannot be opened or there is no GPU.
func (c *multinode) Ranks(env *benchmarks.Env) int {
	if len(env.Devices) > 0 {
		return len(env.Devices)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	devs, _ := c.visible(ctx, env)
	return len(devs)
}

// visible lists the GPUs the driver shows (CUDA ordinals, as
// CUDA_VISIBLE_DEVICES numbers them). When there is none to use, the
// result says why: settings, no library, no GPU (unknown), a driver that
// hangs (fail).
func (c *multinode) visible(ctx context.Context, env *benchmarks.Env) ([]int, *benchmarks.Result) {
	_, libs, err := c.settings(env)
	if err != nil {
		r := unknown(multinodeName, benchmarks.ReasonInvalidSettings, "settings of [checks.%s]: %v", multinodeName, err)
		return nil, &r
	}
	node, err := openNode(ctx, c.open, libs, nil)
	if err != nil {
		r := classify(multinodeName, err)
		return nil, &r
	}
	defer node.Close()
	var idx []int
	for _, d := range node.Devices() {
		idx = append(idx, d.Index)
	}
	if len(idx) == 0 {
		r := unknown(multinodeName, device.ReasonNoDevices, "the driver shows no GPU")
		return nil, &r
	}
	return idx, nil
}

// Setup makes the communicator's id (NewUniqueID), in the calling process,
// which must stay alive until every rank has joined.
func (c *multinode) Setup(env *benchmarks.Env) ([]byte, error) {
	id, err := NewUniqueID(env)
	if err != nil {
		return nil, err
	}
	return id[:], nil
}

// RunRanks runs run as ranks first, first+1, ... of total with
// the id Setup made.
func (c *multinode) RunRanks(ctx context.Context, env *benchmarks.Env, setup []byte, first, total int) benchmarks.Result {
	var id nccl.UniqueID
	if len(setup) != len(id) {
		return unknown(multinodeName, device.ReasonInvalidRole, "communicator id of %d bytes, want %d", len(setup), len(id))
	}
	copy(id[:], setup)
	return c.run(ctx, env, MultinodeRole{ID: id, NRanks: total, FirstRank: first})
}

// Joined reports whether a node whose result is unknown for reason took
// part in the communicator (it hung or NCCL failed there) rather than
// never joining it (no library, no GPU, a bad role or settings).
func (*multinode) Joined(reason string) bool {
	return reason == device.ReasonMultinodeHung || reason == ReasonNCCLError
}

// NewUniqueID makes the id of a communicator spanning the job's nodes
// (ncclGetUniqueId), with NCCL found as [vendor.nvidia] in env says. The coordinator's node calls it once and hands it out.
//
// NCCL starts its bootstrap root in the calling process and the ranks
// connect to it there: the process that calls NewUniqueID must stay alive
// until every rank has joined; best, it is the one that then runs the
// ranks of rank 0. NCCL stays loaded.
func NewUniqueID(env *benchmarks.Env) (nccl.UniqueID, error) {
	_, libs, err := shippedMultinode.settings(env)
	if err != nil {
		return nccl.UniqueID{}, err
	}
	lib, err := nccl.Open(libs.options(libs.NCCL, "nccl"))
	if err != nil {
		return nccl.UniqueID{}, err
	}
	return lib.GetUniqueID()
}

// run runs this node's part of nccl-allreduce-multinode: its GPUs
// (env.Devices, nil for all) join the communicator role names as ranks
// FirstRank, FirstRank+1, ... (ncclGroupStart, ncclCommInitRank per GPU,
// ncclGroupEnd), verify one all-reduce exactly, then time warmup + iters
// all-reduces of bytes per rank. busbw = algbw × 2(n−1)/n over all n ranks
// (nccl-tests), compared with the model's floor.
//
// Every node of the communicator measures about the same figure, so a
// result about the whole communicator is not evidence against this node:
// a hang (the communicator never formed, or an all-reduce never finished:
// the message says which) and an NCCL error are unknown; a floor missed or
// wrong data fail as the node's view, and the cross-node phase decides whom
// to act on. Only a CUDA fault of this node's GPUs is the node's own.
// ctx's deadline bounds it all; the communicators are aborted when it passes.
func (c *multinode) run(ctx context.Context, env *benchmarks.Env, role MultinodeRole) benchmarks.Result {
	s, libs, err := c.settings(env)
	if err != nil {
		return unknown(multinodeName, benchmarks.ReasonInvalidSettings, "settings of [checks.%s]: %v", multinodeName, err)
	}
	node, err := openNode(ctx, c.open, libs, devcheck.EnvDevices(env))
	if err != nil {
		r := classify(multinodeName, err)
		return r
	}
	defer node.Close()
	mn, ok := node.(device.MultinodeNode)
	if !ok {
		return unknown(multinodeName, device.ReasonCheckerError, "this node cannot join a communicator across nodes")
	}
	devs := node.Devices()
	idx := make([]int, len(devs))
	for i, d := range devs {
		idx[i] = d.Index
	}
	if msg := role.check(len(idx)); msg != "" {
		return unknown(multinodeName, device.ReasonInvalidRole, "%s", msg)
	}
	vcount := max(1, min(s.VerifyBytes, s.Bytes)/4)
	var phase atomic.Value
	phase.Store("open")
	in := device.MultinodeInput{ID: role.ID[:], NRanks: role.NRanks, FirstRank: role.FirstRank, Devices: idx,
		Count: max(1, s.Bytes/4), Warmup: s.Warmup, Iters: s.Iters, Phase: &phase,
		Inputs: device.MultinodeInputs(role.FirstRank, len(idx), vcount)}
	var out device.MultinodeOutput
	err = devcheck.Run(ctx, func() (err error) { out, err = mn.AllReduceMultinode(ctx, in); return err })
	if err == nil && out.Seconds <= 0 {
		err = errors.New("all-reduce reported no time")
	}
	if err != nil {
		return c.failed(err, phase.Load().(string), role)
	}
	t := &devcheck.Tally{Check: multinodeName}
	if msg := verifyMultinode(out.Outputs, role, idx); msg != "" {
		t.Fail("", ReasonCollectiveWrongResult, "%s", msg)
		return t.Result("")
	}
	bus := evaluateMultinode(t, s, in, out, devs[0].Name)
	t.Note("NCCL %s", out.Library)
	return t.Result(fmt.Sprintf("all-reduce over %d GPUs of the job (ranks %d-%d here): %.4g GB/s bus bandwidth, results verified",
		role.NRanks, role.FirstRank, role.FirstRank+len(idx)-1, bus))
}

// check says what is wrong with the role for a node of k GPUs ("" when fine).
// One rank in all is a valid communicator (multinode-selftest on one GPU);
// the cross-node phase itself starts none under 2.
func (r MultinodeRole) check(k int) string {
	switch {
	case r.NRanks < 1:
		return fmt.Sprintf("%d ranks in all: a communicator needs at least 1", r.NRanks)
	case r.FirstRank < 0 || r.FirstRank+k > r.NRanks:
		return fmt.Sprintf("ranks %d-%d for this node's %d GPUs do not fit in %d", r.FirstRank, r.FirstRank+k-1, k, r.NRanks)
	case r.ID == nccl.UniqueID{}:
		return "no communicator id"
	}
	return ""
}

// failed turns the error of the measurement into the result.
func (c *multinode) failed(err error, phase string, role MultinodeRole) benchmarks.Result {
	var ne *nccl.Error
	switch {
	case errors.Is(err, devcheck.ErrHung):
		return unknown(multinodeName, device.ReasonMultinodeHung, "%s over %d ranks (ranks %d- here) did not finish before the deadline: a node of the job did not join or stalled (%v)",
			phase, role.NRanks, role.FirstRank, err)
	case errors.As(err, &ne):
		return unknown(multinodeName, ReasonNCCLError, "%s: %v", phase, err)
	}
	return classify(multinodeName, err)
}

// verifyMultinode compares every output with the exact sum over all ranks
// (device.VerifyMultinode, the check both vendors share); it says what is
// wrong ("" when all is right).
func verifyMultinode(outs [][]float32, role MultinodeRole, idx []int) string {
	names := make([]string, len(idx))
	for i, d := range idx {
		names[i] = devName(d)
	}
	return device.VerifyMultinode(outs, device.MultinodeRole{NRanks: role.NRanks, FirstRank: role.FirstRank}, names)
}

// evaluateMultinode records algbw and busbw (nccl-tests) and compares busbw
// with the model's floor; it returns busbw.
func evaluateMultinode(t *devcheck.Tally, s *multinodeSettings, in device.MultinodeInput, out device.MultinodeOutput, model string) float64 {
	alg := devcheck.AlgBW(devcheck.SizeBytes(device.AllReduce, in.Count, in.NRanks), out.Seconds)
	bus := alg * devcheck.BusFactor(device.AllReduce, in.NRanks)
	t.Value("", "algbw_gbps", devcheck.Round(alg), "GB/s", nil, "", benchmarks.StatusPass)
	if in.NRanks < 2 {
		t.Value("", "busbw_gbps", 0, "GB/s", nil, "", benchmarks.StatusPass)
		t.Note("one rank moves nothing over the bus: busbw 0, as nccl-tests reports it; no floor compared")
		return 0
	}
	m := devcheck.Metric{Name: "busbw_gbps", Key: "busbw_gbps", Unit: "GB/s",
		Label: fmt.Sprintf("all-reduce bus bandwidth over %d GPUs of the job", in.NRanks)}
	vals, fs := devcheck.Evaluate(m, []devcheck.Reading{{Device: "", Model: model, Value: bus}}, s.Thresholds, devcheck.Peers{})
	t.Values = append(t.Values, vals...)
	for _, f := range fs {
		t.Fail(f.Device, f.Reason(devcheck.Tokens{Limit: device.ReasonMultinodeBelowThreshold}), "%s", f.Message)
	}
	return bus
}

// The cross-node phase drives the check as a benchmarks.CollectiveCheck.
var _ benchmarks.CollectiveCheck = (*multinode)(nil)
