package slurm

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Rebooting a node through Slurm. `scontrol reboot` marks the node
// REBOOT_REQUESTED; slurmctld sends the reboot once the node is idle
// (DOWN+REBOOT_ISSUED, reason + " : reboot issued"), slurmd runs
// RebootProgram, and the node is back when its slurmd registers with a
// boot time after the request (else, after ResumeTimeout, it is DOWN with
// " : reboot timed out"). What state it comes back in is the request's:
//
//   - neither ASAP nor nextstate: the node's flags are kept, so a node
//     vigil drained comes back IDLE+DRAIN with vigil's reason (22.05 and
//     24.11 alike);
//   - ASAP nextstate=DOWN: DRAIN is cleared, the node stays DOWN with the
//     reason + " : reboot complete";
//   - ASAP nextstate=RESUME: DRAIN is cleared and the node is idle.
//
// slurmctld silently skips a node whose reboot is already pending.

// RebootCompleteNote is what Slurm appends to the reason of a node that
// came back DOWN from a reboot with nextstate=DOWN.
const RebootCompleteNote = "reboot complete"

// Next states of a reboot request, as scontrol spells them.
const (
	NextStateDown   = "DOWN"
	NextStateResume = "RESUME"
)

// ErrRebootPending is returned when the node has a reboot requested or
// issued already.
var ErrRebootPending = errors.New("slurm: a reboot is already pending")

// Reboot is one reboot request.
type Reboot struct {
	// ASAP drains the node in Slurm's own way until the reboot.
	ASAP bool
	// NextState is "" (keep the node's flags), NextStateDown or
	// NextStateResume.
	NextState string
	// Reason is the node's reason until it is back, passed through
	// SanitizeReason.
	Reason string
}

// Argv is the scontrol arguments of the request for node, after the
// program: reboot [ASAP] [nextstate=STATE] reason=REASON NODE.
func (r Reboot) Argv(node string) []string {
	argv := []string{"reboot"}
	if r.ASAP {
		argv = append(argv, "ASAP")
	}
	if r.NextState != "" {
		argv = append(argv, "nextstate="+r.NextState)
	}
	return append(argv, "reason="+SanitizeReason(r.Reason), node)
}

// Reboot asks Slurm to reboot node as r says. Like Drain it first reads
// the node and changes nothing when another party holds it (an error
// wrapping ErrNotOurs) or a reboot is already pending (ErrRebootPending).
// The node is then normally drained by vigil; the same race as Drain
// applies between the read and the request.
func (c *Client) Reboot(ctx context.Context, node string, r Reboot) error {
	if err := checkNodeName(node); err != nil {
		return err
	}
	if r.NextState != "" && r.NextState != NextStateDown && r.NextState != NextStateResume {
		return fmt.Errorf("slurm: rebooting %s: next state %q: want %s or %s", node, r.NextState, NextStateDown, NextStateResume)
	}
	n, err := c.Node(ctx, node)
	if err != nil {
		return fmt.Errorf("slurm: not rebooting %s: cannot read its state: %w", node, err)
	}
	if n.Is("REBOOT_REQUESTED") || n.Is("REBOOT_ISSUED") || n.Is("REBOOT") {
		return fmt.Errorf("slurm: not rebooting %s: %w (state %s)", node, ErrRebootPending, n.stateString())
	}
	if err := notOurs(n); err != nil {
		return fmt.Errorf("slurm: not rebooting %s: %w", node, err)
	}
	if _, err := c.scontrol(ctx, r.Argv(node)...); err != nil {
		return fmt.Errorf("slurm: rebooting %s: %w", node, err)
	}
	return nil
}

// RebootedDown reports whether the node came back DOWN from a reboot vigil
// asked for with nextstate=DOWN: base state DOWN, no flag at all (no
// pending reboot, drain, maintenance, power saving or missing response),
// and vigil's reason with Slurm's RebootCompleteNote. vigil may re-test
// and resume such a node as its own drain.
func (n Node) RebootedDown() bool {
	return n.State == "DOWN" && len(n.Flags) == 0 && n.OwnedByVigil() &&
		strings.Contains(n.Reason, " : "+RebootCompleteNote)
}

// HeldByOthers reports whether another party holds the node: a reason
// that is not vigil's, a state another party owns, a drain without a
// reason. Drain, Resume and Reboot change nothing on such a node.
func (n Node) HeldByOthers() bool { return notOurs(n) != nil }

// RebootProgram returns slurm.conf's RebootProgram from cfg (a parsed
// slurm.conf or `scontrol show config`) and whether one is set.
func RebootProgram(cfg map[string]string) (string, bool) {
	p, _ := ConfValue(cfg, "RebootProgram")
	p = strings.TrimSpace(p)
	return p, p != "" && p != "(null)"
}
