package loop

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// splitTrace writes one file per host of a merged trace into dir, as
// --record %N would have, and returns their paths in host order.
func splitTrace(t *testing.T, merged []byte, dir string) map[string]string {
	t.Helper()
	r := trace.NewReader(bytes.NewReader(merged))
	bufs := map[string]*bytes.Buffer{}
	for {
		s, err := r.Next()
		if err != nil {
			break
		}
		if bufs[s.Host] == nil {
			bufs[s.Host] = &bytes.Buffer{}
		}
		if err := trace.NewWriter(bufs[s.Host]).Write(s); err != nil {
			t.Fatal(err)
		}
	}
	paths := map[string]string{}
	for h, b := range bufs {
		p := filepath.Join(dir, "trace-4242-"+h+".jsonl")
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[h] = p
	}
	return paths
}

func replaySettings() Settings {
	s := DefaultSettings()
	s.Window, s.Period, s.Grace = 10*time.Minute, time.Minute, 5*time.Minute
	s.PeriodIsDefault = false
	return s
}

// TestReplayFilesAndStdin replays a two-host trace as one merged file, as
// two host files, and as one host file plus the other on stdin: the events
// must be the same.
func TestReplayFilesAndStdin(t *testing.T) {
	merged := filepath.Join("..", "hang", "testdata", "loader-deadlock.trace")
	data, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	// Keep two of the three hosts: a merged file of two hosts.
	var two bytes.Buffer
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if strings.Contains(line, `"host":"gpu01"`) || strings.Contains(line, `"host":"gpu02"`) {
			two.WriteString(line)
		}
	}
	dir := t.TempDir()
	mergedTwo := filepath.Join(dir, "merged.jsonl")
	if err := os.WriteFile(mergedTwo, two.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := splitTrace(t, two.Bytes(), dir)
	if len(hosts) != 2 {
		t.Fatalf("hosts %v, want 2", hosts)
	}

	run := func(paths []string, stdin []byte) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := Replay(paths, "", replaySettings(), bytes.NewReader(stdin), &out, &errOut); err != nil {
			t.Fatalf("Replay(%v): %v", paths, err)
		}
		return out.String(), errOut.String()
	}
	want, stderr := run([]string{mergedTwo}, nil)
	// Both hosts hang; with two hosts neither is a minority, so the
	// culprits (present because the replay sees several hosts) are none,
	// and the job's digest names none either.
	if strings.Count(want, `"event":"hung"`) != 2 || strings.Count(want, `"culprits":[]`) != 3 ||
		strings.Count(want, `"event":"digest","cause":"unknown"`) != 1 {
		t.Fatalf("merged trace: want two hung events with culprits and one digest:\n%s", want)
	}
	if stderr != "" {
		t.Errorf("stderr %q, want nothing for a trace long enough", stderr)
	}
	// --html: the same events on stdout, and a page with one chart per host.
	page := filepath.Join(dir, "hang.html")
	var out, errOut bytes.Buffer
	if err := Replay([]string{hosts["gpu01"], hosts["gpu02"]}, page, replaySettings(), nil, &out, &errOut); err != nil {
		t.Fatalf("Replay --html: %v", err)
	}
	if out.String() != want {
		t.Errorf("--html changed the events:\n%s", out.String())
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatalf("--html wrote no page: %v", err)
	}
	if n := strings.Count(string(html), `<svg class="chart"`); n != 2 {
		t.Errorf("--html page has %d charts, want one per host (2)", n)
	}
	if got, _ := run([]string{hosts["gpu01"], hosts["gpu02"]}, nil); got != want {
		t.Errorf("two host files: events differ from the merged file's:\n got:\n%s\nwant:\n%s", got, want)
	}
	if got, _ := run([]string{hosts["gpu02"], hosts["gpu01"]}, nil); got != want {
		t.Errorf("two host files, other order: events differ from the merged file's")
	}
	gpu02, err := os.ReadFile(hosts["gpu02"])
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := run([]string{hosts["gpu01"], Stdin}, gpu02); got != want {
		t.Errorf("a host file and stdin: events differ from the merged file's:\n got:\n%s\nwant:\n%s", got, want)
	}
	if got, _ := run([]string{Stdin}, two.Bytes()); got != want {
		t.Errorf("the merged trace on stdin: events differ")
	}
}

func TestReplayTooShort(t *testing.T) {
	// 20 minutes of one host at a minute per sample: span 19m.
	var buf bytes.Buffer
	w := trace.NewWriter(&buf)
	for i := 0; i < 20; i++ {
		if err := w.Write(trace.Sample{Time: t0.Add(time.Duration(i) * time.Minute), Host: "gpu01", Job: "1", Procs: 3}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		mod    func(*Settings)
		stderr string
	}{
		{"window longer than the trace", func(s *Settings) { s.Window = 30 * time.Minute },
			"vigil-watch: replay: trace covers 19m; first verdict needs 30m of one host's samples (the longer of grace 10m and window 30m): no window verdict was possible\n"},
		{"grace longer than the trace", func(s *Settings) { s.Window, s.Grace = 5*time.Minute, time.Hour },
			"vigil-watch: replay: trace covers 19m; first verdict needs 1h of one host's samples (the longer of grace 1h and window 5m): no window verdict was possible\n"},
		{"long enough", func(s *Settings) { s.Window, s.Grace = 5*time.Minute, 10*time.Minute }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultSettings()
			s.Period, s.PeriodIsDefault = time.Minute, false
			tc.mod(&s)
			var out, errOut bytes.Buffer
			if err := Replay([]string{Stdin}, "", s, bytes.NewReader(buf.Bytes()), &out, &errOut); err != nil {
				t.Fatal(err)
			}
			if errOut.String() != tc.stderr {
				t.Errorf("stderr %q, want %q", errOut.String(), tc.stderr)
			}
			if tc.stderr == "" && !strings.Contains(out.String(), `"event":"hung"`) {
				t.Errorf("long enough but no hung event:\n%s", out.String())
			}
		})
	}
}

func TestReplayArgs(t *testing.T) {
	var out bytes.Buffer
	if err := Replay(nil, "", replaySettings(), nil, &out, &out); !errors.Is(err, ErrReplayArgs) {
		t.Errorf("no trace: %v", err)
	}
	if err := Replay([]string{Stdin, Stdin}, "", replaySettings(), strings.NewReader(""), &out, &out); !errors.Is(err, ErrReplayArgs) || !strings.Contains(err.Error(), "twice") {
		t.Errorf("stdin twice: %v", err)
	}
	if err := Replay([]string{filepath.Join(t.TempDir(), "none.jsonl")}, "", replaySettings(), nil, &out, &out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"v\":1,\"time\":\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Replay([]string{Stdin, bad}, "", replaySettings(), strings.NewReader(`{"v":1,"time":"2026-11-29T10:00:00Z","host":"a"}`+"\n"), &out, &out)
	if err == nil || !strings.Contains(err.Error(), bad+": trace: line 1") {
		t.Errorf("bad line: %v, want it to name %s line 1", err, bad)
	}
}
