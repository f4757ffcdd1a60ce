package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/crossnet"
	"github.com/vigil-hpc/vigil/cgo/munge"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/notice"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
	"github.com/vigil-hpc/vigil/rendezvous"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/hostlist"
	"github.com/vigil-hpc/vigil/slurm/session"
)

// The cross-node checks (net-connect, net-bandwidth, rdma-peers,
// nccl-allreduce-multinode) are selected like
// every other check, but the runner does not run them: after the local
// checks, one cross-node phase (crossnet.Phase) runs all of them with the
// job's other prologs. docs/prolog.md ("Across nodes") has the rules.

// adminCommenter reads and sets a job's AdminComment: the relay of the
// cross-node phase (crossnet.Relay).
type adminCommenter interface {
	JobAdminComment(ctx context.Context, id string) (string, error)
	SetJobAdminComment(ctx context.Context, id, text string) error
}

// jobRelay is crossnet.Relay over the job's AdminComment, which only
// Slurm's administrators can set: a meeting's coordinator publishes its
// word there, and a node that met nobody reads it. Each call is one
// scontrol call, bounded like every other.
type jobRelay struct {
	c     adminCommenter
	job   string
	bound func(context.Context) (context.Context, context.CancelFunc)
}

func (j jobRelay) Read(ctx context.Context) (string, error) {
	cctx, cancel := j.bound(ctx)
	defer cancel()
	return j.c.JobAdminComment(cctx, j.job)
}

