package crossnet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/rendezvous"
)

// Collective is a cross-node check that runs one operation over the
// devices of all the job's nodes (nccl-allreduce-multinode). It is
// registered like every other check (CrossNode true) by the package of
// its vendor, and the phase drives it in four rounds after the links:
//
//  1. each node says how many ranks it brings (Ranks; 0: it takes no part);
//  2. the coordinator numbers the ranks in sorted node order (Roles), calls
//     Setup once and broadcasts the setup, the total and each node's first
//     rank;
//  3. each node with ranks runs its part (RunRanks) within its deadline;
//  4. the coordinator gathers the results, and each node's verdict is its
//     own result, told which peers never joined (CollectiveVerdicts).
//
// Setup and RunRanks are called in the prolog process itself, not in a checker
// child: NCCL starts its bootstrap inside the process that makes the id,
// and that process must stay alive until every rank has joined. The
// coordinator's prolog lives through all four rounds, and runs its own
// ranks (rank 0 when it has GPUs) in the same process.
type Collective interface {
	benchmarks.Check
	// Ranks is how many ranks this node brings (its GPUs); 0 when none.
	Ranks(env *benchmarks.Env) int
	// Setup makes what every rank needs to meet (NCCL's unique id). It is
	// called once, on the coordinator, in the process that stays alive.
	Setup(env *benchmarks.Env) ([]byte, error)
	// RunRanks runs this node's ranks first .. first+Ranks-1 of total within
	// ctx's deadline.
	RunRanks(ctx context.Context, env *benchmarks.Env, setup []byte, first, total int) benchmarks.Result
}

// JobJudge is implemented by a Collective that judges the nodes' results
// together before each node gets its own (on the coordinator): a failure
// every node reports alike may say more about the run than about any node.
// JudgeJob may change the results in place (node → result).
type JobJudge interface {
	JudgeJob(results map[string]*benchmarks.Result)
}

// ReasonNoRanks: the node brings no device to a Collective (unknown).
const ReasonNoRanks = "NoDevices"

// Roles are the rank numbers of a Collective: the setup, the total and
// each taking node's first rank.
type Roles struct {
	Setup []byte         `json:"setup,omitempty"`
	Total int            `json:"total"`
	First map[string]int `json:"first"`
	// Error says why there is no collective (Setup failed, under 2 ranks).
	Error string `json:"error,omitempty"`
}

// AssignRanks numbers the ranks of the nodes (in sorted order) from their
// counts (node → ranks): a node's first rank is the sum of the counts of
// the nodes before it. Nodes without ranks get none. Pure.
func AssignRanks(counts map[string]int) Roles {
	nodes := make([]string, 0, len(counts))
	for n := range counts {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	r := Roles{First: map[string]int{}}
	for _, n := range nodes {
		if counts[n] > 0 {
			r.First[n] = r.Total
			r.Total += counts[n]
		}
	}
	return r
}

// CollectiveVerdicts turns the results gathered (node → result; a node
// with ranks and no result never answered) into each taking node's
// verdict: its own result, and when it is unknown, the peers that never
// joined named in its message. A peer never joined when its result is
// missing or unknown before the collective started (any reason but
// hung, NCCL error or the collective's own), named with that reason.
// Nodes without ranks are unknown (ReasonNoRanks). Pure.
func CollectiveVerdicts(check string, roles Roles, results map[string]*benchmarks.Result, joined func(reason string) bool) map[string]Verdict {
	var never []string
	for n := range roles.First {
		switch r := results[n]; {
		case r == nil:
			never = append(never, n+" (no result)")
		case r.Status == benchmarks.StatusUnknown && !joined(r.Reason):
			never = append(never, n+" ("+r.Reason+")")
		}
	}
	slices.Sort(never)
	out := map[string]Verdict{}
	for n, r := range results {
		if r == nil {
			continue
		}
		v := Verdict{Check: check, Status: r.Status, Reason: r.Reason, Message: r.Message, Device: r.Device}
		if _, takes := roles.First[n]; !takes {
			v = Verdict{Check: check, Status: benchmarks.StatusUnknown, Reason: ReasonNoRanks,
				Message: "no device on this node: it takes no part in " + check}
		} else if v.Status == benchmarks.StatusUnknown && len(never) > 0 {
			v.Message += "; never joined: " + strings.Join(never, ", ")
		}
		out[n] = v
	}
	return out
}

// collective is a Collective's phase on one node: the four rounds.
func (p Phase) collective(ctx context.Context, s *rendezvous.Session, c Collective) benchmarks.Result {
	name := c.Spec().Name
	env := p.env(name)
	counts, err := s.Gather(ctx, name+"/ranks", mustJSON(c.Ranks(env)))
	if err != nil {
		return p.one(name, benchmarks.StatusUnknown, ReasonNoMeeting, err.Error())
	}
	var roles Roles
	if s.Coordinator() {
		roles = p.roles(c, env, counts)
	}
	b, err := s.Broadcast(ctx, name+"/roles", mustJSON(roles))
	if err == nil {
		err = json.Unmarshal(b, &roles)
	}
	if err != nil {
		return p.one(name, benchmarks.StatusUnknown, ReasonNoMeeting, err.Error())
	}
	mine := p.one(name, benchmarks.StatusUnknown, ReasonNoRanks, "no device on this node: it takes no part")
	first, takes := roles.First[p.Self]
	switch {
	case roles.Error != "":
		mine = p.one(name, benchmarks.StatusUnknown, ReasonUndecided, roles.Error)
	case takes:
		rctx, cancel := runCtx(ctx, p.Timeouts[name], p.Connect.ConnectTimeout)
		mine = c.RunRanks(rctx, env, roles.Setup, first, roles.Total)
		cancel()
	}
	gctx, cancel := gatherCtx(ctx, s.Coordinator(), p.Connect.ConnectTimeout)
	defer cancel()
	got, err := s.Gather(gctx, name+"/results", mustJSON(mine))
	if err != nil {
		return p.one(name, benchmarks.StatusUnknown, ReasonNoMeeting, err.Error())
	}
	var per map[string][]byte
	if s.Coordinator() {
		per = p.collectiveOutcomes(name, roles, got)
	}
	b, err = s.Scatter(ctx, name+"/outcome", per)
	var v Verdict
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		return p.one(name, benchmarks.StatusUnknown, ReasonNoMeeting, fmt.Sprintf("outcome: %v", err))
	}
	mine.Status, mine.Reason, mine.Message, mine.Device = v.Status, v.Reason, v.Message, v.Device
	return mine
}

