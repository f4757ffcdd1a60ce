package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
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

// TestMergeKeepsEveryMode: the prolog, the epilog and health mode share
// the textfile; each run replaces its own mode's series and keeps the
// others'. Lines vigil did not write, or wrote before series carried a
// mode, are dropped.
func TestMergeKeepsEveryMode(t *testing.T) {
	old := []byte(`# HELP vigil_config_valid old help
# TYPE vigil_config_valid gauge
vigil_config_valid{mode="prolog"} 0
vigil_check_status{check="gpu-count",device="",reason="",status="pass"} 1
vigil_check_status{mode="health",check="disk",device="",reason="",status="pass"} 1
vigil_check_status{mode="health",check="disk",device="",reason="",status="fail"} 0
vigil_check_status{mode="health",check="disk",device="",reason="",status="unknown"} 0
vigil_check_status{mode="health",check="broken
other_metric{mode="health"} 1
vigil_config_valid{mode="health"} 1
vigil_config_valid{mode="health"} not-a-number
`)
	merged := MergeTextfile(MergeTextfile(old, sampleReport()), epilogReport())
	golden(t, "vigil-merged.prom", merged)
	promtest.CheckMetrics(t, "the merged textfile", merged)

	// The prolog's next run replaces the prolog's series alone.
	next := sampleReport()
	next.Results, next.Guarded = nil, nil
	again := string(MergeTextfile(merged, next))
	for _, want := range []string{
		`vigil_check_status{mode="epilog",check="ecc",device="gpu1",reason="ECCUncorrectable",status="fail"} 1`,
		`vigil_check_status{mode="health",check="disk",device="",reason="",status="pass"} 1`,
		`vigil_config_valid{mode="prolog"} 1`,
	} {
		if !strings.Contains(again, want) {
			t.Errorf("lacks %s:\n%s", want, again)
		}
	}
	if strings.Contains(again, `mode="prolog",check=`) {
		t.Errorf("the prolog's old check series stayed:\n%s", again)
	}
}

// TestWriteTextfileConcurrent: runs of the three modes writing at once
// lose nobody's series.
func TestWriteTextfileConcurrent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "vigil.prom")
	const rounds = 20
	var wg sync.WaitGroup
	errs := make(chan error, 3*rounds)
	for _, mode := range []string{"prolog", "epilog", "health"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= rounds; i++ {
				r := sampleReport()
				r.Mode, r.Duration = mode, time.Duration(i)*time.Second
				if err := WriteTextfile(p, r); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"prolog", "epilog", "health"} {
		if want := fmt.Sprintf("vigil_run_duration_seconds{mode=%q} %d\n", mode, rounds); !bytes.Contains(b, []byte(want)) {
			t.Errorf("lacks %s in:\n%s", want, b)
		}
	}
	promtest.CheckMetrics(t, p, b)
}

// TestWriteTextfileNoLock: a directory vigil cannot create the lock in
// is an error, and nothing is written.
func TestWriteTextfileNoLock(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "vigil.prom")
	if err := os.Mkdir(p+".lock", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteTextfile(p, sampleReport()); err == nil || !strings.Contains(err.Error(), "lock") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("textfile written without the lock: %v", err)
	}
}

// FuzzMergeTextfile: whatever the old file holds, the merged file has
// only well formed vigil lines, each family's HELP and TYPE once, every
// series of the new run, and merging the same run again changes nothing.
func FuzzMergeTextfile(f *testing.F) {
	for _, name := range []string{"vigil.prom", "vigil-merged.prom"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "epilog")
	}
	f.Add([]byte("vigil_action{mode=\"pro\\\"log\",action=\"x\"} 1\nvigil_action{mode=\"a\\\\\"} NaN\n"), "pro\"log")
	f.Fuzz(func(t *testing.T, old []byte, mode string) {
		r := sampleReport()
		r.Mode = mode
		r.Results = append(r.Results, benchmarks.Result{Check: mode, Device: mode, Reason: mode, Status: benchmarks.StatusFail})
		merged := MergeTextfile(old, r)
		heads := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSuffix(string(merged), "\n"), "\n") {
			if strings.HasPrefix(line, "# ") {
				if heads[line] {
					t.Fatalf("%q twice", line)
				}
				heads[line] = true
				continue
			}
			if !sampleLine.MatchString(line) || !promLine.MatchString(line) {
				t.Fatalf("bad line %q", line)
			}
		}
		var own bytes.Buffer
		if err := Prometheus(&own, r); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(own.String(), "\n"), "\n") {
			if !strings.HasPrefix(line, "# ") && !bytes.Contains(merged, []byte(line+"\n")) {
				t.Fatalf("merged file lacks %q", line)
			}
		}
		if again := MergeTextfile(merged, r); !bytes.Equal(again, merged) {
			t.Fatalf("merging twice changed\n%s\ninto\n%s", merged, again)
		}
	})
}
