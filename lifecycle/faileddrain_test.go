package lifecycle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/slurm"
)

// downSlurm is fakeSlurm whose drains fail as scontrol does with
// slurmctld down, and that resumes a node by exact reason.
type downSlurm struct {
	fakeSlurm
	drainErr error
}

func (f *downSlurm) Drain(ctx context.Context, node, reason string) error {
	f.calls = append(f.calls, "drain "+node+" "+reason)
	return f.drainErr
}

func (f *downSlurm) ResumeIfReason(ctx context.Context, node, reason string) (bool, error) {
	f.calls = append(f.calls, "resume-if "+node+" "+reason)
	if !f.node.Drained() || f.node.Reason != reason {
		return false, nil
	}
	f.node.Flags, f.node.Reason = nil, ""
	return true, nil
}

// TestPrologErrorAfterAFailedDrain: slurmctld down while the prolog fails
// a check: vigil cannot drain, remembers it, and Slurm then drains the
// node "Prolog error". The next run that passes lifts that drain and
// forgets the record; a "Prolog error" without vigil's record, or set long
// before its failed drain, stays.
func TestPrologErrorAfterAFailedDrain(t *testing.T) {
	dir, conf := setup(t, `checks = ["t-fail"]`)
	down := &slurm.CommandError{ExitCode: 1, Stderr: "Unable to contact slurm controller (connect failure)", Err: errors.New("exit status 1")}
	fs := &downSlurm{fakeSlurm: fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, drainErr: down}
	out := runWith(t, conf, decide.ModeProlog, &fs.fakeSlurm, env{"SLURM_JOB_ID": "9"}, func(o *Options) { o.Slurm = fs })
	state := filepath.Join(dir, "state", failedDrainFile)
	if out.ExitCode != decide.ExitFail || out.Report.Action.Done {
		t.Fatalf("exit %d action %+v, want a failed drain and exit 1", out.ExitCode, out.Report.Action)
	}
	b, err := os.ReadFile(state)
	if err != nil || !strings.Contains(string(b), `"reason": "vigil: t-fail Broken gpu0"`) || !strings.Contains(string(b), `"job": "9"`) {
		t.Fatalf("state %s: %s %v", state, b, err)
	}
	// Slurm drains the node for the failed prolog; the next run passes.
	os.WriteFile(conf, []byte(strings.Replace(mustReadFile(t, conf), `checks = ["t-fail"]`, `checks = ["t-pass"]`, 1)), 0o644)
	for _, tt := range []struct {
		name   string
		reason string
		at     time.Time
		lifted bool
	}{
		{"an admin's reason", "maintenance", time.Now(), false},
		{"Prolog error set long before vigil's failure", decide.SlurmPrologError, time.Now().Add(-time.Hour), false},
		{"Prolog error after vigil's failed drain", decide.SlurmPrologError, time.Now(), true},
		{"Prolog error again, no record left", decide.SlurmPrologError, time.Now(), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs.node = slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: tt.reason, ReasonTime: tt.at}
			fs.calls = nil
			out := runWith(t, conf, decide.ModeHealth, &fs.fakeSlurm, nil, func(o *Options) { o.Slurm = fs })
			if lifted := !fs.node.Drained(); lifted != tt.lifted || out.ExitCode != decide.ExitOK {
				t.Errorf("lifted %v (calls %v, action %+v), want %v", lifted, fs.calls, out.Report.Action, tt.lifted)
			}
			if _, err := os.Stat(state); tt.lifted && err == nil {
				t.Errorf("the record stays after the lift")
			}
		})
	}
}

func mustReadFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
