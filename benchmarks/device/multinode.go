package device

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// Reasons the multi-node all-reduce checks of every vendor use alike
// (nccl-allreduce-multinode, hccl-allreduce-multinode).
const (
	// ReasonNeedsJobNodes: the check was run alone; it runs in the
	// prolog's cross-node phase (unknown).
	ReasonNeedsJobNodes = "NeedsJobNodes"
	// ReasonMultinodeHung: the communicator did not form, or an all-reduce
	// did not finish, before the deadline (unknown: a node that never
	// joined is as likely as this one; the cross-node phase compares).
	ReasonMultinodeHung = "MultinodeHung"
	// ReasonInvalidRole: the rank assignment handed to the node does not
	// fit its devices (unknown).
	ReasonInvalidRole = "InvalidRole"
	// ReasonCollectiveWrongResult: the all-reduce across nodes delivered
	// wrong data (fail, as this node's view).
	ReasonCollectiveWrongResult = "CollectiveWrongResult"
	// ReasonMultinodeBelowThreshold: the bus bandwidth over the job's
	// devices is below the model's floor (fail, as this node's view).
	ReasonMultinodeBelowThreshold = "AllReduceBelowThreshold"
)

// MultinodeReasons are the tokens every vendor's multi-node all-reduce
// gives, for the vendor check's Reasons.
func MultinodeReasons() []string {
	return []string{ReasonNeedsJobNodes, ReasonMultinodeHung, ReasonInvalidRole, ReasonCollectiveWrongResult,
		ReasonMultinodeBelowThreshold}
}

// NeedsJobNodesMessage is the message of a multi-node check run alone.
const NeedsJobNodesMessage = "needs the job's other nodes: runs in the prolog's cross-node phase"

// MultinodeCheck is the registered face of a vendor's multi-node
// all-reduce (nccl-allreduce-multinode, hccl-allreduce-multinode): a
// performance check, isolated, off by default (alone on one node it can
// only say that it needs the others), run only by the prolog's cross-node
// phase (a benchmarks.CollectiveCheck); run alone it says that it needs the job's
// other nodes. The vendor's check embeds it and adds the phase's hooks.
type MultinodeCheck struct{ desc benchmarks.Descriptor }

// NewMultinodeCheck returns the face d describes: its name, vendor,
// description, settings and reasons.
func NewMultinodeCheck(d benchmarks.Descriptor) MultinodeCheck {
	d.Kind, d.Isolated, d.Scope, d.Default = benchmarks.KindPerf, true, benchmarks.ScopeCrossNode, false
	return MultinodeCheck{desc: d}
}

// Spec describes the check.
func (m MultinodeCheck) Spec() benchmarks.Descriptor { return m.desc }

// Run says that the check needs the job's other nodes.
func (m MultinodeCheck) Run(context.Context, *benchmarks.Env) benchmarks.Result {
	return benchmarks.Result{Check: m.desc.Name, Status: benchmarks.StatusUnknown, Reason: ReasonNeedsJobNodes, Message: NeedsJobNodesMessage}
}

// MultinodeRole is one node's part in a communicator spanning the job's
// nodes, as the cross-node phase hands it out: the same for every vendor.
type MultinodeRole struct {
	// ID names the communicator, made once on one node: NCCL's
	// ncclUniqueId (128 bytes), HCCL's HcclRootInfo (4108 bytes). Opaque.
	ID []byte `json:"id"`
	// NRanks is the number of devices over all the job's nodes.
	NRanks int `json:"nranks"`
	// FirstRank is the rank of this node's first device; its devices (the
	// job's, Env.Devices, in order) are FirstRank, FirstRank+1, ...
	FirstRank int `json:"first_rank"`
}

