package slurm

import (
	"context"
	"errors"
	"time"
)

// Runner runs one command with a deadline in its own process group.
type Runner interface {
	Run(ctx context.Context, argv []string) (stdout []byte, err error)
}

// Node is a node's state as scontrol reports it.
type Node struct {
	Name   string
	State  string   // base state: IDLE, ALLOCATED, MIXED, DOWN ...
	Flags  []string // DRAIN, MAINTENANCE, REBOOT_REQUESTED, POWERED_DOWN ...
	Reason string
}

// Drained reports whether the node carries a drain flag.
func (n Node) Drained() bool { return false }

// OwnedByVigil reports whether the node's reason is vigil's own ("vigil:" prefix).
func (n Node) OwnedByVigil() bool { return false }

// JobInfo is a job as `scontrol show job` reports it.
type JobInfo struct {
	ID       string
	State    string
	Reason   string
	Comment  string
	UserID   string
	NodeList string
	Restarts int
	Fields   map[string]string // every Key=Value pair as printed
}

// ReasonPrefix starts every drain reason vigil sets.
const ReasonPrefix = "vigil:"

// ErrNotOurs is returned when vigil declines to touch a node another party drained.
var ErrNotOurs = errors.New("slurm: node state set by someone else")

// Client talks to Slurm through scontrol (and scancel).
type Client struct {
	Runner  Runner        // nil: the exec runner
	BinDir  string        // where scontrol/scancel live; "" means /usr/bin
	Timeout time.Duration // per command; 0 means 30s
	Env     []string      // extra environment for the commands (SLURM_CONF=...)
}

// Node reads one node's state and reason.
func (c *Client) Node(ctx context.Context, name string) (Node, error) { return Node{}, errTODO }

// Drain drains a node with reason (ReasonPrefix is added when missing). It
// returns ErrNotOurs, changing nothing, when someone else's drain, down,
// maintenance, reboot or power-save state is set.
func (c *Client) Drain(ctx context.Context, node, reason string) error { return errTODO }

// Resume resumes a node only when it is drained with vigil's own reason. It
// reports whether it resumed the node.
func (c *Client) Resume(ctx context.Context, node string) (bool, error) { return false, errTODO }

// Job shows one job.
func (c *Client) Job(ctx context.Context, id string) (JobInfo, error) { return JobInfo{}, errTODO }

// SetJobComment replaces the job's comment.
func (c *Client) SetJobComment(ctx context.Context, id, comment string) error { return errTODO }

// Requeue requeues the job (held when hold is true).
func (c *Client) Requeue(ctx context.Context, id string, hold bool) error { return errTODO }

// Cancel cancels the job.
func (c *Client) Cancel(ctx context.Context, id string) error { return errTODO }
