package hang

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// deviceAt is the NVML event of gpu02's GPU with XID code, read at
// sample i of 30 s periods.
func deviceAt(i, code int) trace.Sample {
	return trace.DeviceRecord("gpu02", "4242", t0.Add(time.Duration(i)*30*time.Second).Add(time.Millisecond),
		trace.DeviceEvent{Source: trace.DeviceNVML, Device: "0", PCI: "0000:b1:00", Kind: trace.DeviceXID, XID: code})
}

// TestUnhealableClassification: which records are evidence that cannot
// heal; the rest keep their confirmation.
func TestUnhealableClassification(t *testing.T) {
	ras := func(st trace.RAS) string {
		st.Format = trace.RASText
		b, _ := json.Marshal(st)
		return string(b)
	}
	for _, c := range []struct {
		name, stream, line string
		want               bool
	}{
		{"NVML XID 79", trace.StreamDevice, deviceAt(0, 79).Log.Line, true},
		{"NVML XID 74", trace.StreamDevice, deviceAt(0, 74).Log.Line, true},
		{"NVML XID 95", trace.StreamDevice, deviceAt(0, 95).Log.Line, true},
		{"NVML XID 119", trace.StreamDevice, deviceAt(0, 119).Log.Line, true},
		{"NVML XID 13", trace.StreamDevice, deviceAt(0, 13).Log.Line, false},
		{"NVML XID 94", trace.StreamDevice, deviceAt(0, 94).Log.Line, false},
		{"NVML double-bit ECC", trace.StreamDevice, trace.DeviceRecord("gpu02", "4242", t0,
			trace.DeviceEvent{Source: trace.DeviceNVML, Device: "0", Kind: trace.DeviceECC}).Log.Line, false},
		{"kernel XID 79 (the node's, maybe another job's GPU)", trace.StreamKmsg,
			"NVRM: Xid (PCI:0000:b1:00): 79, pid=5188, name=python, GPU has fallen off the bus.", false},
		{"XID 79 printed by the job", trace.StreamStderr,
			"NVRM: Xid (PCI:0000:b1:00): 79, pid=5188, name=python, GPU has fallen off the bus.", false},
		{"RAS: ranks dead", trace.StreamRAS, ras(trace.RAS{DeadCount: 1, Dead: []trace.RASRank{{Rank: -1, Host: "10.0.0.12", PID: 77}}}), true},
		{"RAS: ranks unresponsive", trace.StreamRAS, ras(trace.RAS{UnresponsiveCount: 1, Unresponsive: []trace.RASRank{{Rank: -1, Host: "10.0.0.12"}}}), false},
		{"NCCL transport error", trace.StreamStderr,
			"gpu02:5188:5201 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.11<43565> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.12 remoteGidsfe80::", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, ok := joblog.LineIn(c.stream, c.line)
			if !ok {
				t.Fatalf("line not matched: %s", c.line)
			}
			if got := unhealable(c.stream, c.line, m); got != c.want {
				t.Errorf("unhealable = %v, want %v (match %+v)", got, c.want, m)
			}
		})
	}
}

// TestUnhealableVerdict: at the shipped defaults (period 30 s), evidence
// that cannot heal gives the digest within 30 s of the event, said as
// such; evidence that may heal waits for its 3 flat periods.
func TestUnhealableVerdict(t *testing.T) {
	c := pulseConfig()
	if c.Period != 30*time.Second || c.ConfirmPeriods != 3 {
		t.Fatalf("shipped period %v, confirm_periods %d: the test assumes 30 s and 3", c.Period, c.ConfirmPeriods)
	}
	stuckFrom := []phase{training, at30(stuck, 80)}
	withdrawn := at30(dead, 80) // gpu02's processes killed at sample 80
	for _, tc := range []struct {
		name     string
		logs     []trace.Sample
		ph2      []phase
		evidence time.Time
		fast     bool
	}{
		{"NVML XID 79", []trace.Sample{deviceAt(80, 79)}, stuckFrom, deviceAt(80, 79).Time, true},
		{"NVML XID 74", []trace.Sample{deviceAt(80, 74)}, stuckFrom, deviceAt(80, 74).Time, true},
		{"a host's processes all killed", nil, []phase{training, withdrawn}, t0.Add(80 * 30 * time.Second), true},
		{"NVML XID 13 waits", []trace.Sample{deviceAt(80, 13)}, stuckFrom, deviceAt(80, 13).Time, false},
		{"a transport error waits", []trace.Sample{ibError(2, 1, 40)}, stuckFrom, ibError(2, 1, 40).Time, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := replayPulse(t, c, pulseJob(160, tc.logs, stuckFrom, tc.ph2))
			if len(r.digests) != 1 || r.digests[0].Detection == nil {
				t.Fatalf("digests %+v, want one", r.digests)
			}
			d := r.digests[0]
			after := d.Time.Sub(tc.evidence)
			words := d.Detection.Words()
			t.Logf("digest %s after the evidence: %s", after, words)
			if !tc.fast {
				if after < time.Duration(c.ConfirmPeriods)*c.Period || d.Detection.Unhealable || strings.Contains(words, "cannot heal") {
					t.Errorf("digest %s after the evidence (%q), want its confirmation of %d periods first", after, words, c.ConfirmPeriods)
				}
				return
			}
			if after < 0 || after > 30*time.Second {
				t.Errorf("digest %s after the evidence, want within 30 s", after)
			}
			if !d.Detection.Unhealable || d.Detection.ConfirmS != 0 || !strings.HasPrefix(words, "evidence (cannot heal)") ||
				!strings.Contains(words, "from the event to the verdict") {
				t.Errorf("detection %+v (%q), want one that cannot heal, unconfirmed", d.Detection, words)
			}
			if d.Detection.By != digest.DetectedEvidence {
				t.Errorf("detected by %q, want evidence", d.Detection.By)
			}
			if tc.logs != nil && (len(d.Culprits) == 0 || d.Culprits[0].Host != "gpu02") {
				t.Errorf("digest %s, culprits %+v, want gpu02", d.Cause, d.Culprits)
			}
		})
	}
	// A host whose processes end while its peer still writes (rank 0's
	// final checkpoint) is no hang at once: confirmation first, which the
	// peer's I/O then denies.
	t.Run("a host ends while its peer writes", func(t *testing.T) {
		r := replayPulse(t, c, pulseJob(100, nil, []phase{training, at30(checkpoint, 78)}, []phase{training, withdrawn}))
		for _, d := range r.digests {
			if d.Detection != nil && d.Detection.Unhealable {
				t.Errorf("digest %+v at %v, want none at once", d.Detection, d.Time)
			}
		}
	})
}

