package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/report/promtest"
)

// TestGoldenTextfilesPassPromtool: every textfile golden passes
// `promtool check metrics`.
func TestGoldenTextfilesPassPromtool(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.prom"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no textfile goldens (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		promtest.CheckMetrics(t, f, b)
	}
}

// epilogReport is the epilog after sampleReport's job: it re-checked the
// health facts and kept the drain.
func epilogReport() *Report {
	r := sampleReport()
	r.Program, r.Mode = "vigil-epilog", "epilog"
	r.Start = r.Start.Add(time.Hour)
	r.Results = r.Results[1:2]
	r.Action = Action{Kind: ActionStay}
	return r
}

// healthReport is a health mode run on the same node.
func healthReport() *Report {
	r := epilogReport()
	r.Program, r.Mode = "vigil-prolog", "health"
	r.Start = r.Start.Add(time.Hour)
	r.Action = Action{Kind: ActionNone}
	r.Guarded, r.BadLinks = nil, nil
	return r
}

// modesOf returns the values of the mode label in a textfile.
func modesOf(t *testing.T, b []byte) []string {
	t.Helper()
	samples, err := promtest.Parse(b)
	if err != nil {
		t.Fatalf("%v in:\n%s", err, b)
	}
	var modes []string
	for _, s := range samples {
		if m := s.Labels["mode"]; !slices.Contains(modes, m) {
			modes = append(modes, m)
		}
	}
	return modes
}

// dirNames lists dir, hidden files (temp files) included.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestWriteTextfileEachModeItsOwn: the prolog, the epilog and health mode
// each write their own file in the directory (created when missing), and
// each file holds that mode's series alone, as Prometheus writes them.
func TestWriteTextfileEachModeItsOwn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "textfiles")
	for _, r := range []*Report{sampleReport(), epilogReport(), healthReport()} {
		p, err := WriteTextfile(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, "vigil-"+r.Mode+".prom"); p != want {
			t.Errorf("path %s, want %s", p, want)
		}
	}
	if got, want := dirNames(t, dir), []string{"vigil-epilog.prom", "vigil-health.prom", "vigil-prolog.prom"}; !slices.Equal(got, want) {
		t.Fatalf("directory holds %v, want %v", got, want)
	}
	for _, r := range []*Report{sampleReport(), epilogReport(), healthReport()} {
		b, err := os.ReadFile(filepath.Join(dir, TextfileName(r.Mode)))
		if err != nil {
			t.Fatal(err)
		}
		if got := modesOf(t, b); !slices.Equal(got, []string{r.Mode}) {
			t.Errorf("%s holds the modes %v", TextfileName(r.Mode), got)
		}
		var want bytes.Buffer
		if err := Prometheus(&want, r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want.Bytes()) {
			t.Errorf("%s:\n%s\nwant:\n%s", TextfileName(r.Mode), b, want.Bytes())
		}
		if r.Mode == "epilog" {
			golden(t, "vigil-epilog.prom", b)
		}
	}
}

// TestWriteTextfileReplacesAtomically: a run replaces its mode's file by
// rename (a new inode, never the old one rewritten in place); a reader
// that reads the file while it is rewritten sees one whole version or the
// other, and no temp file stays.
func TestWriteTextfileReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	small, big := sampleReport(), sampleReport()
	small.Results, small.Guarded, small.BadLinks = nil, nil, nil
	small.Config.Valid = false
	var versions [2]bytes.Buffer
	for i, r := range []*Report{small, big} {
		if err := Prometheus(&versions[i], r); err != nil {
			t.Fatal(err)
		}
	}
	p, err := WriteTextfile(dir, big)
	if err != nil {
		t.Fatal(err)
	}
	// Held open, the first file keeps its inode: a rename puts another
	// in its place, which a rewrite in place would not.
	first, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	before, err := first.Stat()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	torn := make(chan string, 1)
	go func() {
		defer close(torn)
		for {
			select {
			case <-done:
				return
			default:
			}
			b, err := os.ReadFile(p)
			if err != nil || (!bytes.Equal(b, versions[0].Bytes()) && !bytes.Equal(b, versions[1].Bytes())) {
				torn <- fmt.Sprintf("read %d bytes (%v):\n%s", len(b), err, b)
				return
			}
		}
	}()
	for i := 0; i < 200; i++ {
		if _, err := WriteTextfile(dir, []*Report{small, big}[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if msg, ok := <-torn; ok {
		t.Fatalf("a reader saw a torn file: %s", msg)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Error("the file was rewritten in place, not replaced by rename")
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), `vigil_config_valid{mode="prolog"} 1`) {
		t.Errorf("the last write (valid config) is not in place:\n%s", b)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"vigil-prolog.prom"}) {
		t.Fatalf("directory holds %v (temp files left?)", got)
	}
}