// roles numbers the ranks gathered and makes the setup (coordinator).
func (p Phase) roles(c Collective, env *benchmarks.Env, got map[string][]byte) Roles {
	name := c.Spec().Name
	counts := map[string]int{}
	for n, b := range got {
		var k int
		if json.Unmarshal(b, &k) == nil && k > 0 && k < 1<<16 {
			counts[n] = k
		}
	}
	roles := AssignRanks(counts)
	if roles.Total < 2 {
		roles.Error = fmt.Sprintf("%d devices over the job's nodes: %s needs 2 or more", roles.Total, name)
		return roles
	}
	setup, err := c.Setup(env)
	if err != nil {
		roles.Error = fmt.Sprintf("setup on the coordinator: %v", err)
		return roles
	}
	roles.Setup = setup
	p.Log.WithFields(logrus.Fields{"check": name, "ranks": roles.Total, "nodes": len(roles.First)}).Info("cross-node collective")
	return roles
}

// collectiveOutcomes decodes the results and gives each node its verdict.
func (p Phase) collectiveOutcomes(check string, roles Roles, got map[string][]byte) map[string][]byte {
	results := map[string]*benchmarks.Result{}
	for n, b := range got {
		var r benchmarks.Result
		if json.Unmarshal(b, &r) == nil {
			results[n] = &r
		}
	}
	joined := func(reason string) bool { return reason == ReasonUndecided }
	if j, ok := lookupCollective(check); ok {
		if jr, ok := j.(interface{ Joined(reason string) bool }); ok {
			joined = jr.Joined
		}
		if jj, ok := j.(JobJudge); ok {
			jj.JudgeJob(results)
		}
	}
	per := map[string][]byte{}
	for n, v := range CollectiveVerdicts(check, roles, results, joined) {
		per[n] = mustJSON(v)
	}
	return per
}

// runCtx bounds a node's part: the check's timeout (0: none), and ends it
// early enough that the results still reach the coordinator before it
// stops gathering (twice its margin before the phase's deadline).
func runCtx(ctx context.Context, timeout, margin time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		m := min(margin+time.Second, time.Until(dl)/4)
		ctx, cancel := context.WithDeadline(ctx, dl.Add(-2*m))
		if timeout <= 0 {
			return ctx, cancel
		}
		tctx, cancel2 := context.WithTimeout(ctx, timeout)
		return tctx, func() { cancel2(); cancel() }
	}
	if timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}

// lookupCollective returns the registered Collective of that name.
func lookupCollective(name string) (Collective, bool) {
	c, ok := benchmarks.Lookup(name)
	if !ok {
		return nil, false
	}
	cc, ok := c.(Collective)
	return cc, ok
}

// env is the Env a PeerCheck or Collective of this phase gets.
func (p Phase) env(check string) *benchmarks.Env {
	e := &benchmarks.Env{Node: p.Self, Addr: p.Addrs[p.Self], JobID: p.Job, Devices: p.Devices}
	if p.Settings != nil {
		e.Settings = p.Settings(check)
	}
	if p.Libraries != nil {
		e.Libraries = p.Libraries(check)
	}
	return e
}

// one is a result of one check.
func (p Phase) one(check string, st benchmarks.Status, reason, msg string) benchmarks.Result {
	return benchmarks.Result{Check: check, Status: st, Reason: reason, Message: msg}
}
