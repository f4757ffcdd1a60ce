package slurm

import (
	"context"
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/slurm/hostlist"
	"slices"
	"strconv"
	"strings"
)

// Restarting a job without some nodes. Slurm takes a new ExcNodeList for a
// pending job only: for a running one, `scontrol update JobId=ID
// ExcNodeList=...` fails with "Job is no longer pending execution for job
// ID" (22.05.8 and 24.11.5 alike, on stderr, exit 1). A job requeued held
// (`scontrol requeuehold ID`) counts as pending for the update at once,
// while it still reads COMPLETING (Reason=job_requeued_in_held_state), and
// cannot start before `scontrol release ID`; its Restarts count is already
// one up. So the order that never lets the job start on an excluded node
// is: RequeueHold, SetJobExcludedNodes, Release. Once released, the job
// starts when cred_expire (AuthInfo, 120 s by default) has passed since
// the requeue and the scheduler next looks.

// ErrJobNotPending is returned when Slurm refuses a change that only a
// pending job takes ("Job is no longer pending execution").
var ErrJobNotPending = errors.New("slurm: job is not pending")

// SetJobExcludedNodes replaces the job's ExcNodeList with nodes (each one
// plain node name), with `scontrol update JobId=ID ExcNodeList=LIST`, LIST
// compressed (n[1,3]). The caller keeps the exclusions it does not mean to
// drop: this is a replacement. A running job's update is refused: an error
// wrapping ErrJobNotPending. The names are sorted and each given once.
func (c *Client) SetJobExcludedNodes(ctx context.Context, id string, nodes []string) error {
	if err := checkJobID(id); err != nil {
		return err
	}
	if len(nodes) == 0 {
		return fmt.Errorf("slurm: excluding no node from job %s: %w", id, ErrBadName)
	}
	for _, n := range nodes {
		if err := checkNodeName(n); err != nil {
			return err
		}
	}
	list := slices.Compact(slices.Sorted(slices.Values(nodes)))
	out, err := c.scontrol(ctx, "update", "JobId="+id, "ExcNodeList="+hostlist.Compress(list))
	if err != nil {
		if strings.Contains(outputOf(err, out), "no longer pending") {
			return fmt.Errorf("slurm: excluding nodes from job %s: %w (%v)", id, ErrJobNotPending, err)
		}
		return jobErr("excluding nodes from", id, err, out)
	}
	return nil
}

// Release lets a held job start again with `scontrol release ID`. Slurm
// says nothing and exits 0 for a job that is not held.
func (c *Client) Release(ctx context.Context, id string) error {
	if err := checkJobID(id); err != nil {
		return err
	}
	out, err := c.scontrol(ctx, "release", id)
	if err != nil {
		return jobErr("releasing", id, err, out)
	}
	return nil
}

// hostlistField expands a hostlist field of scontrol's output ("" and
// "(null)" are none).
func hostlistField(v string) ([]string, error) {
	if v == "" || v == "(null)" {
		return nil, nil
	}
	return hostlist.Expand(v)
}

// ExcludedNodes are the job's ExcNodeList, expanded (none for "(null)").
func (j JobInfo) ExcludedNodes() ([]string, error) { return hostlistField(j.Fields["ExcNodeList"]) }

// RequestedNodes are the job's ReqNodeList (sbatch -w), expanded (none
// for "(null)").
func (j JobInfo) RequestedNodes() ([]string, error) { return hostlistField(j.Fields["ReqNodeList"]) }

// NumNodes is the job's node count: NumNodes as printed ("4"), the least
// of a range a pending job may print ("2-4"); 0 when not printed. A job
// that is completing prints the nodes still completing (a job requeued
// held: often 1): read it while the job runs.
func (j JobInfo) NumNodes() int {
	v, _, _ := strings.Cut(j.Fields["NumNodes"], "-")
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0
	}
	return n
}

// Partitions are the partitions the node is in ("Partitions=a,b"), none
// when it is in none.
func (n Node) Partitions() []string {
	v := n.Fields["Partitions"]
	if v == "" || v == "(null)" {
		return nil
	}
	return strings.Split(v, ",")
}

// powerStates are the power saving states: such a node runs jobs again
// once Slurm powers it up for one.
var powerStates = []string{"POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN", "POWERING_UP", "POWER_UP"}

// Usable reports whether the scheduler may start a job on the node: it is
// not drained, not down, failed, rebooting, in maintenance or not
// responding (power saving is no obstacle: Slurm powers the node up).
func (n Node) Usable() bool {
	if n.Drained() || n.Is("NOT_RESPONDING") {
		return false
	}
	s := n.ForeignState()
	return s == "" || contains(powerStates, s)
}
