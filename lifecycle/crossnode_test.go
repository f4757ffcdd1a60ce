package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/slurm"
)

// TestCrossNodeWithoutAlloc: without PrologFlags=Alloc the cross-node
// checks are unknown, with that reason, and never drain; no node address
// is asked for.
func TestCrossNodeWithoutAlloc(t *testing.T) {
	dir, conf := setup(t, `checks = ["net-connect", "net-bandwidth"]`)
	slurmConf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(slurmConf, []byte("ClusterName=c\nPrologFlags=Contain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	e := env{"SLURM_JOB_ID": "12", "SLURMD_NODENAME": "n1", "SLURM_JOB_NODELIST": "n[1-3]", "SLURM_CONF": slurmConf}
	// Contain implies Alloc: the phase goes on to ask for the addresses,
	// which the fake cannot give: unknown, NetSetupFailed.
	out := runWith(t, conf, decide.ModeProlog, fs, e, nil)
	if len(out.Report.Results) != 2 || out.Report.Results[0].Reason != "NetSetupFailed" || out.ExitCode != decide.ExitOK {
		t.Fatalf("Contain: %+v", out.Report.Results)
	}
	if err := os.WriteFile(slurmConf, []byte("ClusterName=c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = runWith(t, conf, decide.ModeProlog, fs, e, nil)
	for _, r := range out.Report.Results {
		if r.Status != benchmarks.StatusUnknown || r.Reason != "PrologNotAlloc" ||
			!strings.Contains(r.Message, "PrologFlags=Alloc is not set") {
			t.Errorf("%+v", r)
		}
	}
	if out.ExitCode != decide.ExitOK || len(fs.mutations()) != 0 || out.Report.Verdict != benchmarks.StatusUnknown {
		t.Errorf("exit %d, calls %v, verdict %s", out.ExitCode, fs.mutations(), out.Report.Verdict)
	}
}

// TestCrossNodeNotApplicable: a job on one node, the epilog and a run
// outside a job list the cross-node checks as not applicable.
func TestCrossNodeNotApplicable(t *testing.T) {
	_, conf := setup(t, `checks = ["net-connect"]`)
	for _, tt := range []struct {
		name string
		mode decide.Mode
		e    env
		want string
	}{
		{"one node", decide.ModeProlog, env{"SLURM_JOB_ID": "12", "SLURMD_NODENAME": "n1", "SLURM_JOB_NODELIST": "n1"}, "one node"},
		{"no job", decide.ModeProlog, nil, "only in a job's prolog"},
		{"health", decide.ModeHealth, nil, "only in the prolog"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := runWith(t, conf, tt.mode, &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, tt.e, nil)
			na := out.Report.NotApplicable
			if len(out.Report.Results) != 0 || len(na) != 1 || na[0].Check != "net-connect" || !strings.Contains(na[0].Message, tt.want) {
				t.Errorf("results %+v, n/a %+v", out.Report.Results, na)
			}
		})
	}
}
