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
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/notify"
	"github.com/vigil-hpc/vigil/rendezvous"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// The cross-node checks (net-connect, net-bandwidth, rdma-peers,
// nccl-allreduce-multinode) are selected like
// every other check, but the runner does not run them: after the local
// checks, one cross-node phase (crossnet.Phase) runs all of them with the
// job's other prologs. docs/prolog.md ("Across nodes") has the rules.

// nodeAddresser is the part of slurm.Client that reads the job's node
// addresses in one call.
type nodeAddresser interface {
	NodeAddrs(ctx context.Context, nodes []string) (map[string]string, error)
}

// adminCommenter reads and sets a job's AdminComment: the relay of the
// cross-node phase (crossnet.Relay).
type adminCommenter interface {
	Job(ctx context.Context, id string) (slurm.JobInfo, error)
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
	info, err := j.c.Job(cctx, j.job)
	if err != nil {
		return "", err
	}
	return info.AdminComment(), nil
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

// configReader reads `scontrol show config`.
type configReader interface {
	Config(ctx context.Context) (map[string]string, error)
}

// splitCrossNode separates the cross-node checks from the rest. Where they
// cannot run (outside a prolog, outside a job, a dry run, a job on one
// node) they are not applicable, with the reason.
func (r *run) splitCrossNode(checks []benchmarks.Check) (local, cross []benchmarks.Check) {
	why := ""
	switch {
	case r.o.Mode != ModeProlog:
		why = "runs only in the prolog, with the job's other nodes"
	case r.job == nil:
		why = "runs only in a job's prolog, with the job's other nodes"
	case r.o.DryRun:
		why = "a dry run does not meet the job's other nodes"
	case len(jobNodes(r.job)) < 2:
		why = "the job has one node: no peer to check"
	}
	for _, c := range checks {
		d := benchmarks.Describe(c)
		switch {
		case d.Scope != benchmarks.ScopeCrossNode:
			local = append(local, c)
		case why != "":
			r.rep.NotApplicable = append(r.rep.NotApplicable, benchmarks.NotApplicable{Check: d.Name,
				Vendor: d.Vendor, Message: why})
		default:
			cross = append(cross, c)
		}
	}
	return local, cross
}

// jobNodes are the job's nodes, expanded in place from its node list.
func jobNodes(job *slurm.Job) []string {
	if job == nil {
		return nil
	}
	if len(job.Nodes) == 0 && job.NodeList != "" {
		job.Nodes, _ = slurm.ExpandHostlist(job.NodeList)
	}
	return job.Nodes
}

// crossNode runs the cross-node phase for checks and returns their
// results; failing are this node's failed local checks, which the phase
// counts across the job's nodes for the guard (r.jobFailing). Everything
// that keeps the phase from running makes them unknown, never a fail.
func (r *run) crossNode(ctx context.Context, checks []benchmarks.Check, failing []string) []benchmarks.Result {
	if len(checks) == 0 {
		return nil
	}
	var names []string
	var timeout time.Duration
	for _, c := range checks {
		name := benchmarks.Describe(c).Name
		names = append(names, name)
		timeout += checkTimeout(r.s.Prolog, name)
	}
	// The phase gets the checks' deadlines, inside what is left of the
	// budget (less the reserve for draining and writing the report).
	if left := runBudget(time.Until(r.deadline)); left < timeout {
		timeout = left
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, reason, err := r.phase(pctx, names)
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
		out, r.jobFailing = o.Results, o.JobFailing
		r.noteBadLinks(ctx, o)
		if m, ok := p.Auth.(rendezvous.Munge); ok {
			m.Client.Close()
		}
	}
	for _, res := range out {
		e := r.log.WithFields(logrus.Fields{"check": res.Check, "status": string(res.Status),
			"reason": res.Reason, "device": res.Device, "duration": res.Duration.String()})
		if res.Status == benchmarks.StatusFail {
			e.Warn(res.Message)
		} else {
			e.Info(res.Message)
		}
	}
	return out
}

// noteBadLinks records the job's bad links that blame nobody: in this
// node's report (those it is an end of; all of them on the coordinator),
// hence the textfile's vigil_net_bad_link, in the job's comment (with
// "passed"), and in one admin notice from the coordinator.
func (r *run) noteBadLinks(ctx context.Context, o crossnet.Outcome) {
	if len(o.BadLinks) == 0 {
		return
	}
	var names []string
	for _, l := range o.BadLinks {
		names = append(names, l.String())
		if o.Coordinator || l.A == r.rep.Node || l.B == r.rep.Node {
			r.rep.BadLinks = append(r.rep.BadLinks, report.BadLink{A: l.A, B: l.B, State: l.State})
		}
	}
	r.badLinks = names
	text := fmt.Sprintf("vigil: job %s: bad link %s; nobody was drained (link-fault: both ends work with the job's other nodes, so the path between them is at fault: check its cabling, switch ports, routes and firewalls; undecided: the measurements could not tell which end)",
		r.job.ID, strings.Join(names, ", "))
	r.log.WithField("bad_links", strings.Join(names, ", ")).Warn(text)
	if o.Coordinator && r.s.Notify.Enabled() && !r.o.DryRun {
		r.sendNotice(ctx, "bad_link", []string{crossnet.Connect}, text,
			map[string]any{"event": "bad_link", "job": r.job.ID, "node": r.rep.Node, "links": o.BadLinks})
	}
}

// checkTimeout is a check's timeout: [prolog] timeouts, else check_timeout.
func checkTimeout(p config.Prolog, name string) time.Duration {
	if d, ok := p.Timeouts[name]; ok {
		return d
	}
	return p.CheckTimeout
}

// phase prepares this node's part: the settings, PrologFlags=Alloc, the
// job's node addresses (one scontrol call) and MUNGE.
func (r *run) phase(ctx context.Context, names []string) (crossnet.Phase, string, error) {
	conn, bw := crossnet.DefaultConnect(), crossnet.DefaultBandwidth()
	for _, s := range []struct {
		name string
		v    benchmarks.Validator
	}{{crossnet.Connect, conn}, {crossnet.Bandwidth, bw}} {
		if err := benchmarks.SettingsFrom(r.s.File, s.name)(s.v); err != nil {
			return crossnet.Phase{}, benchmarks.ReasonInvalidSettings, err
		}
		if err := s.v.Validate(); err != nil {
			return crossnet.Phase{}, benchmarks.ReasonInvalidSettings, fmt.Errorf("[checks.%s] %w", s.name, err)
		}
	}
	timeouts := map[string]time.Duration{}
	for _, n := range names {
		timeouts[n] = checkTimeout(r.s.Prolog, n)
	}
	conf := r.slurmSettings(ctx)
	flags, _ := slurm.ConfValue(conf, "PrologFlags")
	if !slurm.PrologFlagsAlloc(flags) {
		return crossnet.Phase{}, crossnet.ReasonNotTogether,
			fmt.Errorf("PrologFlags=Alloc is not set (PrologFlags=%q): the job's prologs do not run together", flags)
	}
	cfg, err := rendezvous.ForJob(r.job)
	if err != nil {
		return crossnet.Phase{}, crossnet.ReasonSetup, err
	}
	addrs, err := r.nodeAddrs(ctx, cfg.Nodes)
	if err != nil {
		return crossnet.Phase{}, crossnet.ReasonSetup, fmt.Errorf("node addresses: %w", err)
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
		return crossnet.Phase{}, crossnet.ReasonNoMeeting, fmt.Errorf("MUNGE: %w", err)
	}
	var relay crossnet.Relay
	if ac, ok := r.rawSlurm().(adminCommenter); ok {
		relay = jobRelay{c: ac, job: cfg.Job, bound: r.actionCtx}
	}
	return crossnet.Phase{Job: cfg.Job, Restart: cfg.Restart, Self: cfg.Self, Nodes: cfg.Nodes, Addrs: addrs,
		Checks: names, Connect: *conn, Bandwidth: *bw, Auth: rendezvous.Munge{Client: m}, Log: r.log,
		Settings:  func(check string) func(v any) error { return benchmarks.SettingsFrom(r.s.File, check) },
		Libraries: func(check string) func(v any) error { return benchmarks.LibrariesFrom(r.s.File, check) },
		Devices:   r.job.GPUs, Timeouts: timeouts, Relay: relay}, "", nil
}

// slurmSettings reads slurm.conf as scontrol would find it (no slurmctld
// query); only when that file cannot be read does it ask slurmctld
// (`scontrol show config`), e.g. on a configless site.
func (r *run) slurmSettings(ctx context.Context) map[string]string {
	if r.slurmConf != nil {
		return r.slurmConf
	}
	path, _ := SlurmConf(r.s.Prolog, r.o.Lookup)
	if path == "" {
		path = "/etc/slurm/slurm.conf"
	}
	conf, err := slurm.ReadConfFile(path)
	if err != nil {
		r.note("reading %s: %v; asking slurmctld", path, err)
		conf = map[string]string{}
		if cr, ok := r.rawSlurm().(configReader); ok {
			cctx, cancel := r.actionCtx(ctx)
			defer cancel()
			if c, err := cr.Config(cctx); err == nil {
				conf = c
			} else {
				r.log.WithError(err).Warn("could not read Slurm's settings from slurm.conf or slurmctld")
			}
		}
	}
	r.slurmConf = conf
	return conf
}

// slurmMailProg is Slurm's MailProg (slurmSettings), else
// notify.DefaultMailProg.
func (r *run) slurmMailProg(ctx context.Context) string {
	if p, ok := slurm.MailProg(r.slurmSettings(ctx)); ok {
		return p
	}
	return notify.DefaultMailProg
}

// nodeAddrs reads the job's node addresses with one scontrol call.
func (r *run) nodeAddrs(ctx context.Context, nodes []string) (map[string]string, error) {
	na, ok := r.rawSlurm().(nodeAddresser)
	if !ok {
		return nil, fmt.Errorf("the Slurm client cannot read node addresses")
	}
	cctx, cancel := r.actionCtx(ctx)
	defer cancel()
	addrs, err := na.NodeAddrs(cctx, nodes)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if addrs[n] == "" {
			return nil, fmt.Errorf("no address for %s in scontrol's answer", n)
		}
	}
	return addrs, nil
}

// rawSlurm is the run's Slurm client without the logging wrapper: one per
// run, so that a slurmctld found unreachable once is not tried again by
// every later call (slurm.Client's latch).
func (r *run) rawSlurm() Slurm {
	if r.o.Slurm != nil {
		return r.o.Slurm
	}
	if r.raw == nil {
		r.raw = NewSlurmClient(r.s.Prolog, r.o.Lookup)
	}
	return r.raw
}
