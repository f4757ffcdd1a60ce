package nvidia

import (
	"context"
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"io"
	"strings"
	"sync"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/nccl"
)

// selftestNode is one simulated node of multinodeSelftest: a share of the
// machine's GPUs, its ranks and what RunRanks reported for them.
type selftestNode struct {
	// Name is the simulated node's name ("node0", "node1", ...).
	Name string
	// Devices are its GPUs (CUDA ordinals); Devices[i] is rank FirstRank+i.
	Devices []int
	// FirstRank is the rank of its first GPU.
	FirstRank int
	// Result is its part of nccl-allreduce-multinode.
	Result benchmarks.Result
}

// selftestReport is what multinodeSelftest found.
type selftestReport struct {
	// Ranks is the size of the communicator: every simulated node's GPUs.
	Ranks int
	// Nodes are the simulated nodes, in rank order; none when the run
	// stopped before any node ran.
	Nodes []selftestNode
	// Status is the verdict; Reason and Message say why it is not pass.
	Status          benchmarks.Status
	Reason, Message string
}

// SplitDevices splits devs into k simulated nodes of consecutive devices,
// sizes differing by at most one (the first nodes get the extra ones): as
// many nodes as devices when there are fewer than k, none without devices.
// Pure.
func SplitDevices(devs []int, k int) [][]int {
	k = min(max(k, 1), len(devs))
	out := make([][]int, 0, k)
	for i, start := 0, 0; i < k; i++ {
		n := len(devs) / k
		if i < len(devs)%k {
			n++
		}
		out = append(out, devs[start:start+n:start+n])
		start += n
	}
	return out
}

// multinodeSelftest runs nccl-allreduce-multinode's cross-node path on
// one machine: its GPUs (env.Devices, nil for every GPU the driver shows,
// which honours CUDA_VISIBLE_DEVICES) split into k simulated nodes
// (SplitDevices), one communicator over all of them. As the cross-node
// phase does, it calls Setup once (ncclGetUniqueId, in this process, which
// stays alive), then every simulated node's RunRanks at once, with its own
// env.Devices and first rank; ctx's deadline bounds it all.
//
// Every simulated node is this machine, so a hang or an NCCL error, which
// the phase leaves unknown (a peer's fault reads the same), is this
// machine's own here: the verdict is fail. It is unknown only when nothing
// could run (settings, no library, no GPU) or a node could not take part.
func multinodeSelftest(ctx context.Context, env *benchmarks.Env, k int) selftestReport {
	return shippedMultinode.selftest(ctx, env, k)
}

func (c *multinode) selftest(ctx context.Context, env *benchmarks.Env, k int) selftestReport {
	devs := env.Devices
	if devs == nil {
		var r *benchmarks.Result
		if devs, r = c.visible(ctx, env); r != nil {
			return stopped(*r)
		}
	}
	if len(devs) == 0 {
		return stopped(unknown(multinodeName, device.ReasonNoDevices, "no GPU to run on"))
	}
	var setup []byte
	err := devcheck.Run(ctx, func() (err error) { setup, err = c.Setup(env); return err })
	if err != nil {
		return stopped(c.setupFailed(err))
	}
	rep := selftestReport{Ranks: len(devs)}
	for i, d := range SplitDevices(devs, k) {
		first := 0
		if i > 0 {
			last := rep.Nodes[i-1]
			first = last.FirstRank + len(last.Devices)
		}
		rep.Nodes = append(rep.Nodes, selftestNode{Name: fmt.Sprintf("node%d", i), Devices: d, FirstRank: first})
	}
	var wg sync.WaitGroup
	for i := range rep.Nodes {
		n := &rep.Nodes[i]
		nenv := *env
		nenv.Node, nenv.Devices = n.Name, n.Devices
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Result = c.RunRanks(ctx, &nenv, setup, n.FirstRank, rep.Ranks)
		}()
	}
	wg.Wait()
	rep.Status, rep.Reason, rep.Message = c.selftestVerdict(rep.Nodes)
	return rep
}

// stopped is the report of a self-test that ended before any node ran.
func stopped(r benchmarks.Result) selftestReport {
	return selftestReport{Status: r.Status, Reason: r.Reason, Message: r.Message}
}

