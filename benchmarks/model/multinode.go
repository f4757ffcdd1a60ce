package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// multinode is model-gpt-multinode: the GPT trained over every node of
// the job at once, in the prolog's cross-node phase (a Collective of
// benchmarks/crossnet). The rendezvous numbers the ranks (each node's
// first rank and the total); the coordinator, which holds rank 0, names
// the address and port where the ranks meet. Each node judges its own
// ranks from what every rank printed: the ranks' losses and compute
// times are gathered at each step, so a node sees whether the slow or the
// NaN rank is its own, and a node whose ranks wait in a collective for
// another node's is unknown, not failed.
type multinode struct{ *check }

var gptMultinode = multinode{newCheck(GPTMultinode, "gpt", "tokens/s",
	"the small GPT trained across all the job's nodes: loss, step time per node, hangs",
	func() Settings { return defaults(40, 16, 5*time.Minute) }, benchmarks.ScopeCrossNode)}

func init() { benchmarks.Register(gptMultinode) }

// meeting is the setup the coordinator hands every node.
type meeting struct {
	Addr string `json:"addr"`
	Port int    `json:"port"`
}

// Ranks is how many ranks this node brings: its devices (or CPU ranks).
func (m multinode) Ranks(env *benchmarks.Env) int {
	s := m.defaults()
	if env != nil && env.Settings != nil && env.Settings(&s) != nil {
		return 0
	}
	kind, count := nodeDevices()
	return len(deviceList(kind, count, env, s.Ranks))
}

// Setup names where the ranks meet: a free port on the coordinator's
// address, where its rank 0 will listen.
func (m multinode) Setup(env *benchmarks.Env) ([]byte, error) {
	if env == nil || env.Addr == "" {
		return nil, errors.New("no address of the coordinator to meet at")
	}
	if m.Ranks(env) == 0 {
		return nil, errors.New("the coordinator brings no rank, so rank 0 has no home")
	}
	port := freePort(env.Addr)
	if port == 0 {
		return nil, fmt.Errorf("no free TCP port on %s", env.Addr)
	}
	return json.Marshal(meeting{Addr: env.Addr, Port: port})
}

// RunRanks trains this node's ranks first .. of total with the others.
func (m multinode) RunRanks(ctx context.Context, env *benchmarks.Env, setup []byte, first, total int) benchmarks.Result {
	t0 := time.Now()
	res := benchmarks.Result{Check: m.spec.Name, Attempts: 1}
	var meet meeting
	if err := json.Unmarshal(setup, &meet); err != nil {
		res.Status, res.Reason, res.Message = benchmarks.StatusUnknown, ReasonModelNotStarted, "the coordinator's setup: "+err.Error()
		return res
	}
	p, v := m.prepare(ctx, env)
	if v.status == "" {
		defer p.cleanup()
		o := p.launch(first, total, meet.Addr, meet.Port).start(p.ctx)
		p.cancel()
		j := p.judging(len(p.devices) == total, "another node")
		v = j.judge(o)
		res.Values = j.values(o)
	}
	res.Status, res.Reason, res.Message, res.Device = v.status, v.reason, v.msg, v.device
	if p != nil {
		res.Message += p.usedNote()
	}
	res.Duration = time.Since(t0)
	return res
}

// Run outside the cross-node phase has no other nodes to train with.
func (m multinode) Run(context.Context, *benchmarks.Env) benchmarks.Result {
	return benchmarks.Result{Check: m.spec.Name, Status: benchmarks.StatusUnknown, Reason: ReasonModelNotStarted, Attempts: 1,
		Message: m.spec.Name + " runs only in the prolog's cross-node phase, with the job's other nodes"}
}

// Joined says which unknown results still mean the node took part: its
// ranks met the others and then waited for, or lost, a peer.
func (multinode) Joined(reason string) bool {
	return reason == ReasonModelPeerWait || reason == ReasonModelPeerLost || reason == ReasonModelUnfinished
}

// JudgeJob turns errors that every node with ranks reports alike (the
// same exception) into the run's own: unknown ModelScriptError on each,
// since a script or an environment that fails everywhere says nothing
// against any node's devices.
func (multinode) JudgeJob(results map[string]*benchmarks.Result) {
	var first string
	n := 0
	for _, r := range results {
		if r == nil || r.Reason == ReasonModelNoPyTorch || r.Reason == ReasonModelNotStarted && r.Status == benchmarks.StatusUnknown {
			continue
		}
		e, ok := errorLine(r)
		if !ok || (n > 0 && e != first) {
			return
		}
		first = e
		n++
	}
	if n < 2 {
		return
	}
	for _, r := range results {
		if _, ok := errorLine(r); ok {
			r.Status, r.Reason, r.Device = benchmarks.StatusUnknown, ReasonModelScriptError, ""
			r.Message = "every node's ranks failed alike (the script or its environment, not a device): " + first
		}
	}
}

// errorLine is the exception of a ModelError result.
func errorLine(r *benchmarks.Result) (string, bool) {
	if r == nil || r.Status != benchmarks.StatusFail || r.Reason != ReasonModelError {
		return "", false
	}
	_, after, ok := strings.Cut(r.Message, errorSep)
	return after, ok
}
