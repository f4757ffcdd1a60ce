package action

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/hostlist"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

// The hang action is decided before anyone is told, so that the report,
// the job's comment, the webhook and the mail say what is done to the job
// ("requeued without n3"), and carried out last: a requeue ends the job's
// steps, this watcher among them.

// plan is what the hang action does to one hang's job.
type plan struct {
	// do is what is done: ControlNone (nothing), ControlCancel,
	// ControlRequeue (a plain requeue) or ControlRequeueExclude.
	do Control
	// exclude are the culprits the job is requeued without; exclusions
	// the job's ExcNodeList: its own exclusions and exclude.
	exclude, exclusions []string
	// why says, for people, why the action asked for is not what is done
	// ("no host stands out"); "" when it is.
	why      string
	restarts int
	// notRunning: the job is no longer running (another watcher of the
	// job requeued it, or it is ending): nothing is done to it.
	notRunning bool
}

// outcome is the plan in a few words for people: "requeued without n3",
// "requeued as it is", "left running"; "" for no action.
func (p plan) outcome() string {
	switch p.do {
	case ControlRequeueExclude:
		return "requeued without " + strings.Join(p.exclude, ",")
	case ControlRequeue:
		return "requeued as it is"
	case ControlCancel:
		return "cancelled"
	}
	if p.notRunning {
		return "not requeued"
	}
	if p.why != "" {
		return "left running"
	}
	return ""
}

// action is the report's entry for the plan of the requeue-exclude action:
// "requeue-exclude: requeued without n3", or the fallback and why.
func (p plan) action() string {
	s := ControlRequeueExclude.String() + ": " + p.outcome()
	if p.why != "" {
		s += " (" + p.why + ")"
	}
	return s
}

// String is the action's name as the config spells it.
func (c Control) String() string { return string(c) }

// RequeueTimeout bounds the requeue of a job without its culprits (three
// scontrol commands). The requeue ends this watcher's step: the commands
// run on to the end whatever the watcher's context says, within
// RequeueTimeout and slurmstepd's KillWait.
var RequeueTimeout = time.Minute

// evidenceCulprits are the hosts a hung event names with evidence (the
// multi-host detector's culprits); none when it names no one (Culprits
// then falls back to the event's own host, which is no evidence).
func evidenceCulprits(ev hang.Event) []string {
	if ev.Evidence["culprits"] == nil {
		return nil
	}
	return Culprits(hang.Event{Evidence: ev.Evidence})
}

// planControl decides the hang action for the hang of ev's job that
// blames culprits, in a digest of origin ("" for a watcher's own event).
// It reads the job (its restart count, node count, partition and
// exclusions) and, for requeue-exclude, the cluster's nodes; it changes
// nothing.
func (a *Actor) planControl(ctx context.Context, log logrus.FieldLogger, ev hang.Event, culprits []string, origin string) plan {
	c := a.Control
	switch {
	case c == "" || c == ControlNone:
		return plan{do: ControlNone}
	case c == ControlCancel:
		return plan{do: ControlCancel}
	case a.Slurm == nil:
		return plan{do: c} // control says there is no client
	}
	job := a.jobID(ev)
	restarts := a.RestartCount
	info, err := a.Slurm.Job(ctx, job)
	if err == nil {
		restarts = max(restarts, info.Restarts)
	} else {
		log.WithError(err).Warn("could not read the job's restart count; using the environment's")
	}
	if restarts >= a.MaxRequeues {
		return plan{do: ControlNone, restarts: restarts,
			why: fmt.Sprintf("requeue limit reached: %d restarts, max_requeues %d", restarts, a.MaxRequeues)}
	}
	if a.KeepOwnFailures && origin == digest.OriginJob {
		return plan{do: ControlNone, restarts: restarts,
			why: "the hang looks like the job's own ([policy] requeue_own_failures = false): it would fail again on any node"}
	}
	if c != ControlRequeueExclude {
		return plan{do: c, restarts: restarts}
	}
	plain := func(format string, args ...any) plan {
		return plan{do: ControlRequeue, restarts: restarts, why: fmt.Sprintf(format, args...)}
	}
	switch {
	case origin == digest.OriginJob:
		return plain("the hang looks like the job's own: no host to leave out")
	case len(culprits) == 0:
		return plain("no host stands out")
	case err != nil:
		return plain("the job could not be read to exclude %s", strings.Join(culprits, ","))
	case info.State != "RUNNING":
		return plan{do: ControlNone, restarts: restarts, notRunning: true, why: "the job is " + info.State + ", no longer running"}
	}
	return a.planExclude(ctx, info, culprits, restarts)
}