// setupFailed turns an error of Setup (ncclGetUniqueId) into its result.
func (c *multinode) setupFailed(err error) benchmarks.Result {
	var ne *nccl.Error
	switch {
	case errors.Is(err, devcheck.ErrHung):
		return benchmarks.Result{Check: multinodeName, Status: benchmarks.StatusFail, Reason: device.ReasonMultinodeHung,
			Message: fmt.Sprintf("setup: ncclGetUniqueId did not return before the deadline (%v)", err)}
	case errors.As(err, &ne):
		return benchmarks.Result{Check: multinodeName, Status: benchmarks.StatusFail, Reason: ReasonNCCLError,
			Message: fmt.Sprintf("setup: %v", err)}
	}
	r := classify(multinodeName, err)
	r.Message = "setup: " + r.Message
	return r
}

// selftestVerdict is the verdict over the simulated nodes, named after
// the node most to blame: one that failed, else one with an NCCL error
// (the others then hang waiting for it), else one that hung (each is this
// machine's fault here); else the first unknown; else pass. Pure.
func (c *multinode) selftestVerdict(nodes []selftestNode) (benchmarks.Status, string, string) {
	blame := func(r benchmarks.Result) int {
		switch {
		case r.Status == benchmarks.StatusFail:
			return 4
		case r.Status == benchmarks.StatusUnknown && r.Reason == ReasonNCCLError:
			return 3
		case r.Status == benchmarks.StatusUnknown && c.Joined(r.Reason):
			return 2
		case r.Status == benchmarks.StatusUnknown:
			return 1
		}
		return 0
	}
	worst := -1
	for i := range nodes {
		if worst < 0 || blame(nodes[i].Result) > blame(nodes[worst].Result) {
			worst = i
		}
	}
	if worst < 0 || blame(nodes[worst].Result) == 0 {
		return benchmarks.StatusPass, "", ""
	}
	n := nodes[worst]
	st := benchmarks.StatusFail
	if blame(n.Result) == 1 {
		st = benchmarks.StatusUnknown
	}
	return st, n.Result.Reason, n.Name + ": " + n.Result.Message
}

// Write prints the report: one line per simulated node (name, GPUs,
// ranks, status and reason, busbw_gbps= and algbw_gbps=) with its message
// indented below, then the verdict line ("verdict: pass ...").
func (r selftestReport) Write(w io.Writer) {
	if len(r.Nodes) > 0 {
		fmt.Fprintf(w, "%s over %d %s as %d simulated %s of one communicator\n", multinodeName,
			r.Ranks, devcheck.Plural(r.Ranks, "GPU"), len(r.Nodes), devcheck.Plural(len(r.Nodes), "node"))
	}
	for _, n := range r.Nodes {
		gpus := make([]string, len(n.Devices))
		for i, d := range n.Devices {
			gpus[i] = devName(d)
		}
		status := string(n.Result.Status)
		if n.Result.Reason != "" {
			status += " " + n.Result.Reason
		}
		fmt.Fprintf(w, "%-6s %-24s ranks %d-%d  %s%s\n", n.Name, strings.Join(gpus, ","), n.FirstRank,
			n.FirstRank+len(n.Devices)-1, status, bandwidths(n.Result))
		fmt.Fprintf(w, "       %s\n", n.Result.Message)
	}
	switch r.Status {
	case benchmarks.StatusPass:
		fmt.Fprintf(w, "verdict: pass (%d simulated %s, %d %s)\n", len(r.Nodes), devcheck.Plural(len(r.Nodes), "node"),
			r.Ranks, devcheck.Plural(r.Ranks, "rank"))
	default:
		fmt.Fprintf(w, "verdict: %s %s: %s\n", r.Status, r.Reason, r.Message)
	}
}

// bandwidths are a result's busbw and algbw as " busbw_gbps=V algbw_gbps=V",
// those it has.
func bandwidths(r benchmarks.Result) string {
	var b strings.Builder
	for _, name := range []string{"busbw_gbps", "algbw_gbps"} {
		for _, v := range r.Values {
			if v.Name == name && v.Device == "" {
				fmt.Fprintf(&b, " %s=%g", name, v.Value)
			}
		}
	}
	return b.String()
}
