package hangreport

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseReport reads hang reports as vigil-epilog does from the job's
// report directory, which the job's user can write to. Errors wrap
// ErrBadReport; an accepted report has the version, a job and a host,
// re-encodes to JSON that reads back the same, and ReadReport reads the
// same from a file. Seeds: a copy of vigil-watch's golden report
// (watcher/action/testdata) and its variants.
func FuzzParseReport(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "report.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add(bytes.Replace(golden, []byte(`"v": 1`), []byte(`"v": 2`), 1))
	f.Add(append(bytes.Clone(golden), "{}"...))
	f.Add([]byte(`{"v":1,"job":"7","host":"n1","culprits":null,"evidence":{"a":[1,{"b":null}]},"time":"2026-11-29T10:30:00.5+01:00"}`))
	f.Add([]byte(`{"v":1,"job":"","host":"n1"}`))
	f.Add([]byte(`{"v":1,"job":"7","host":"n1","time":"not a time"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReport(data)
		if err != nil {
			if !errors.Is(err, ErrBadReport) {
				t.Fatalf("%v does not wrap ErrBadReport", err)
			}
			return
		}
		if r.V != ReportVersion || r.Job == "" || r.Host == "" || r.Path != "" {
			t.Fatalf("accepted %+v", r)
		}
		if r.Blames("") || (len(r.Culprits) == 0 && !r.Blames(r.Host)) {
			t.Fatalf("%+v: Blames disagrees with the report", r)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%+v does not re-encode: %v", r, err)
		}
		again, err := ParseReport(b)
		if err != nil {
			t.Fatalf("re-encoded %s: %v", b, err)
		}
		if b2, _ := json.Marshal(again); !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed\n%s\ninto\n%s", b, b2)
		}
		path := filepath.Join(t.TempDir(), "vigil-hang-7-n1.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fromFile, err := ReadReport(path)
		if b3, _ := json.Marshal(fromFile); err != nil || fromFile.Path != path || !bytes.Equal(b, b3) {
			t.Fatalf("ReadReport: %+v, %v", fromFile, err)
		}
	})
}
