package hang

import (
	"math"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
)

// SpanVerdict is the judgement of one host's readings over a stretch of
// time shorter than the window (the pulse and evidence rules): whether its
// I/O stayed below Config.IOBytes and its usage was flat, by the window
// rule's own tests.
type SpanVerdict struct {
	// Judged is false when the stretch holds too few readings
	// (Config.MinCoverage of the expected ones) to say.
	Judged bool
	// Flat: I/O below the threshold and usage flat over the stretch.
	Flat    bool
	IOBytes uint64
	Reason  string // the usage reason when flat (ReasonFlatUsageIdle, ...)
	Message string // what was flat, or what was not
	// Evidence holds the numbers, as an event's evidence does.
	Evidence map[string]any
}

// JudgeSpan judges host's readings from from (the first reading at or
// after it: I/O before from is not counted) up to now. It is the window
// rule over a shorter stretch: I/O progress below Config.IOBytes, usage
// flat (devices, CPU), with the coverage counted against the stretch's own
// expected readings (span / period, rounded down). A host not seen, or another job's, is not judged.
func (d *Detector) JudgeSpan(hostName, job string, from, now time.Time) SpanVerdict {
	h := d.hosts[hostName]
	if h == nil || h.job != job || !now.After(from) {
		return SpanVerdict{}
	}
	h.pointsFrom(from)
	for len(h.win) > 0 && h.win[len(h.win)-1].t.After(now) {
		h.win = h.win[:len(h.win)-1]
	}
	span := now.Sub(from)
	// A stretch that is not aligned on the sampling moments holds
	// span/period readings, rounded down, at the least: the window's "+1"
	// would ask for one its phase may not allow.
	expected := max(math.Floor(float64(span)/float64(d.c.Period)), 1)
	need := d.c.MinCoverage * expected
	io := ioOver(nil, h.win)
	ev := map[string]any{
		"io_bytes":     io.bytes,
		"io_threshold": d.c.IOBytes,
		"span_s":       span.Seconds(),
		"coverage":     hangfmt.Round(math.Min(float64(io.n)/expected, 1)),
	}
	v := SpanVerdict{IOBytes: io.bytes, Evidence: ev}
	if io.bytes >= d.c.IOBytes {
		v.Judged, v.Message = true, "I/O progressed: "+bytesText(io.bytes)
		return v
	}
	if float64(io.n) < need {
		v.Message = "too few readings"
		return v
	}
	u := d.usage(h, h.win, need, true)
	u.addEvidence(ev)
	v.Message = u.message()
	switch u.verdict {
	case verdictFlat:
		v.Judged, v.Flat, v.Reason = true, true, u.reason
	case verdictBusy:
		v.Judged = true
	default:
		// Flat but busy on the CPU without a rule for it, or readings
		// missing: not flat, and said so.
		v.Judged = u.cpuKnown
	}
	return v
}

// SinceNoProgress is, for host's readings of job, since when its I/O stayed
// below Config.IOBytes (the newest reading that showed progress); ok is
// false for a host not seen.
func (d *Detector) SinceNoProgress(hostName, job string) (t time.Time, ok bool) {
	h := d.hosts[hostName]
	if h == nil || h.job != job {
		return time.Time{}, false
	}
	return d.sinceNoProgress(h), true
}
