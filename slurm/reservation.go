package slurm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-hpc/vigil/internal/textutil"
)

// ErrNoSuchReservation is returned when Slurm does not know the reservation.
var ErrNoSuchReservation = errors.New("slurm: no such reservation")

// resvKeyOrder is the print order of `scontrol show reservation -o` in
// Slurm 22.05 (slurm_sprint_reservation_info).
var resvKeyOrder = []string{
	"ReservationName", "StartTime", "EndTime", "Duration", "Nodes", "NodeCnt", "CoreCnt",
	"Features", "PartitionName", "Flags", "NodeName", "CoreIDs", "TRES", "Users", "Groups",
	"Accounts", "Licenses", "State", "BurstBuffer", "Watts", "MaxStartDelay", "Comment",
}

var resvOrder = makeOrder(resvKeyOrder)

// ReservationNodes returns the nodes of the reservation name, expanded,
// with `scontrol show reservation -o NAME`. An unknown reservation gives
// an error wrapping ErrNoSuchReservation.
func (c *Client) ReservationNodes(ctx context.Context, name string) ([]string, error) {
	if err := checkNodeName(name); err != nil {
		return nil, fmt.Errorf("%w: reservation %q", ErrBadName, name)
	}
	out, err := c.scontrol(ctx, "show", "reservation", "-o", name)
	if err != nil {
		if strings.Contains(outputOf(err, out), "not found") {
			return nil, fmt.Errorf("slurm: reservation %s: %w (%v)", name, ErrNoSuchReservation, err)
		}
		return nil, fmt.Errorf("slurm: reading reservation %s: %w", name, err)
	}
	return ParseReservationNodes(out, name)
}

// ParseReservationNodes returns the expanded Nodes of reservation name in
// `scontrol show reservation -o` output.
func ParseReservationNodes(out []byte, name string) ([]string, error) {
	for _, line := range strings.Split(string(out), "\n") {
		f := parseLine(strings.TrimRight(line, "\r"), resvOrder, map[string]bool{"Comment": true})
		if f["ReservationName"] != name {
			continue
		}
		nodes, err := hostlistField(f["Nodes"])
		if err != nil {
			return nil, fmt.Errorf("slurm: reservation %s: %w", name, err)
		}
		return nodes, nil
	}
	return nil, fmt.Errorf("slurm: reservation %s: %w in scontrol output %q", name, ErrNoSuchReservation, textutil.Cut(string(out), 200, "..."))
}
