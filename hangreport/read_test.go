package hangreport

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestFindReports(t *testing.T) {
	dir := t.TempDir()
	tm := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	names := []string{
		Name("1234", "n2", tm.Add(time.Minute)),
		Name("1234", "n1", tm),
		Name("1234", "gpu-07", tm),
		Name("12345", "n1", tm),                 // another job
		Name("123", "n1", tm),                   // another job
		"." + Name("1234", "n3", tm) + ".tmp42", // a write in progress
		"vigil-hang-1234-notes.txt",
		"other.json",
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := FindReports(dir, "1234")
	if err != nil {
		t.Fatal(err)
	}
	var base []string
	for _, p := range got {
		base = append(base, filepath.Base(p))
	}
	want := "vigil-hang-1234-gpu-07-20261129T100000Z.json vigil-hang-1234-n1-20261129T100000Z.json vigil-hang-1234-n2-20261129T100100Z.json"
	if strings.Join(base, " ") != want {
		t.Fatalf("found %v\nwant    %s", base, want)
	}
	if _, err := FindReports(filepath.Join(dir, "missing"), "1234"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing dir: %v", err)
	}
	if _, err := FindReports(dir, ""); err == nil {
		t.Fatal("no job id accepted")
	}
}

func TestReadReportRejects(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"v":1,"event":"hung","job":"7","host":"n1","culprits":[]}`
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(write("target.json", good), link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		bad        bool // wraps ErrBadReport
	}{
		{"truncated", write("trunc.json", `{"v":1,"job":"7","ho`), true},
		{"not json", write("text.json", "hello"), true},
		{"version 2", write("v2.json", `{"v":2,"job":"7","host":"n1"}`), true},
		{"no job", write("nojob.json", `{"v":1,"host":"n1"}`), true},
		{"no host", write("nohost.json", `{"v":1,"job":"7"}`), true},
		{"two objects", write("two.json", good+good), true},
		{"too large", write("large.json", good+strings.Repeat(" ", MaxReportBytes)), true},
		{"symbolic link", link, true},
		{"fifo", fifo, true},
		{"directory", t.TempDir(), true},
		{"missing", filepath.Join(dir, "none.json"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadReport(tt.path)
			if err == nil || errors.Is(err, ErrBadReport) != tt.bad {
				t.Fatalf("err %v, want bad report %v", err, tt.bad)
			}
		})
	}
	if r, err := ReadReport(filepath.Join(dir, "target.json")); err != nil || !r.Blames("n1") || r.Blames("n2") {
		t.Fatalf("good report: %+v, %v", r, err)
	}
}
