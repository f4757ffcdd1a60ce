package slurmtest

import (
	"testing"
	"time"
)

// StopController stops slurmctld, as a controller that crashed or lost
// its network; jobs and nodes keep their state in StateSaveLocation, and
// scontrol answers "Unable to contact slurm controller" until
// StartController.
func (c *Cluster) StopController(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctld.stop(15 * time.Second)
	t.Logf("slurmtest: slurmctld stopped")
}

// StartController starts slurmctld again after StopController, recovering
// its saved state, and waits until it answers.
func (c *Cluster) StartController(t testing.TB) {
	t.Helper()
	bin, err := c.lookBin("slurmctld")
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.startCtld(map[string]string{"slurmctld": bin}); err != nil {
		t.Fatalf("slurmtest: starting slurmctld again: %v\n%s", err, c.Dump(""))
	}
	t.Logf("slurmtest: slurmctld started again")
}
