package ascend

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/hccl"
)

// multinodeName is the registered name of the multi-node HCCL all-reduce.
const multinodeName = "hccl-allreduce-multinode"

// Reasons of hccl-allreduce-multinode beside those of every vendor's
// (device.MultinodeReasons: the tokens of nccl-allreduce-multinode too, so
// that the cross-node phase reads both vendors alike).
const (
	// ReasonHCCLError: an HCCL call failed (unknown: a remote rank's
	// fault, a link failure anywhere in the job, reads the same here).
	ReasonHCCLError = "HCCLError"
)

// multinodeSettings are the settings of [checks.hccl-allreduce-multinode]:
// the library keys and those of every collective check (bytes,
// verify_bytes, warmup, iters, thresholds: model → "busbw_gbps").
type multinodeSettings struct {
	Libraries
	device.CollectiveSettings
}

// multinodeThresholds are the shipped floors: none. Bus bandwidth across
// nodes depends on the fabric (RoCE ports per NPU, their rate, the
// switches) as much as on the NPU; set
// [checks.hccl-allreduce-multinode.thresholds.MODEL].
var multinodeThresholds = device.Thresholds{}

// multinode is hccl-allreduce-multinode: registered so that it has
// settings, a description and a place in reports; it runs only through
// the cross-node phase (Setup, RunRanks).
type multinode struct {
	device.MultinodeCheck
	cann *cann
}

var shippedMultinode = &multinode{MultinodeCheck: device.NewMultinodeCheck(benchmarks.Descriptor{
	Name: multinodeName, Vendor: benchmarks.VendorAscend,
	Description: "HCCL all-reduce bus bandwidth over all NPUs of all the job's nodes, verified",
	Settings:    func() any { return defaultMultinodeSettings() },
	// Its own reasons, the vendor's and the cross-node phase's.
	Reasons: slices.Concat([]string{ReasonHCCLError}, device.MultinodeReasons(), ascendNPUs.Reasons, benchmarks.CrossNodeReasons()),
}), cann: sharedCANN}

func init() { benchmarks.Register(shippedMultinode) }

// defaultMultinodeSettings returns the shipped settings: 256 MiB per rank,
// 20 timed after 5 untimed, verified on 1 MiB.
func defaultMultinodeSettings() *multinodeSettings {
	s := multinodeSettings{CollectiveSettings: device.DefaultCollectiveSettings(multinodeThresholds)}
	s.VerifyBytes = 1 << 20
	return &s
}

func (c *multinode) unknown(reason, format string, args ...any) benchmarks.Result {
	return benchmarks.Result{Check: multinodeName, Status: benchmarks.StatusUnknown, Reason: reason, Message: fmt.Sprintf(format, args...)}
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

// newRootInfo makes the HcclRootInfo (HcclGetRootInfo, 4108 bytes) of a
// communicator spanning the job's nodes, with CANN found as
// [vendor.ascend] in env says, on the job's first NPU
// (env.Devices[0], or 0). The coordinator's node calls it once and hands
// the bytes out as MultinodeRole.ID.
//
// HCCL starts the communicator's root (its topology server, on the host
// address HCCL_IF_IP or HCCL_SOCKET_IFNAME selects) in the calling process,
// and every rank connects to it there: the process that calls newRootInfo
// must stay alive until every rank has joined; best, it is the one that
// then runs rank 0. ACL stays initialised and the
// device stays set, as the root may need them.
func (c *multinode) newRootInfo(env *benchmarks.Env) ([]byte, error) {
	_, libs, err := c.settings(env)
	if err != nil {
		return nil, err
	}
	rt, err := c.cann.runtime(libs)
	if err != nil {
		return nil, err
	}
	hc, err := c.cann.hccl(libs)
	if err != nil {
		return nil, err
	}
	dev := 0
	if d := devcheck.EnvDevices(env); len(d) > 0 {
		dev = d[0]
	}
	// HcclGetRootInfo reads the device current on the calling thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := rt.SetDevice(dev); err != nil {
		return nil, err
	}
	info, err := hc.GetRootInfo()
	if err != nil {
		return nil, err
	}
	return info[:], nil
}