// TestWriteTextfileErrorsLeaveNothing: a write that fails leaves the
// directory as it was, no temp file in it.
func TestWriteTextfileErrorsLeaveNothing(t *testing.T) {
	t.Run("rename fails", func(t *testing.T) {
		dir := t.TempDir()
		// A non-empty directory where the file goes: the rename fails,
		// after the temp file was written.
		if err := os.MkdirAll(filepath.Join(dir, "vigil-prolog.prom", "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := WriteTextfile(dir, sampleReport()); err == nil {
			t.Fatal("no error")
		}
		if got := dirNames(t, dir); !slices.Equal(got, []string{"vigil-prolog.prom"}) {
			t.Fatalf("directory holds %v (temp files left?)", got)
		}
	})
	t.Run("directory is a file", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "tf")
		if err := os.WriteFile(dir, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := WriteTextfile(dir, sampleReport()); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("mode names no file", func(t *testing.T) {
		dir := t.TempDir()
		for _, mode := range []string{"", "../prolog", "a/b"} {
			r := sampleReport()
			r.Mode = mode
			if _, err := WriteTextfile(dir, r); !errors.Is(err, ErrTextfileMode) {
				t.Errorf("mode %q: err = %v", mode, err)
			}
		}
		if got := dirNames(t, dir); len(got) != 0 {
			t.Fatalf("directory holds %v", got)
		}
	})
}

// TestWriteTextfileConcurrentModes: the prolog, the epilog and health
// mode writing at once never clobber each other: every file holds its own
// mode's series alone, whole, at every read and at the end its last run's.
func TestWriteTextfileConcurrentModes(t *testing.T) {
	dir := t.TempDir()
	modes := []string{"prolog", "epilog", "health"}
	const rounds = 50
	var wg sync.WaitGroup
	errs := make(chan error, len(modes)*rounds*2)
	for _, mode := range modes {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 1; i <= rounds; i++ {
				r := sampleReport()
				r.Mode, r.Duration = mode, time.Duration(i)*time.Second
				if _, err := WriteTextfile(dir, r); err != nil {
					errs <- err
				}
			}
		}()
		go func() { // a reader, as node_exporter
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				b, err := os.ReadFile(filepath.Join(dir, TextfileName(mode)))
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				if err != nil {
					errs <- err
					continue
				}
				samples, err := promtest.Parse(b)
				if err != nil {
					errs <- fmt.Errorf("%s: %v", TextfileName(mode), err)
					continue
				}
				for _, s := range samples {
					if s.Labels["mode"] != mode {
						errs <- fmt.Errorf("%s holds %s of mode %q", TextfileName(mode), s.Name, s.Labels["mode"])
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, mode := range modes {
		b, err := os.ReadFile(filepath.Join(dir, TextfileName(mode)))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("vigil_run_duration_seconds{mode=%q} %d\n", mode, rounds); !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s lacks %s in:\n%s", TextfileName(mode), want, b)
		}
		if got := modesOf(t, b); !slices.Equal(got, []string{mode}) {
			t.Errorf("%s holds the modes %v", TextfileName(mode), got)
		}
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"vigil-epilog.prom", "vigil-health.prom", "vigil-prolog.prom"}) {
		t.Fatalf("directory holds %v (temp files left?)", got)
	}
}

// TestRemoveSharedTextfile: the shared file of earlier versions
// (testdata/shared-textfile-v1.prom, three modes' series in one file) goes,
// with its lock file, and only once; a file of that name that another
// program wrote stays.
func TestRemoveSharedTextfile(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "shared-textfile-v1.prom"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, SharedTextfileName)
	if err := os.WriteFile(p, old, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".lock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if removed, err := RemoveSharedTextfile(p); !removed || err != nil {
		t.Fatalf("removed %v, err %v", removed, err)
	}
	if got := dirNames(t, dir); len(got) != 0 {
		t.Fatalf("left %v", got)
	}
	if removed, err := RemoveSharedTextfile(p); removed || err != nil {
		t.Fatalf("again: removed %v, err %v", removed, err)
	}
	for name, foreign := range map[string]string{
		"other series": "# HELP node_x x\n# TYPE node_x gauge\nnode_x 1\n",
		"mixed":        string(old) + "node_x 1\n",
		"empty":        "",
	} {
		if err := os.WriteFile(p, []byte(foreign), 0o644); err != nil {
			t.Fatal(err)
		}
		if removed, err := RemoveSharedTextfile(p); removed || err != nil {
			t.Errorf("%s: removed %v, err %v", name, removed, err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != foreign {
			t.Errorf("%s: the file changed (%v)", name, err)
		}
	}
}