// planExclude bounds the exclusion of culprits from the running job info:
// the job keeps its own exclusions, asks for no culprit by name, and its
// partition keeps at least the job's node count of usable nodes (not
// down, drained or excluded) without them. Else the job is requeued as it
// is: the epilog re-checks the culprits and drains those that fail, so
// that the restart avoids them then.
func (a *Actor) planExclude(ctx context.Context, info slurm.JobInfo, culprits []string, restarts int) plan {
	plain := func(format string, args ...any) plan {
		return plan{do: ControlRequeue, restarts: restarts, why: fmt.Sprintf(format, args...)}
	}
	culprits = slices.Compact(slices.Sorted(slices.Values(culprits)))
	who := strings.Join(culprits, ",")
	own, err := info.ExcludedNodes()
	if err != nil {
		return plain("its ExcNodeList %q could not be read", info.Fields["ExcNodeList"])
	}
	req, err := info.RequestedNodes()
	if err != nil {
		return plain("its ReqNodeList %q could not be read", info.Fields["ReqNodeList"])
	}
	if asked := slices.DeleteFunc(slices.Clone(culprits), func(h string) bool { return !slices.Contains(req, h) }); len(asked) > 0 {
		return plain("the job asks for %s by name", strings.Join(asked, ","))
	}
	need := info.NumNodes()
	if need == 0 {
		return plain("the job's node count is unknown")
	}
	nodes, err := a.Slurm.Nodes(ctx)
	if err != nil {
		return plain("the cluster's nodes could not be read to count those left without %s", who)
	}
	exclusions := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(own), culprits...))))
	parts := strings.Split(info.Partition, ",")
	where := "partition " + info.Partition
	inPart := func(n slurm.Node) bool {
		return slices.ContainsFunc(n.Partitions(), func(p string) bool { return slices.Contains(parts, p) })
	}
	if info.Partition == "" || !slices.ContainsFunc(nodes, inPart) {
		where, inPart = "the cluster", func(slurm.Node) bool { return true }
	}
	left := 0
	for _, n := range nodes {
		if inPart(n) && n.Usable() && !slices.Contains(exclusions, n.Name) {
			left++
		}
	}
	if left < need {
		return plain("without %s, %s has %d usable nodes for a %d-node job", who, where, left, need)
	}
	return plan{do: ControlRequeueExclude, restarts: restarts, exclude: culprits, exclusions: exclusions}
}

// requeueExclude requeues the job held, sets its ExcNodeList to p's
// exclusions and releases it: Slurm takes a new ExcNodeList for a pending
// job only, and the hold keeps the job from starting again before the
// list is in place. When the list is refused, the job is released as it
// is (a plain requeue).
func (a *Actor) requeueExclude(ctx context.Context, log logrus.FieldLogger, job string, p plan) error {
	fields := logrus.Fields{"restarts": p.restarts, "max_requeues": a.MaxRequeues,
		"exclude": strings.Join(p.exclude, ","), "exc_node_list": hostlist.Compress(p.exclusions)}
	log = log.WithFields(fields)
	if a.DryRun {
		log.Warn(fmt.Sprintf("dry run: would requeue the job without %s: scontrol requeuehold %s, scontrol update JobId=%s ExcNodeList=%s, scontrol release %s",
			strings.Join(p.exclude, ","), job, job, hostlist.Compress(p.exclusions), job))
		return nil
	}
	// The requeue signals this watcher's step: the commands after it run
	// on regardless.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RequeueTimeout)
	defer cancel()
	log.Warn(fmt.Sprintf("requeueing the hung job without %s (action = requeue-exclude)", strings.Join(p.exclude, ",")))
	if err := a.Slurm.Requeue(ctx, job, true); err != nil {
		return fmt.Errorf("requeue job %s without %s: %w", job, strings.Join(p.exclude, ","), err)
	}
	var excErr error
	if err := a.Slurm.SetJobExcludedNodes(ctx, job, p.exclusions); err != nil {
		excErr = fmt.Errorf("requeue job %s without %s: the exclusion was refused, so it is requeued as it is: %w", job, strings.Join(p.exclude, ","), err)
		log.WithError(err).Error("Slurm refused the job's new ExcNodeList; releasing the job as it is")
	}
	if err := a.Slurm.Release(ctx, job); err != nil {
		return fmt.Errorf("job %s is requeued and held: release it with scontrol release %s: %w", job, job, err)
	}
	if excErr != nil {
		return excErr
	}
	log.Warn(fmt.Sprintf("the hung job is requeued without %s", strings.Join(p.exclude, ",")))
	return nil
}
