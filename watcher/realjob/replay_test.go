package realjob

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

// TestReplayRecordedJobs replays, without Slurm, what the watchers of the
// e2e test's real PyTorch jobs recorded (testdata/fixtures/TORCH/FAULT,
// refreshed with go test -run TestE2ERealPyTorch -args -record=DIR): the
// detector and the digest give the answer of the fault's row, the one the
// live watchers gave. Each fixture also keeps what the job printed
// (job.out), which must hold the row's line.
func TestReplayRecordedJobs(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/fixtures/*/*")
	if len(dirs) == 0 {
		t.Fatal("no recorded fixtures under testdata/fixtures")
	}
	for _, dir := range dirs {
		t.Run(strings.TrimPrefix(dir, "testdata/fixtures/"), func(t *testing.T) {
			var m meta
			b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
			if err != nil || json.Unmarshal(b, &m) != nil {
				t.Fatalf("%s/meta.json: %v", dir, err)
			}
			i := slices.IndexFunc(faults, func(f fault) bool { return f.name == m.Fault })
			if i < 0 {
				t.Fatalf("fixture of fault %q, which the table has no row for", m.Fault)
			}
			replayFixture(t, dir, m, faults[i])
		})
	}
}

// replayConfig is the watchers' configuration as the fixture's meta
// records it: the window from VIGIL_HANG_DETECT_TIME (minutes, or a
// duration), the grace the shorter of the default and the window, the
// period --period (fixtures before the pulse: a sixth of the window, as
// vigil-watch derives it) and pulse_floor.
func replayConfig(m meta) hang.Config {
	w, err := time.ParseDuration(m.Window)
	if err != nil {
		n, _ := strconv.Atoi(m.Window)
		w = time.Duration(n) * time.Minute
	}
	c := watchcfg.DefaultHang()
	c.Window, c.Period, c.Grace = w, w/6, min(w, c.Grace)
	if p, err := time.ParseDuration(m.Period); err == nil {
		c.Period = p
	}
	if f, err := time.ParseDuration(m.PulseFloor); err == nil {
		c.PulseFloor = f
	}
	if m.PulseBeats > 0 {
		c.PulseBeats = m.PulseBeats
	}
	return c
}

func replayFixture(t *testing.T, dir string, m meta, f fault) {
	traces, _ := filepath.Glob(filepath.Join(dir, "trace-*.jsonl"))
	var ins []hang.Input
	for _, p := range traces {
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		ins = append(ins, hang.Input{Name: p, R: fh})
	}
	var out bytes.Buffer
	if _, err := hang.ReplayInputs(ins, replayConfig(m), &out); err != nil {
		t.Fatalf("replay: %v", err)
	}
	var hung, digests int
	var cause string
	var failed bool
	var culprits, stragglers []int
	var detection *digest.Detection
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var e struct {
			Event    string `json:"event"`
			Host     string `json:"host"`
			Cause    string `json:"cause"`
			Culprits []struct {
				Host string `json:"host"`
			} `json:"culprits"`
			Detection *digest.Detection `json:"detection"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Event {
		case "straggler":
			if n := slices.Index(m.Hosts, e.Host); !slices.Contains(stragglers, n) {
				stragglers = append(stragglers, n)
			}
		case "hung":
			hung++
		case "digest", "failed":
			digests++
			if e.Event == "digest" {
				hung++ // a hang's digest is its verdict, from the pulse or evidence before any window
				detection = e.Detection
			}
			failed = e.Event == "failed"
			cause = e.Cause
			culprits = culprits[:0] // the last digest's (a hang's, then the failed job's, may both come)
			for _, c := range e.Culprits {
				culprits = append(culprits, slices.Index(m.Hosts, c.Host))
			}
		}
	}
	w := f.want
	t.Logf("PyTorch %s, Slurm %s: %d verdicts (hung events, hang digests), %d digests, cause %q, culprits %v, stragglers %v", m.Torch, m.Slurm, hung, digests, cause, culprits, stragglers)
	if (hung > 0) != w.verdict || (digests > 0) != w.digest {
		t.Errorf("replay: %d hung events and %d digests, want verdict %v digest %v", hung, digests, w.verdict, w.digest)
	}
	if slices.Sort(stragglers); !slices.Equal(stragglers, w.straggler) {
		t.Errorf("replay: straggler events name nodes %v, want %v", stragglers, w.straggler)
	}
	if w.digest && failed != w.failed {
		t.Errorf("replay digest of a failed job %v, want %v", failed, w.failed)
	}
	if w.digest && (cause != w.cause || !slices.Equal(culprits, w.culprits)) {
		t.Errorf("replay digest: cause %q culprits %v, want %q %v", cause, culprits, w.cause, w.culprits)
	}
	// A job that printed progress lines at least once a minute and hung
	// has its verdict within 5 minutes of its last line (fixtures of the
	// pulse: those recorded with pulse_floor).
	if w.verdict && m.PulseFloor != "" {
		switch {
		case detection == nil || detection.By == digest.DetectedWindow:
			t.Errorf("replay digest detected by %+v, want the pulse or evidence", detection)
		case detection.LastProgress.IsZero() || detection.AfterProgressS > 300:
			t.Errorf("replay verdict %.0fs after the last progress line (%v), want within 5 minutes", detection.AfterProgressS, detection.LastProgress)
		default:
			t.Logf("verdict by %s %.1fs after the last progress line", detection.By, detection.AfterProgressS)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "job.out")); !bytes.Contains(b, []byte(w.output)) {
		t.Errorf("job.out lacks %q", w.output)
	}
}
