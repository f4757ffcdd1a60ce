package decide

import (
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
)

func TestLiftsPrologError(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	fd := FailedDrain{Time: at}
	drained := func(reason string, set time.Time, flags ...string) slurm.Node {
		return slurm.Node{Name: "n1", State: "IDLE", Flags: append([]string{"DRAIN"}, flags...), Reason: reason, ReasonTime: set}
	}
	for i, tt := range []struct {
		n    slurm.Node
		ok   bool
		want bool
	}{
		{drained(SlurmPrologError, at.Add(time.Second)), true, true},
		{drained(SlurmPrologError, at.Add(-30*time.Second)), true, true},
		{drained(SlurmPrologError, at.Add(-2*time.Minute)), true, false},
		{drained(SlurmPrologError, at), false, false},
		{drained("Prolog error; see log", at), true, false},
		{drained(SlurmPrologError, at, "MAINTENANCE"), true, false},
		{slurm.Node{Name: "n1", State: "IDLE", Reason: SlurmPrologError}, true, false},
	} {
		if got := liftsPrologError(tt.n, fd, tt.ok); got != tt.want {
			t.Errorf("%d: %+v: %v, want %v", i, tt.n, got, tt.want)
		}
	}
}