// run runs this node's part of hccl-allreduce-multinode: its NPUs
// (env.Devices, nil for all) join the communicator role names as ranks
// FirstRank, FirstRank+1, ... (HcclCommInitRootInfo, one thread per NPU,
// all at once), verify one all-reduce exactly, then time warmup + iters
// all-reduces of bytes per rank. busbw = algbw × 2(n−1)/n over all n ranks
// (nccl-tests), compared with the model's floor.
//
// Every node of the communicator measures about the same figure, so a
// result about the whole communicator is not evidence against this node:
// a hang (the communicator never formed, or an all-reduce never finished:
// the message says which) and an HCCL error are unknown; a floor missed or
// wrong data fail as the node's view, and the cross-node phase decides
// whom to act on. Only an ACL fault of this node's NPUs is the node's own.
// ctx's deadline bounds it all; the communicators are destroyed when it
// passes.
func (c *multinode) run(ctx context.Context, env *benchmarks.Env, role device.MultinodeRole) benchmarks.Result {
	s, libs, err := c.settings(env)
	if err != nil {
		return devcheck.BadSettings(multinodeName, err)
	}
	var node device.Node
	err = devcheck.Run(ctx, func() (err error) {
		node, err = openACL(c.cann, libs, devcheck.EnvDevices(env))
		return err
	})
	if err != nil {
		st, reason := classify(err)
		return benchmarks.Result{Check: multinodeName, Status: st, Reason: reason, Message: err.Error()}
	}
	defer node.Close()
	mn, ok := node.(device.MultinodeNode)
	if !ok {
		return c.unknown(device.ReasonCheckerError, "this node cannot join a communicator across nodes")
	}
	devs := node.Devices()
	idx, names := make([]int, len(devs)), make([]string, len(devs))
	for i, d := range devs {
		idx[i], names[i] = d.Index, devName(d.Index)
	}
	if msg := role.Check(len(idx), hccl.RootInfoBytes, "NPU"); msg != "" {
		return c.unknown(device.ReasonInvalidRole, "%s", msg)
	}
	var phase atomic.Value
	phase.Store("open")
	vcount := max(1, min(s.VerifyBytes, s.Bytes)/4)
	in := device.MultinodeInput{ID: role.ID, NRanks: role.NRanks, FirstRank: role.FirstRank, Devices: idx,
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
	if msg := device.VerifyMultinode(out.Outputs, role, names); msg != "" {
		t.Fail("", device.ReasonCollectiveWrongResult, "%s", msg)
		return t.Result("")
	}
	bus := device.EvaluateMultinode(t, s.Thresholds, role.NRanks, in.Count, out.Seconds, devs[0].Name, "NPUs")
	t.Note("HCCL %s", out.Library)
	return t.Result(fmt.Sprintf("all-reduce over %d NPUs of the job (ranks %d-%d here): %.4g GB/s bus bandwidth, results verified",
		role.NRanks, role.FirstRank, role.FirstRank+len(idx)-1, bus))
}

// failed turns the error of the measurement into the result.
func (c *multinode) failed(err error, phase string, role device.MultinodeRole) benchmarks.Result {
	var he *hccl.Error
	switch {
	case errors.Is(err, devcheck.ErrHung):
		return c.unknown(device.ReasonMultinodeHung, "%s over %d ranks (ranks %d- here) did not finish before the deadline: a node of the job did not join or stalled (%v)",
			phase, role.NRanks, role.FirstRank, err)
	case errors.As(err, &he):
		return c.unknown(ReasonHCCLError, "%s: %v", phase, err)
	}
	st, reason := classify(err)
	return benchmarks.Result{Check: multinodeName, Status: st, Reason: reason, Message: fmt.Sprintf("%s: %v", phase, err)}
}
