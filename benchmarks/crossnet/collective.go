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

// ReasonNoRanks: the node brings no device to a benchmarks.CollectiveCheck (unknown).
const ReasonNoRanks = "NoDevices"

// Roles are the rank numbers of a benchmarks.CollectiveCheck: the setup, the total and
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
func CollectiveVerdicts(check string, roles Roles, results map[string]*benchmarks.Result, joined func(reason string) bool) map[string]benchmarks.PeerVerdict {
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
	out := map[string]benchmarks.PeerVerdict{}
	for n, r := range results {
		if r == nil {
			continue
		}
		v := benchmarks.PeerVerdict{Check: check, Status: r.Status, Reason: r.Reason, Message: r.Message, Device: r.Device}
		if _, takes := roles.First[n]; !takes {
			v = benchmarks.PeerVerdict{Check: check, Status: benchmarks.StatusUnknown, Reason: ReasonNoRanks,
				Message: "no device on this node: it takes no part in " + check}
		} else if v.Status == benchmarks.StatusUnknown && len(never) > 0 {
			v.Message += "; never joined: " + strings.Join(never, ", ")
		}
		out[n] = v
	}
	return out
}

// collective is a benchmarks.CollectiveCheck's phase on one node: the four rounds.
func (p Phase) collective(ctx context.Context, s *rendezvous.Session, c benchmarks.CollectiveCheck) benchmarks.Result {
	name := c.Spec().Name
	env := p.env(name)
	counts, err := s.Gather(ctx, name+"/ranks", mustJSON(c.Ranks(env)))
	if err != nil {
		return p.one(name, benchmarks.StatusUnknown, benchmarks.ReasonNoMeeting, err.Error())
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
		return p.one(name, benchmarks.StatusUnknown, benchmarks.ReasonNoMeeting, err.Error())
	}
	mine := p.one(name, benchmarks.StatusUnknown, ReasonNoRanks, "no device on this node: it takes no part")
	first, takes := roles.First[p.Self]
	switch {
	case roles.Error != "":
		mine = p.one(name, benchmarks.StatusUnknown, benchmarks.ReasonUndecided, roles.Error)
	case takes:
		rctx, cancel := runCtx(ctx, p.Timeouts[name], p.Connect.ConnectTimeout)
		mine = c.RunRanks(rctx, env, roles.Setup, first, roles.Total)
		cancel()
	}
	gctx, cancel := gatherCtx(ctx, s.Coordinator(), p.Connect.ConnectTimeout)
	defer cancel()
	got, err := s.Gather(gctx, name+"/results", mustJSON(mine))
	if err != nil {
		return p.one(name, benchmarks.StatusUnknown, benchmarks.ReasonNoMeeting, err.Error())
	}
	var per map[string][]byte
	if s.Coordinator() {
		per = p.collectiveOutcomes(name, roles, got)
	}
	b, err = s.Scatter(ctx, name+"/outcome", per)
	var v benchmarks.PeerVerdict
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		return p.one(name, benchmarks.StatusUnknown, benchmarks.ReasonNoMeeting, fmt.Sprintf("outcome: %v", err))
	}
	mine.Status, mine.Reason, mine.Message, mine.Device = v.Status, v.Reason, v.Message, v.Device
	return mine
}

// roles numbers the ranks gathered and makes the setup (coordinator).
func (p Phase) roles(c benchmarks.CollectiveCheck, env *benchmarks.Env, got map[string][]byte) Roles {
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
	joined := func(reason string) bool { return reason == benchmarks.ReasonUndecided }
	if j, ok := lookupCollective(check); ok {
		if jr, ok := j.(interface{ Joined(reason string) bool }); ok {
			joined = jr.Joined
		}
		if jj, ok := j.(benchmarks.JobJudge); ok {
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

// lookupCollective returns the registered benchmarks.CollectiveCheck of that name.
func lookupCollective(name string) (benchmarks.CollectiveCheck, bool) {
	c, ok := benchmarks.Lookup(name)
	if !ok {
		return nil, false
	}
	cc, ok := c.(benchmarks.CollectiveCheck)
	return cc, ok
}

// env is the Env a benchmarks.PeerCheck or benchmarks.CollectiveCheck of this phase gets.
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