// Check says what is wrong with the role for a node of k devices (noun:
// "GPU", "NPU") and a library whose ids are idBytes long ("" when fine).
func (r MultinodeRole) Check(k, idBytes int, noun string) string {
	switch {
	case r.NRanks < 2:
		return fmt.Sprintf("%d ranks in all: an all-reduce needs at least 2", r.NRanks)
	case r.FirstRank < 0 || r.FirstRank+k > r.NRanks:
		return fmt.Sprintf("ranks %d-%d for this node's %d %s do not fit in %d", r.FirstRank, r.FirstRank+k-1, k, devcheck.Plural(k, noun), r.NRanks)
	case allZero(r.ID):
		return "no communicator id"
	case len(r.ID) != idBytes:
		return fmt.Sprintf("communicator id of %d bytes, want %d", len(r.ID), idBytes)
	}
	return ""
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// MultinodeInput is this node's part of the all-reduces over a
// communicator spanning the job's nodes.
type MultinodeInput struct {
	// ID names the communicator (MultinodeRole.ID).
	ID []byte
	// NRanks is the number of devices over all the job's nodes.
	NRanks int
	// FirstRank is the rank of Devices[0]; Devices[i] is FirstRank+i.
	FirstRank int
	// Devices are this node's devices.
	Devices []int
	// Count is the float32 elements of each rank's buffer.
	Count int
	// Warmup and Iters are untimed and timed all-reduces.
	Warmup, Iters int
	// Inputs, when set, are this node's per-rank send buffers of one
	// verification all-reduce run first on the same communicator (an id
	// makes one communicator only): len(Devices) slices of at most Count
	// elements; the outputs are returned.
	Inputs [][]float32
	// Phase, when set, is kept up to date with what the node is doing
	// ("init", "verification all-reduce", "timed all-reduce"), so that a
	// caller whose deadline passes can say where it hung.
	Phase *atomic.Value
}

// MultinodeOutput is what this node measured.
type MultinodeOutput struct {
	// Seconds is the mean time of one all-reduce on this node (its slowest
	// rank).
	Seconds float64
	// Outputs are the per-rank receive buffers of the verification run.
	Outputs [][]float32
	// Library is the collective library file used.
	Library string
}

// MultinodeNode is a Node that can join a communicator spanning nodes.
type MultinodeNode interface {
	AllReduceMultinode(ctx context.Context, in MultinodeInput) (MultinodeOutput, error)
}

// MultinodeInputs are the verification inputs of the global ranks
// first..first+k-1: small integers, so that sums over up to 256 ranks are
// exact in float32.
func MultinodeInputs(first, k, count int) [][]float32 {
	in := make([][]float32, k)
	for i := range in {
		in[i] = make([]float32, count)
		for e := range in[i] {
			in[i][e] = multinodeValue(first+i, e)
		}
	}
	return in
}

func multinodeValue(rank, e int) float32 { return float32((e*7 + rank*13 + 1) % 61) }

// VerifyMultinode compares every output with the exact sum over all ranks;
// names name this node's devices. It says what is wrong ("" when all is
// right).
func VerifyMultinode(outs [][]float32, role MultinodeRole, names []string) string {
	if len(outs) != len(names) {
		return fmt.Sprintf("%d verification outputs for %d devices", len(outs), len(names))
	}
	for e := range outs[0] {
		var want float32
		for r := 0; r < role.NRanks; r++ {
			want += multinodeValue(r, e)
		}
		for i, o := range outs {
			if o[e] != want {
				return fmt.Sprintf("all-reduce across nodes delivered wrong data: %s (rank %d) element %d = %g, want %g",
					names[i], role.FirstRank+i, e, o[e], want)
			}
		}
	}
	return ""
}

// EvaluateMultinode records algbw and busbw (nccl-tests: busbw = algbw ×
// 2(n−1)/n over all n ranks) of count float32 elements per rank in
// seconds, compares busbw with the floor of model in th, and returns busbw;
// noun names the devices in the label ("GPUs").
func EvaluateMultinode(t *devcheck.Tally, th Thresholds, nranks, count int, seconds float64, model, noun string) float64 {
	alg := devcheck.AlgBW(devcheck.SizeBytes(AllReduce, count, nranks), seconds)
	bus := alg * devcheck.BusFactor(AllReduce, nranks)
	t.Value("", "algbw_gbps", devcheck.Round(alg), "GB/s", nil, "", benchmarks.StatusPass)
	m := devcheck.Metric{Name: "busbw_gbps", Key: "busbw_gbps", Unit: "GB/s",
		Label: fmt.Sprintf("all-reduce bus bandwidth over %d %s of the job", nranks, noun)}
	vals, fs := devcheck.Evaluate(m, []devcheck.Reading{{Device: "", Model: model, Value: bus}}, th, Peers{})
	t.Values = append(t.Values, vals...)
	for _, f := range fs {
		t.Fail(f.Device, f.Reason(devcheck.Tokens{Limit: ReasonMultinodeBelowThreshold}), "%s", f.Message)
	}
	return bus
}
