package slurm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestE2EDrainOwnership drains and resumes a node of a real cluster through
// the Client, and checks that a node an admin drained or downed is neither
// overwritten nor resumed.
func TestE2EDrainOwnership(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, testE2EDrainOwnership)
}

func testE2EDrainOwnership(t *testing.T, f slurmtest.Flavour) {
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 3, Root: f.Root})
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ours, admin, down := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	drained := func(n slurm.Node) bool { return n.Drained() }
	notDrained := func(n slurm.Node) bool { return !n.Drained() && n.State == "IDLE" }

	// sinfoReasons maps node → reason as `sinfo -R` shows them.
	sinfoReasons := func() map[string]string {
		t.Helper()
		out, err := c.Command(t, "sinfo", "-R", "-h", "-N", "-o", "%N|%E")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		m := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if n, r, ok := strings.Cut(l, "|"); ok {
				m[n] = r
			}
		}
		return m
	}

	t.Run("vigil drain shows in sinfo -R and resumes", func(t *testing.T) {
		if err := cl.Drain(ctx, ours, "GEMMBelowThreshold gpu3 412 TFLOPS"); err != nil {
			t.Fatalf("Drain: %v\n%s", err, c.Dump(""))
		}
		n := c.WaitNode(t, ours, 30*time.Second, drained)
		if !n.OwnedByVigil() || n.Reason != "vigil: GEMMBelowThreshold gpu3 412 TFLOPS" {
			t.Errorf("after Drain: node %+v, want reason %q", n, "vigil: GEMMBelowThreshold gpu3 412 TFLOPS")
		}
		if r := sinfoReasons()[ours]; r != "vigil: GEMMBelowThreshold gpu3 412 TFLOPS" {
			t.Errorf("sinfo -R reason for %s = %q, all: %v", ours, r, sinfoReasons())
		}

		resumed, err := cl.Resume(ctx, ours)
		if err != nil || !resumed {
			t.Fatalf("Resume = %v, %v; want true, nil\n%s", resumed, err, c.Dump(""))
		}
		c.WaitNode(t, ours, 30*time.Second, notDrained)
		if r, ok := sinfoReasons()[ours]; ok {
			t.Errorf("sinfo -R still lists %s: %q", ours, r)
		}

		// Nothing to resume: not an error, and reported as not resumed.
		resumed, err = cl.Resume(ctx, ours)
		if err != nil || resumed {
			t.Errorf("Resume of an idle node = %v, %v; want false, nil", resumed, err)
		}
	})

	t.Run("admin drain is neither overwritten nor resumed", func(t *testing.T) {
		if out, err := c.Command(t, "scontrol", "update", "NodeName="+admin, "State=DRAIN", "Reason=admin: bad fan"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		c.WaitNode(t, admin, 30*time.Second, drained)

		err := cl.Drain(ctx, admin, "vigil: XID 79")
		if !errors.Is(err, slurm.ErrNotOurs) {
			t.Errorf("Drain of an admin-drained node: err = %v, want ErrNotOurs", err)
		}
		resumed, err := cl.Resume(ctx, admin)
		if resumed || (err != nil && !errors.Is(err, slurm.ErrNotOurs)) {
			t.Errorf("Resume of an admin-drained node = %v, %v; want false (nil or ErrNotOurs)", resumed, err)
		}
		n, err := cl.Node(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		if !n.Drained() || n.OwnedByVigil() || n.Reason != "admin: bad fan" {
			t.Errorf("admin-drained node changed: %+v", n)
		}
		if r := sinfoReasons()[admin]; r != "admin: bad fan" {
			t.Errorf("sinfo -R reason for %s = %q, want the admin's", admin, r)
		}
	})

	t.Run("down node is not drained", func(t *testing.T) {
		if out, err := c.Command(t, "scontrol", "update", "NodeName="+down, "State=DOWN", "Reason=admin: psu"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		c.WaitNode(t, down, 30*time.Second, func(n slurm.Node) bool { return n.Is("DOWN") })
		if err := cl.Drain(ctx, down, "vigil: XID 79"); !errors.Is(err, slurm.ErrNotOurs) {
			t.Errorf("Drain of a down node: err = %v, want ErrNotOurs", err)
		}
		if resumed, err := cl.Resume(ctx, down); resumed || (err != nil && !errors.Is(err, slurm.ErrNotOurs)) {
			t.Errorf("Resume of a down node = %v, %v; want false", resumed, err)
		}
		n, err := cl.Node(ctx, down)
		if err != nil {
			t.Fatal(err)
		}
		if !n.Is("DOWN") || n.Reason != "admin: psu" {
			t.Errorf("down node changed: %+v", n)
		}
	})
}
