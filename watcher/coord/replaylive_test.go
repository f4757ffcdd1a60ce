package coord

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// stallHost is one host's trace: a sample every period from t0+offset,
// writing steadily until stall, then spinning (devices at 100%, low power).
func stallHost(host string, period, offset, stall time.Duration, n int) []trace.Sample {
	out := make([]trace.Sample, 0, n)
	for i := 0; i < n; i++ {
		at := offset + time.Duration(i)*period
		wrote := uint64(min(at, stall).Seconds() * (1 << 20))
		out = append(out, trace.Sample{V: trace.Version, Time: t0.Add(at), Host: host, Job: "42",
			IO: trace.IO{WChar: wrote}, CPUUsec: uint64(at.Seconds() * 1e6), Procs: 8,
			Accel: []trace.Accel{{ID: "0", Util: 100, PowerW: 140, MemUsedMiB: 70000}}})
	}
	return out
}

// liveDigests runs what the watchers of the job do live: each node's
// detector over its own samples, its summary sent at the coordinator's
// tick, which follows the coordinator's (the first node's) own sample;
// the coordinator's Hub ingests them once per round.
func liveDigests(t *testing.T, c hang.Config, hosts map[string][]trace.Sample, rounds []time.Time) []digest.DigestEvent {
	t.Helper()
	type node struct {
		det  *hang.Detector
		pend *pending
		next int
	}
	nodes := map[string]*node{}
	for h := range hosts {
		nodes[h] = &node{det: hang.New(c), pend: newPending()}
	}
	hub := NewHub("42", c, nil, nil, logrus.New())
	var out []digest.DigestEvent
	for _, r := range rounds {
		sums := map[string]Summary{}
		for h, n := range nodes {
			for ; n.next < len(hosts[h]) && !hosts[h][n.next].Time.After(r); n.next++ {
				s := hosts[h][n.next]
				n.pend.observe(s, n.det.Observe(s))
			}
			sums[h] = n.pend.take()
		}
		got, _ := digests(hub.Ingest(r.Add(time.Millisecond), sums))
		out = append(out, got...)
	}
	return out
}

func replayDigests(t *testing.T, c hang.Config, hosts map[string][]trace.Sample) []digest.DigestEvent {
	t.Helper()
	var ins []hang.Input
	for _, h := range []string{"n1", "n2", "n3"} {
		var b bytes.Buffer
		w := trace.NewWriter(&b)
		for _, s := range hosts[h] {
			if err := w.Write(s); err != nil {
				t.Fatal(err)
			}
		}
		ins = append(ins, hang.Input{Name: h, R: &b})
	}
	var out bytes.Buffer
	if _, err := hang.ReplayInputs(ins, c, &out); err != nil {
		t.Fatal(err)
	}
	var ds []digest.DigestEvent
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(`"event":"digest"`)) {
			continue
		}
		var d digest.DigestEvent
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return ds
}

// TestReplayDigestAtTheLiveRound: for the same traces, the live
// coordinator (rounds after its own sample, the other nodes sampling at
// other moments of the period) and the replay give the digest at the same
// time, with the same "since": the last progress of the first host to
// stall. Issue 19 item 8: the replay gave it one period early, and the
// live one had no since (the report said digest time minus window).
func TestReplayDigestAtTheLiveRound(t *testing.T) {
	c := watchcfg.DefaultHang()
	c.Window, c.Period, c.Grace = 10*time.Minute, time.Minute, 5*time.Minute
	for _, tc := range []struct {
		name    string
		offsets map[string]time.Duration // of each node's sampling moments in the period
		since   string                   // want: the first stalled host's last progress
	}{
		{"members sample after the coordinator", map[string]time.Duration{"n1": 0, "n2": 20 * time.Second, "n3": 40 * time.Second}, "n2"},
		{"members sample before the coordinator", map[string]time.Duration{"n1": 50 * time.Second, "n2": 10 * time.Second, "n3": 30 * time.Second}, "n2"},
		{"all on one grid", map[string]time.Duration{"n1": 0, "n2": 0, "n3": 0}, "n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stall := 20*time.Minute + 5*time.Second
			hosts := map[string][]trace.Sample{}
			var last time.Time
			for h, off := range tc.offsets {
				hosts[h] = stallHost(h, c.Period, off, stall, 45)
				if h == tc.since {
					for _, s := range hosts[h] {
						if s.Time.After(t0.Add(stall)) {
							last = s.Time // the first sample after the stall shows the last progress
							break
						}
					}
				}
			}
			var rounds []time.Time
			for _, s := range hosts["n1"] {
				rounds = append(rounds, s.Time)
			}
			live, replay := liveDigests(t, c, hosts, rounds), replayDigests(t, c, hosts)
			if len(live) != 1 || len(replay) != 1 {
				t.Fatalf("digests live %v, replay %v: want one each", live, replay)
			}
			if !live[0].Time.Equal(replay[0].Time) {
				t.Errorf("digest at %s live, %s in the replay", live[0].Time.Format(time.TimeOnly), replay[0].Time.Format(time.TimeOnly))
			}
			for name, d := range map[string]digest.DigestEvent{"live": live[0], "replay": replay[0]} {
				if !d.Since.Equal(last) {
					t.Errorf("%s: since %v, want %v (the last progress of %s)", name, d.Since, last, tc.since)
				}
				if w := stall + c.Window; d.Time.Before(t0.Add(w)) || d.Time.After(t0.Add(w+3*c.Period)) {
					t.Errorf("%s: digest at stall + %v, want stall + window + a period or two", name, d.Time.Sub(t0.Add(stall)))
				}
			}
			t.Logf("digest at %s, since %s", live[0].Time.Format(time.TimeOnly), live[0].Since.Format(time.TimeOnly))
		})
	}
}
