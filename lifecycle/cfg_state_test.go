package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/record"
	"github.com/vigil-hpc/vigil/slurm"
)

// TestValidRunNotesCorruptState: a valid run that finds the state file
// corrupt says so in its report.
func TestValidRunNotesCorruptState(t *testing.T) {
	dir, conf := setup(t, `checks = ["t-pass"]`)
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, record.StateFileName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runWith(t, conf, decide.ModeProlog, &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, nil, nil)
	if notes := strings.Join(out.Report.Notes, "\n"); !strings.Contains(notes, "kept it aside as "+filepath.Join(state, record.StateFileName)+".corrupt-") {
		t.Fatalf("notes do not name the kept-aside state file:\n%s", notes)
	}
	if m, _ := filepath.Glob(filepath.Join(state, record.StateFileName+".corrupt-*")); len(m) != 1 {
		t.Fatalf("kept aside: %v", m)
	}
}

// TestInvalidConfigCorruptStateStillAlerts: with an invalid config and a
// state file that cannot be read, no report is written (the paths are not
// known), but the textfile the broken file names still gets
// vigil_config_valid 0, so that the alert fires; the state is left as it
// was (a broken config writes no state).
func TestInvalidConfigCorruptStateStillAlerts(t *testing.T) {
	for _, tc := range []struct{ name, state string }{
		{"corrupt state", "{"},
		{"no state", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, conf := setup(t, "checks = [\"t-pass\"]\nretries = \"two\"")
			state := filepath.Join(dir, "state")
			if tc.state != "" {
				if err := os.MkdirAll(state, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(state, record.StateFileName), []byte(tc.state), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out := runWith(t, conf, decide.ModeProlog, &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, nil, nil)
			if out.Report.Config.Valid || out.ExitCode != decide.ExitOK || out.ReportPath != "" {
				t.Fatalf("exit %d, report %q, config %+v", out.ExitCode, out.ReportPath, out.Report.Config)
			}
			prom, err := os.ReadFile(filepath.Join(dir, "vigil-prolog.prom"))
			if err != nil || !strings.Contains(string(prom), `vigil_config_valid{mode="prolog"} 0`) {
				t.Fatalf("textfile (%v):\n%s", err, prom)
			}
			if _, err := os.Stat(filepath.Join(dir, "reports")); !os.IsNotExist(err) {
				t.Errorf("a report directory was made: %v", err)
			}
			b, _ := os.ReadFile(filepath.Join(state, record.StateFileName))
			if string(b) != tc.state {
				t.Errorf("state changed to %q", b)
			}
		})
	}
}
