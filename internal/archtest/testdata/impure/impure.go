// Package impure has one of each impurity TestImpuritiesFound looks for.
package impure

import (
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
)

func decide(n slurm.Node, c *slurm.Client) (bool, time.Duration) {
	_ = exec.Command("scontrol")
	_, _ = http.Get("http://x")
	_, err := os.Stat("/etc/slurm/slurm.conf")
	_, _ = slurm.ReadConfFile("/etc/slurm/slurm.conf")
	start := time.Now()
	return err == nil && n.Drained() && c != nil, time.Since(start)
}
