package impure

import (
	"time"

	"github.com/vigil-hpc/vigil/slurm"
)

// pure names only Slurm's types and constants and gets its time.
func pure(n slurm.Node, now time.Time, window time.Duration) (bool, slurm.Reboot) {
	return n.ReasonTime.Add(window).After(now), slurm.Reboot{NextState: slurm.NextStateDown}
}
