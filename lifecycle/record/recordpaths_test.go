package record

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func TestRecordPathsState(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	if _, err := LastRecordPaths(dir, "/etc/vigil/vigil.toml"); !errors.Is(err, ErrNoRecordPaths) {
		t.Fatalf("empty state: %v", err)
	}
	p := RecordPaths{ReportDir: "/r", TextfileDir: "/t", RunDir: "/run/v"}
	if w, err := RememberRecordPaths(dir, "/etc/vigil/vigil.toml", p, now); err != nil || !w {
		t.Fatalf("first write %v %v", w, err)
	}
	if w, err := RememberRecordPaths(dir, "/etc/vigil/vigil.toml", p, now.Add(time.Hour)); err != nil || w {
		t.Fatalf("unchanged paths rewrote the state: %v %v", w, err)
	}
	q := RecordPaths{ReportDir: "/q"}
	if _, err := RememberRecordPaths(dir, "/etc/vigil/other.toml", q, now); err != nil {
		t.Fatal(err)
	}
	got, err := LastRecordPaths(dir, "/etc/vigil/vigil.toml")
	if err != nil || !got.same(p) || !got.Since.Equal(now) {
		t.Fatalf("got %+v, %v", got, err)
	}
	if got, err := LastRecordPaths(dir, "/etc/vigil/other.toml"); err != nil || !got.same(q) {
		t.Fatalf("other config: %+v, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, StateFileName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LastRecordPaths(dir, "/etc/vigil/vigil.toml"); !errors.Is(err, ErrNoRecordPaths) {
		t.Fatalf("unreadable state: %v", err)
	}
}

// TestRecordPathsOfEarlierVersions: a state file written when the modes
// shared one textfile gives that file's directory as textfile_dir, so that
// a broken config after the upgrade still reaches the alert.
func TestRecordPathsOfEarlierVersions(t *testing.T) {
	dir := t.TempDir()
	state := `{"configs": {"/etc/vigil/vigil.toml": {"report_dir": "/r", "textfile": "/metrics/vigil.prom", "run_dir": "/run/v", "since": "2026-11-29T10:00:00Z"},
 "/etc/vigil/off.toml": {"report_dir": "/r", "textfile": "", "run_dir": "/run/v", "since": "2026-11-29T10:00:00Z"}}}`
	if err := os.WriteFile(filepath.Join(dir, StateFileName), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	for conf, want := range map[string]string{"/etc/vigil/vigil.toml": "/metrics", "/etc/vigil/off.toml": ""} {
		p, err := LastRecordPaths(dir, conf)
		if err != nil || p.TextfileDir != want {
			t.Errorf("%s: %+v, %v; want textfile_dir %q", conf, p, err, want)
		}
	}
}
