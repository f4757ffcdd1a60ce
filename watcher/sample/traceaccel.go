package sample

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// ErrAccelMissing is returned by TraceAccelerators for a recorded line
// whose accelerator readings were missing ("accel" in Missing).
var ErrAccelMissing = errors.New("sample: accelerator readings missing in the trace")

// TraceAccelerators replays the accel readings of a recorded trace (the
// vigil-watch --record format) as an Accelerators source, so that a real job
// on a machine without accelerators can be watched as if its devices behaved
// as recorded.
//
// By time (the default): the first SampleAt call anchors the trace's first
// line at the sampler's clock; each call then returns the line whose time,
// relative to the trace's first line, is the latest not after the time
// elapsed since the anchor. A trace recorded at one period can so feed a
// watcher running at another, and a trace with a change after ten minutes
// changes the readings ten minutes into the watch. After the last line, the
// last readings repeat.
//
// By sequence (BySequence set, or through Sample): each call returns the
// next line's readings, and the last line's readings once the trace is used
// up.
type TraceAccelerators struct {
	// BySequence makes SampleAt ignore the clock and step through the lines.
	BySequence bool

	offs     []time.Duration // line time relative to the first line
	readings [][]trace.Accel
	missing  []bool
	next     int
	anchor   time.Time
	anchored bool
}

// NewTraceAccelerators reads the whole trace from r and keeps the lines of
// host. A trace holding a single host may stand for any host: when no line
// names host and all lines name one other host, those lines are used. With
// host "", the trace must hold a single host. Lines must be in time order.
func NewTraceAccelerators(r io.Reader, host string) (*TraceAccelerators, error) {
	rd := trace.NewReader(r)
	t := &TraceAccelerators{}
	var first time.Time
	var mine, other []trace.Sample
	hosts := map[string]bool{}
	for {
		s, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("sample: accelerator trace: %w", err)
		}
		if s.IsLog() {
			continue // a matched log line, not a reading
		}
		hosts[s.Host] = true
		if host != "" && s.Host == host {
			mine = append(mine, s)
		} else if len(hosts) == 1 {
			other = append(other, s)
		}
	}
	if len(mine) == 0 {
		if len(hosts) != 1 {
			return nil, fmt.Errorf("sample: accelerator trace: no lines for host %q among %d hosts", host, len(hosts))
		}
		mine = other
	}
	for i, s := range mine {
		if i == 0 {
			first = s.Time
		} else if s.Time.Before(mine[i-1].Time) {
			return nil, fmt.Errorf("sample: accelerator trace: host %s: samples out of time order at %s", s.Host, s.Time.Format(time.RFC3339))
		}
		t.offs = append(t.offs, s.Time.Sub(first))
		t.readings = append(t.readings, s.Accel)
		t.missing = append(t.missing, s.HasMissing("accel"))
	}
	return t, nil
}

// Len is the number of lines replayed.
func (t *TraceAccelerators) Len() int { return len(t.readings) }

// Sample returns the next line's readings (by sequence).
func (t *TraceAccelerators) Sample() ([]trace.Accel, error) {
	i := min(t.next, len(t.readings)-1)
	if t.next < len(t.readings) {
		t.next++
	}
	return t.line(i)
}

// SampleAt returns the readings for the sampler's time now (see the type's
// documentation).
func (t *TraceAccelerators) SampleAt(now time.Time) ([]trace.Accel, error) {
	if t.BySequence {
		return t.Sample()
	}
	if !t.anchored {
		t.anchor, t.anchored = now, true
	}
	el := now.Sub(t.anchor)
	// Latest line with offset <= elapsed; offsets are sorted.
	lo, hi := 0, len(t.offs)
	for lo < hi {
		m := (lo + hi) / 2
		if t.offs[m] <= el {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return t.line(max(lo-1, 0))
}

func (t *TraceAccelerators) line(i int) ([]trace.Accel, error) {
	out := append([]trace.Accel(nil), t.readings[i]...)
	if t.missing[i] {
		return out, ErrAccelMissing
	}
	return out, nil
}
