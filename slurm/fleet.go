package slurm

import (
	"context"
	"fmt"

	"github.com/vigil-hpc/vigil/internal/textutil"
)

// Nodes reads every node of the cluster with one `scontrol show node -o`:
// what the prolog of one node needs to see the fleet (how many nodes vigil
// drained for a check, and when), without a second source of truth.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	out, err := c.scontrol(ctx, "show", "node", "-o")
	if err != nil {
		return nil, fmt.Errorf("slurm: reading the nodes: %w", err)
	}
	nodes, err := ParseNodes(out)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("slurm: no node in scontrol output %q", textutil.Cut(string(out), 200, "..."))
	}
	return nodes, nil
}

// Comment is the node's free-text comment ("" when none).
func (n Node) Comment() string {
	v := n.Fields["Comment"]
	if v == "(null)" {
		return ""
	}
	return v
}

// SetNodeComment replaces the node's comment with
// `scontrol update NodeName=NODE Comment=COMMENT`. The comment is made one
// line (control characters become spaces, double quotes single quotes).
// The caller decides whether the comment it replaces may be replaced.
func (c *Client) SetNodeComment(ctx context.Context, node, comment string) error {
	if err := checkNodeName(node); err != nil {
		return err
	}
	comment = oneLine(comment)
	if _, err := c.scontrol(ctx, "update", "NodeName="+node, "Comment="+comment); err != nil {
		return fmt.Errorf("slurm: commenting node %s: %w", node, err)
	}
	return nil
}
