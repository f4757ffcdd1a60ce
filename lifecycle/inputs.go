package lifecycle

import (
	"context"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/leftovers"
)

// inputs gathers what Decide needs once the checks ran, reading no more
// than the decision uses: the fleet when the guard or the notifications
// count drains (a failed check), the node's state unless the job is to be
// held, vigil's failed-drain record only for a passing run on a node
// drained by someone else, and with [repair] on and a failure what the
// ladder reads (repairView).
func (r *run) inputs(ctx context.Context) decide.Inputs {
	s := r.s
	in := decide.Inputs{Mode: r.o.Mode, Node: r.rep.Node, Components: r.rep.Components, JobChecks: r.jobChecks, DryRun: r.o.DryRun,
		Results: r.rep.Results, BudgetExpired: r.rep.BudgetExpired, JobFailing: r.jobFailing, Registered: registered,
		Rules: decide.Rules{OnBudgetExpiry: s.Prolog.OnBudgetExpiry, MaxRequeues: s.Prolog.MaxRequeues,
			JobComment: r.rep.Config.Valid && s.Prolog.JobComment, Guard: s.Guard, Notify: s.Notify.Enabled(),
			UserNotify: r.user.Choice.Any(), Repair: s.Repair}}
	if r.job != nil {
		in.Job = &decide.JobFacts{ID: r.job.ID, RestartCount: r.job.RestartCount, Devices: r.job.GPUs}
	}
	if in.HoldsJob() {
		in.Now = r.o.Now()
		return in
	}
	if len(decide.FailedChecks(in.Results)) > 0 && (in.Rules.Guard.MaxShare > 0 || in.Rules.Notify) {
		if in.DryRun && in.Rules.Guard.MaxShare > 0 {
			r.notes.add("the guard ([guard]) was not consulted: dry runs do not query Slurm")
		}
		in.Slurm.Fleet = r.sl.ReadFleet(ctx)
	}
	in.Now = r.o.Now()
	if in.Rules.Repair.Enabled && len(decide.FailedChecks(in.Results)) > 0 {
		in.Repair = r.repairView(ctx, in)
	}
	cli := r.sl.Client()
	if cli == nil {
		return in
	}
	cctx, cancel := r.sl.Bound(ctx)
	defer cancel()
	n, err := cli.Node(cctx, r.rep.Node)
	if err != nil {
		in.Slurm.NodeErr = err
		return in
	}
	in.Slurm.Node = &n
	if in.MayLiftPrologError() {
		if fd, ok := failedDrains(stateDir(r.o), r.notes).read()[r.rep.Node]; ok {
			in.Slurm.FailedDrain = &fd
		}
	}
	return in
}

// repairView reads what the repair ladder decides on: this node's remedy
// history, slurm.conf's RebootProgram, and, for a run outside any job,
// whether a process holds each failed device.
func (r *run) repairView(ctx context.Context, in decide.Inputs) decide.RepairView {
	v := decide.RepairView{History: remedies(stateDir(r.o), r.notes, r.log).read(in.Node)}
	v.RebootProgram, v.RebootKnown = r.sl.RebootProgram(ctx)
	if in.Job != nil {
		return v // no reset inside a job: nothing more to read
	}
	h := r.o.Holders
	if h == nil {
		h = leftovers.ProcFS{Root: r.o.Root}
	}
	for _, res := range in.Results {
		row, index, ok := decide.DeviceOf(res.Device)
		if res.Status != benchmarks.StatusFail || !ok {
			continue
		}
		if v.Idle == nil {
			v.Idle = map[string]bool{}
		}
		pids, err := h.Holders([]string{fmt.Sprintf("/dev/%s%d", row.DevNode, index)})
		v.Idle[res.Device] = err == nil && len(pids) == 0
		if len(pids) > 0 {
			r.notes.add("repair: %s is in use by %v: no reset", res.Device, pids)
		}
	}
	return v
}

// registered reports whether a check exists in this build.
func registered(name string) bool {
	_, ok := benchmarks.Lookup(name)
	return ok
}