// Publish merges word into the AdminComment: two meetings of one job
// (a partition) may publish at once, and the later write may drop the
// other's word; the nodes it named then end unknown, never drained.
func (j jobRelay) Publish(ctx context.Context, word string) error {
	old, err := j.Read(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := j.bound(ctx)
	defer cancel()
	return j.c.SetJobAdminComment(cctx, j.job, crossnet.MergeWord(old, word))
}

// splitCrossNode separates the cross-node checks from the rest. Where they
// cannot run (outside a prolog, outside a job, a dry run, a job on one
// node) they are not applicable (na), with the reason.
func splitCrossNode(checks []benchmarks.Check, mode decide.Mode, job *slurm.Job, dryRun bool) (local, cross []benchmarks.Check, na []benchmarks.NotApplicable) {
	why := ""
	switch {
	case mode != decide.ModeProlog:
		why = "runs only in the prolog, with the job's other nodes"
	case job == nil:
		why = "runs only in a job's prolog, with the job's other nodes"
	case dryRun:
		why = "a dry run does not meet the job's other nodes"
	case len(jobNodes(job)) < 2:
		why = "the job has one node: no peer to check"
	}
	for _, c := range checks {
		d := benchmarks.Describe(c)
		switch {
		case d.Scope != benchmarks.ScopeCrossNode:
			local = append(local, c)
		case why != "":
			na = append(na, benchmarks.NotApplicable{Check: d.Name, Vendor: d.Vendor, Message: why})
		default:
			cross = append(cross, c)
		}
	}
	return local, cross, na
}

// jobNodes are the job's nodes, expanded in place from its node list.
func jobNodes(job *slurm.Job) []string {
	if job == nil {
		return nil
	}
	if len(job.Nodes) == 0 && job.NodeList != "" {
		job.Nodes, _ = hostlist.Expand(job.NodeList)
	}
	return job.Nodes
}

// crossPhase is what one run's cross-node phase needs.
type crossPhase struct {
	s        *settings.Settings
	job      *slurm.Job
	node     string
	deadline time.Time
	sl       *session.Access
	// admins sends the coordinator's bad-link notice.
	admins *notice.Admins
	log    logrus.FieldLogger
}

// crossResult is what the cross-node phase found.
type crossResult struct {
	// Results are the cross-node checks' results.
	Results []benchmarks.Result
	// JobFailing is, per check, the nodes of the job that failed it, as
	// the phase's coordinator counted them (nil without one).
	JobFailing map[string][]string
	// BadLinks are the job's bad links that blame nobody, for this node's
	// report: those it is an end of, all of them on the coordinator.
	BadLinks []report.BadLink
	// BadLinkNames are all of them ("n2-n3 (link-fault)"), for the job's
	// comment.
	BadLinkNames []string
}

// run runs the cross-node phase for checks; failing are this node's failed
// local checks, which the phase counts across the job's nodes for the
// guard (crossResult.JobFailing). Everything that keeps the phase from
// running makes them unknown, never a fail.
func (c crossPhase) run(ctx context.Context, checks []benchmarks.Check, failing []string) crossResult {
	var cr crossResult
	if len(checks) == 0 {
		return cr
	}
	var names []string
	var timeout time.Duration
	for _, ch := range checks {
		name := benchmarks.Describe(ch).Name
		names = append(names, name)
		timeout += c.s.Prolog.TimeoutOf(name)
	}
	// The phase gets the checks' deadlines, inside what is left of the
	// budget (less the reserve for draining and writing the report).
	if left := runBudget(time.Until(c.deadline)); left < timeout {
		timeout = left
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, reason, err := c.prepare(pctx, names)
	if timeout <= 0 {
		reason, err = benchmarks.ReasonBudgetExpired, fmt.Errorf("the budget ran out before the cross-node checks")
	}
	var out []benchmarks.Result
	if err != nil {
		for _, n := range names {
			out = append(out, benchmarks.Result{Check: n, Status: benchmarks.StatusUnknown, Reason: reason,
				Message: err.Error(), Attempts: 1})
		}
	} else {
		p.Failing = failing
		o := p.RunJob(pctx)
		out, cr.JobFailing = o.Results, o.JobFailing
		cr.BadLinks, cr.BadLinkNames = c.badLinks(ctx, o)
		if m, ok := p.Auth.(rendezvous.Munge); ok {
			m.Client.Close()
		}
	}
	for _, res := range out {
		e := c.log.WithFields(logrus.Fields{"check": res.Check, "status": string(res.Status),
			"reason": res.Reason, "device": res.Device, "duration": res.Duration.String()})
		if res.Status == benchmarks.StatusFail {
			e.Warn(res.Message)
		} else {
			e.Info(res.Message)
		}
	}
	cr.Results = out
	return cr
}

// badLinks returns the job's bad links that blame nobody: for this node's
// report (those it is an end of; all of them on the coordinator), hence the
// textfile's vigil_net_bad_link, and by name for the job's comment (with
// "passed"); the coordinator sends one admin notice of them.
func (c crossPhase) badLinks(ctx context.Context, o crossnet.Outcome) (mine []report.BadLink, names []string) {
	if len(o.BadLinks) == 0 {
		return nil, nil
	}
	for _, l := range o.BadLinks {
		names = append(names, l.String())
		if o.Coordinator || l.A == c.node || l.B == c.node {
			mine = append(mine, report.BadLink{A: l.A, B: l.B, State: l.State})
		}
	}
	text := fmt.Sprintf("vigil: job %s: bad link %s; nobody was drained (link-fault: both ends work with the job's other nodes, so the path between them is at fault: check its cabling, switch ports, routes and firewalls; undecided: the measurements could not tell which end)",
		c.job.ID, strings.Join(names, ", "))
	c.log.WithField("bad_links", strings.Join(names, ", ")).Warn(text)
	if o.Coordinator && c.s.Notify.Enabled() && !c.sl.DryRun {
		c.admins.Send(ctx, "bad_link", []string{crossnet.Connect}, text,
			map[string]any{"event": "bad_link", "job": c.job.ID, "node": c.node, "links": o.BadLinks})
	}
	return mine, names
}

// prepare prepares this node's part: the settings, PrologFlags=Alloc, the
// job's node addresses (one scontrol call) and MUNGE.
func (c crossPhase) prepare(ctx context.Context, names []string) (crossnet.Phase, string, error) {
	conn, bw := crossnet.DefaultConnect(), crossnet.DefaultBandwidth()
	for _, s := range []struct {
		name string
		v    benchmarks.Validator
	}{{crossnet.Connect, conn}, {crossnet.Bandwidth, bw}} {
		if err := benchmarks.SettingsFrom(c.s.File, s.name)(s.v); err != nil {
			return crossnet.Phase{}, benchmarks.ReasonInvalidSettings, err
		}
		if err := s.v.Validate(); err != nil {
			return crossnet.Phase{}, benchmarks.ReasonInvalidSettings, fmt.Errorf("[checks.%s] %w", s.name, err)
		}
	}
	timeouts := map[string]time.Duration{}
	for _, n := range names {
		timeouts[n] = c.s.Prolog.TimeoutOf(n)
	}
	conf := c.sl.Settings(ctx)
	flags, _ := slurm.ConfValue(conf, "PrologFlags")
	if !slurm.PrologFlagsAlloc(flags) {
		return crossnet.Phase{}, benchmarks.ReasonNotTogether,
			fmt.Errorf("PrologFlags=Alloc is not set (PrologFlags=%q): the job's prologs do not run together", flags)
	}
	cfg, err := rendezvous.ForJob(c.job)
	if err != nil {
		return crossnet.Phase{}, benchmarks.ReasonSetup, err
	}
	addrs, err := c.sl.NodeAddrs(ctx, cfg.Nodes)
	if err != nil {
		return crossnet.Phase{}, benchmarks.ReasonSetup, fmt.Errorf("node addresses: %w", err)
	}
	socket := conn.MungeSocket
	if socket == "" {
		info, _ := slurm.ConfValue(conf, "AuthInfo")
		if socket = slurm.AuthSocket(info); socket == "" {
			socket = crossnet.DefaultMungeSocket
		}
	}
	m, err := munge.Open(munge.Config{Socket: socket})
	if err != nil {
		return crossnet.Phase{}, benchmarks.ReasonNoMeeting, fmt.Errorf("MUNGE: %w", err)
	}
	var relay crossnet.Relay
	if ac, ok := c.sl.RawClient().(adminCommenter); ok {
		relay = jobRelay{c: ac, job: cfg.Job, bound: c.sl.Bound}
	}
	return crossnet.Phase{Job: cfg.Job, Restart: cfg.Restart, Self: cfg.Self, Nodes: cfg.Nodes, Addrs: addrs,
		Checks: names, Connect: *conn, Bandwidth: *bw, Auth: rendezvous.Munge{Client: m}, Log: c.log,
		Settings:  func(check string) func(v any) error { return benchmarks.SettingsFrom(c.s.File, check) },
		Libraries: func(check string) func(v any) error { return benchmarks.LibrariesFrom(c.s.File, check) },
		Devices:   c.job.GPUs, Timeouts: timeouts, Relay: relay}, "", nil
}