// TestGoneNeedsProcessesFirst: a host whose reading shows none of the
// job's processes is "gone" only once a reading showed some there; before
// (srun still launching there, or failed before it) it is no evidence.
func TestGoneNeedsProcessesFirst(t *testing.T) {
	at := t0.Add(10 * time.Minute)
	reading := func(host string, procs int) trace.Sample {
		return trace.Sample{V: trace.Version, Time: at, Host: host, Job: "4242", Procs: procs}
	}
	j := &jobTrack{hosts: map[string]*hostTrack{}}
	observe := func(s trace.Sample) {
		j.host(s.Host).observeReading(s)
		j.noteTelemetry(s)
	}
	observe(reading("gpu01", 5))
	observe(reading("gpu02", 0))
	if !j.strong.at.IsZero() {
		t.Fatalf("a host that never had processes: evidence %+v, want none", j.strong)
	}
	observe(reading("gpu02", 3))
	observe(reading("gpu02", 0))
	if j.strong.at.IsZero() || !j.strong.final || j.strong.host != "gpu02" {
		t.Fatalf("a host whose processes are gone: evidence %+v, want gpu02's, final", j.strong)
	}
}

// TestUnhealableOutputReadLate: the job's output is read once a period and
// stamped when read, so progress lines printed just before a device
// event can carry a later time than it. They do not clear evidence that
// cannot heal: the digest still comes within 30 s. A line read more than
// a period after the event does show the job went on.
func TestUnhealableOutputReadLate(t *testing.T) {
	c := pulseConfig()
	stuckFrom := []phase{training, at30(stuck, 80)}
	late := func(i int, after time.Duration, step int) trace.Sample {
		s := progressAt(i, step)
		s.Time = s.Time.Add(after)
		return s
	}
	xid := deviceAt(80, 79)
	logs := append(progressEvery(0, 80, 2), xid, late(80, 15*time.Second, 800))
	r := replayPulse(t, c, pulseJob(160, logs, stuckFrom, stuckFrom))
	if len(r.digests) != 1 || r.digests[0].Detection == nil || !r.digests[0].Detection.Unhealable {
		t.Fatalf("digests %+v, want one from the XID that cannot heal", r.digests)
	}
	d := r.digests[0]
	if after := d.Time.Sub(xid.Time); after < 0 || after > 30*time.Second {
		t.Errorf("digest %s after the XID, want within 30 s although a progress line was read after it", after)
	}
	if len(d.Culprits) == 0 || d.Culprits[0].Host != "gpu02" {
		t.Errorf("digest %s, culprits %+v, want gpu02", d.Cause, d.Culprits)
	}

	j := &jobTrack{strong: strongEvidence{at: xid.Time, final: true}}
	for _, tc := range []struct {
		after time.Duration
		final bool
		telem bool
		want  bool
	}{
		{15 * time.Second, true, false, false},
		{c.Period, true, false, false},
		{c.Period + time.Second, true, false, true},
		{15 * time.Second, false, false, true},
		{15 * time.Second, true, true, true},
		{-time.Second, false, false, false},
	} {
		j.strong.final, j.strong.telem = tc.final, tc.telem
		if got := j.wentOnAfter(xid.Time.Add(tc.after), c.Period); got != tc.want {
			t.Errorf("a line %v after evidence (final %v, telemetry %v): went on %v, want %v", tc.after, tc.final, tc.telem, got, tc.want)
		}
	}
}
