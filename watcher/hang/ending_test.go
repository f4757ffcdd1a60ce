package hang

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// lineAt is gpu01's record of a line of the job's output at sample i of
// 30 s periods, plus off.
func lineAt(i int, off time.Duration, stream, line string) trace.Sample {
	return trace.Sample{V: 1, Time: t0.Add(time.Duration(i)*30*time.Second + off), Host: "gpu01", Job: "4242",
		Log: &trace.Log{Stream: stream, Line: line}}
}

// replayEnding replays ss and returns the digests given, of a hang or of
// a failed job, in order.
func replayEnding(t *testing.T, c Config, ss []trace.Sample) []digest.DigestEvent {
	t.Helper()
	var out bytes.Buffer
	if err := Replay(bytes.NewReader(encode(t, ss)), c, &out); err != nil {
		t.Fatal(err)
	}
	var ds []digest.DigestEvent
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var d digest.DigestEvent
		if line == "" || json.Unmarshal([]byte(line), &d) != nil {
			continue
		}
		if d.Event == digest.EventDigest || d.Event == digest.EventFailed {
			ds = append(ds, d)
		}
	}
	return ds
}

// TestPulseWaitsForTheLauncher: a job whose progress stopped, and whose
// ranks print their errors just before the pulse's deadline (a rank that
// left a collective early: its peers' "Connection closed by peer", srun's
// task exits; real PyTorch 2.6 under torchrun on a loaded node took 29 s
// from the last progress line), is one whose launcher is ending it. The
// pulse waits teardownHold after the first such line: the job that ends
// in it gets the failed job's digest and no hang's; the job that stays
// is called hung at the next round.
func TestPulseWaitsForTheLauncher(t *testing.T) {
	c := pulseConfig()
	stall := 80 // the last progress line at sample 78, one a minute: the pulse's verdict at sample 85 (3 minutes, and flat readings)
	ph := []phase{training, at30(stuck, stall)}
	errs := []trace.Sample{
		lineAt(84, 20*time.Second, trace.StreamStderr, "[rank1]: RuntimeError: [./gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:8113"),
		lineAt(84, 21*time.Second, trace.StreamStderr, "srun: error: gpu01: task 0: Exited with exit code 1"),
	}
	end, _ := json.Marshal(trace.End{Role: trace.RoleCoordinator, Why: trace.EndSignalled})
	ended := lineAt(85, 5*time.Second, trace.StreamEnd, string(end))
	for _, tt := range []struct {
		name  string
		logs  []trace.Sample
		n     int
		event string
		at    int // the sample of the verdict's round
	}{
		{"no errors: the pulse at its deadline", nil, 160, digest.EventDigest, 85},
		{"errors, the job stays: one round later", errs, 160, digest.EventDigest, 86},
		{"errors, the job ends in the hold: the failed job's digest", append(errs[:2:2], ended), 86, digest.EventFailed, 85},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := replayEnding(t, c, pulseJob(tt.n, append(progressEvery(4, stall, 2), tt.logs...), ph, ph))
			if len(ds) != 1 {
				t.Fatalf("%d digests, want one: %+v", len(ds), ds)
			}
			d := ds[0]
			if d.Event != tt.event {
				t.Fatalf("digest of event %q (%s), want %q", d.Event, d.Cause, tt.event)
			}
			round := t0.Add(time.Duration(tt.at) * 30 * time.Second)
			if d.Time.Before(round) || !d.Time.Before(round.Add(30*time.Second)) {
				t.Errorf("digest at %v after t0, want at the round of sample %d (%v)", d.Time.Sub(t0), tt.at, round.Sub(t0))
			}
		})
	}
}
