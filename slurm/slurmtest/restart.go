package slurmtest

import (
	"testing"
	"time"
)

// Restart stops every slurmd and starts it again (slurmd reads
// plugstack.conf only when it starts), then waits until each has started
// (read its configuration and loaded its plugins). Running jobs survive in
// their slurmstepd.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	bin, err := c.lookBin("slurmd")
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	begin := time.Now()
	starts := make([]int, len(c.Nodes))
	for i, n := range c.Nodes {
		starts[i] = c.slurmdStarts(n)
	}
	stopAll(c.slurmds, 15*time.Second)
	c.slurmds = nil
	for i, n := range c.Nodes {
		d, err := c.startSlurmd(bin, n, nil)
		if err != nil {
			t.Fatalf("slurmtest: %v", err)
		}
		c.slurmds = append(c.slurmds, d)
		c.waitRestartV2(n, starts[i], d)
	}
	again := make([]int, len(c.Nodes))
	err = c.waitFor(60*time.Second, "slurmd to start again", func() (bool, error) {
		for i, d := range c.slurmds {
			if err := d.exited(); err != nil {
				if again[i] == maxStartAgain {
					return false, err
				}
				// On a loaded machine a 24.11 slurmd started right after its
				// predecessor stopped died of SIGPIPE before its first log
				// line (a fresh-clone CI run, 30 nodes): start it again.
				again[i]++
				t.Logf("slurmtest: restart: slurmd-%s ended (%v) before it started: starting it again", c.Nodes[i], err)
				if c.slurmds[i], err = c.startSlurmd(bin, c.Nodes[i], nil); err != nil {
					return false, err
				}
				return false, nil
			}
			if c.slurmdStarts(c.Nodes[i]) <= starts[i] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("slurmtest: restart: %v\n%s", err, c.Dump(""))
	}
	t.Logf("slurmtest: slurmd restarted in %.2fs", time.Since(begin).Seconds())
}

// maxStartAgain is how many times Restart starts again a slurmd that ended
// before it started.
const maxStartAgain = 2
