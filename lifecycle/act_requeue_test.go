package lifecycle

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/notice"
	"github.com/vigil-hpc/vigil/slurm"
)

// TestDrainRequeuesTheJobUnheld: a prolog that drains its node puts the
// job back in the queue, unheld, while the job's restart count is below
// [prolog] max_requeues; at the limit, or with max_requeues = 0, Slurm's
// hold stays (today's behaviour), and the report says which.
func TestDrainRequeuesTheJobUnheld(t *testing.T) {
	for _, tt := range []struct {
		max, restarts int
		calls, action string
	}{
		{3, 0, "drain n1 vigil: t-fail Broken gpu0|requeue 77 hold=false", "requeued"},
		{3, 2, "drain n1 vigil: t-fail Broken gpu0|requeue 77 hold=false", "requeued"},
		{3, 3, "drain n1 vigil: t-fail Broken gpu0", "held"},
		{0, 0, "drain n1 vigil: t-fail Broken gpu0", "held"},
	} {
		t.Run(fmt.Sprintf("max %d restarts %d", tt.max, tt.restarts), func(t *testing.T) {
			_, conf := setup(t, fmt.Sprintf("checks = [\"t-fail\"]\nmax_requeues = %d", tt.max))
			fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
			out := runWith(t, conf, decide.ModeProlog, fs, env{"SLURM_JOB_ID": "77", "SLURM_JOB_RESTART_COUNT": fmt.Sprint(tt.restarts)}, nil)
			if got := strings.Join(fs.mutations(), "|"); out.ExitCode != decide.ExitFail || got != tt.calls || out.Report.Action.Requeue != tt.action {
				t.Errorf("exit %d, calls %q, requeue %q; want %q, %q", out.ExitCode, got, out.Report.Action.Requeue, tt.calls, tt.action)
			}
		})
	}
}

// TestRetestHint: a local check is re-tested with vigil-prolog --checks; a
// cross-node check never recommends a command that cannot test it.
func TestRetestHint(t *testing.T) {
	for _, tt := range []struct {
		checks []string
		want   []string
		not    string
	}{
		{[]string{"disk"}, []string{"re-test with vigil-prolog --node n3 --checks disk", "or resume by hand: scontrol update NodeName=n3 State=RESUME"}, "only by the prolog"},
		{[]string{"net-bandwidth"}, []string{"net-bandwidth is tested only by the prolog of a job on n3 and its peers", "resume it (scontrol update NodeName=n3 State=RESUME)"}, "--checks net-bandwidth"},
		{[]string{"disk", "net-connect"}, []string{"--checks disk;", "net-connect is tested only by the prolog"}, "--checks disk,net-connect"},
	} {
		got := notice.RetestHint("n3", tt.checks)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: %q lacks %q", tt.checks, got, w)
			}
		}
		if strings.Contains(got, tt.not) {
			t.Errorf("%v: %q holds %q", tt.checks, got, tt.not)
		}
	}
}
