package lifecycle

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/slurm"
)

// TestCorruptStateKeptAside: a state file that is not JSON is never
// replaced in place: it is renamed to CorruptName with its bytes (the other
// configs' entries) intact, the new state holds the config just seen, and
// the error says so, wrapping ErrCorruptState.
func TestCorruptStateKeptAside(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	file := filepath.Join(dir, StateFileName)
	corrupt := []byte(`{"configs": {"/etc/vigil/other.toml": {"report_dir": "/srv/other"`)
	if err := os.WriteFile(file, corrupt, 0o644); err != nil {
		t.Fatal(err)
	}
	p := RecordPaths{ReportDir: "/r", TextfileDir: "/t", RunDir: "/run/v"}
	wrote, err := RememberRecordPaths(dir, "/etc/vigil/vigil.toml", p, now)
	if !wrote || !errors.Is(err, ErrCorruptState) {
		t.Fatalf("RememberRecordPaths = %v, %v; want written and ErrCorruptState", wrote, err)
	}
	aside := CorruptName(file, now)
	if !strings.Contains(err.Error(), aside) {
		t.Errorf("error %q does not name %s", err, aside)
	}
	if b, err := os.ReadFile(aside); err != nil || !bytes.Equal(b, corrupt) {
		t.Fatalf("kept aside: %q, %v; want the corrupt bytes", b, err)
	}
	if got, err := LastRecordPaths(dir, "/etc/vigil/vigil.toml"); err != nil || !got.same(p) {
		t.Fatalf("new state: %+v, %v", got, err)
	}
}

// TestValidRunNotesCorruptState: a valid run that finds the state file
// corrupt says so in its report.
func TestValidRunNotesCorruptState(t *testing.T) {
	dir, conf := setup(t, `checks = ["t-pass"]`)
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, StateFileName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runWith(t, conf, decide.ModeProlog, &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, nil, nil)
	if notes := strings.Join(out.Report.Notes, "\n"); !strings.Contains(notes, "kept it aside as "+filepath.Join(state, StateFileName)+".corrupt-") {
		t.Fatalf("notes do not name the kept-aside state file:\n%s", notes)
	}
	if m, _ := filepath.Glob(filepath.Join(state, StateFileName+".corrupt-*")); len(m) != 1 {
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
				if err := os.WriteFile(filepath.Join(state, StateFileName), []byte(tc.state), 0o644); err != nil {
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
			b, _ := os.ReadFile(filepath.Join(state, StateFileName))
			if string(b) != tc.state {
				t.Errorf("state changed to %q", b)
			}
		})
	}
}

// TestFallbackTextfileDir: the broken file's own textfile directory, else
// the default, and only a directory that exists.
func TestFallbackTextfileDir(t *testing.T) {
	in := t.TempDir()
	missing := filepath.Join(in, "nope")
	file := filepath.Join(in, "vigil.prom")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		named      bool
		value, def string
		want       string
	}{
		{"the file's own", true, in, missing, in},
		{"the file's own, no directory", true, missing, in, ""},
		{"the file's own, a file", true, file, in, ""},
		{"the file's own, empty (disabled)", true, "", in, ""},
		{"the file's own, relative", true, "metrics", in, ""},
		{"the default", false, missing, in, in},
		{"the default, no directory", false, in, missing, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fallbackTextfileDir(tc.named, tc.value, tc.def); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
