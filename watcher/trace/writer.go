package trace

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// Writer writes samples as JSON lines, one line per Write.
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer that writes to w. Each Write is one w.Write call
// of one complete line, so an appending file never holds half a line from a
// successful Write.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, buf: make([]byte, 0, 512)} }

// Write writes s as one line. A zero s.V is written as Version; any other
// value than Version is an error.
func (w *Writer) Write(s Sample) error {
	if s.V != 0 && s.V != Version {
		return fmt.Errorf("trace: %w: writing v%d, this writer knows v%d", ErrVersion, s.V, Version)
	}
	w.buf = AppendSample(w.buf[:0], &s)
	w.buf = append(w.buf, '\n')
	if _, err := w.w.Write(w.buf); err != nil {
		return fmt.Errorf("trace: write: %w", err)
	}
	return nil
}

// AppendSample appends the JSON encoding of s (without newline) to b. A log
// record (s.Log set) is written with its header fields and "log" only.
func AppendSample(b []byte, s *Sample) []byte {
	if s.Log != nil {
		return appendLog(b, s)
	}
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, `,"time":"`...)
	b = s.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","host":`...)
	b = appendString(b, s.Host)
	b = append(b, `,"job":`...)
	b = appendString(b, s.Job)
	b = append(b, `,"io":{"rchar":`...)
	b = strconv.AppendUint(b, s.IO.RChar, 10)
	b = append(b, `,"wchar":`...)
	b = strconv.AppendUint(b, s.IO.WChar, 10)
	b = append(b, `,"read_bytes":`...)
	b = strconv.AppendUint(b, s.IO.ReadBytes, 10)
	b = append(b, `,"write_bytes":`...)
	b = strconv.AppendUint(b, s.IO.WriteBytes, 10)
	b = append(b, `},"cpu_usec":`...)
	b = strconv.AppendUint(b, s.CPUUsec, 10)
	b = append(b, `,"procs":`...)
	b = strconv.AppendInt(b, int64(s.Procs), 10)
	b = append(b, `,"procs_d":`...)
	b = strconv.AppendInt(b, int64(s.ProcsD), 10)
	if s.ProcsT != 0 {
		b = append(b, `,"procs_t":`...)
		b = strconv.AppendInt(b, int64(s.ProcsT), 10)
	}
	if s.CPUThrottledUsec != 0 {
		b = append(b, `,"cpu_throttled_usec":`...)
		b = strconv.AppendUint(b, s.CPUThrottledUsec, 10)
	}
	b = appendAccels(b, s.Accel)
	if len(s.Missing) > 0 {
		b = append(b, `,"missing":[`...)
		for i, m := range s.Missing {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, m)
		}
		b = append(b, ']')
	}
	if s.CgroupIO != nil {
		b = append(b, `,"cgroup_io":{"rbytes":`...)
		b = strconv.AppendUint(b, s.CgroupIO.ReadBytes, 10)
		b = append(b, `,"wbytes":`...)
		b = strconv.AppendUint(b, s.CgroupIO.WriteBytes, 10)
		b = append(b, '}')
	}
	if s.IOPressure != nil {
		b = append(b, `,"io_pressure":{"some_usec":`...)
		b = strconv.AppendUint(b, s.IOPressure.SomeUsec, 10)
		b = append(b, `,"full_usec":`...)
		b = strconv.AppendUint(b, s.IOPressure.FullUsec, 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendAccels appends the "accel" field of a sample to b.
func appendAccels(b []byte, accels []Accel) []byte {
	b = append(b, `,"accel":[`...)
	for i, a := range accels {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendString(b, a.ID)
		b = append(b, `,"util":`...)
		b = appendFloat(b, a.Util)
		b = append(b, `,"mem_used_mib":`...)
		b = appendFloat(b, a.MemUsedMiB)
		b = append(b, `,"power_w":`...)
		b = appendFloat(b, a.PowerW)
		if a.SMClockMHz != 0 {
			b = append(b, `,"sm_clock_mhz":`...)
			b = strconv.AppendInt(b, int64(a.SMClockMHz), 10)
		}
		if a.SMClockMaxMHz != 0 {
			b = append(b, `,"sm_clock_max_mhz":`...)
			b = strconv.AppendInt(b, int64(a.SMClockMaxMHz), 10)
		}
		if a.Throttle != 0 {
			b = append(b, `,"throttle":`...)
			b = strconv.AppendUint(b, a.Throttle, 10)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendLog appends the JSON encoding of the log record s to b.
func appendLog(b []byte, s *Sample) []byte {
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, `,"time":"`...)
	b = s.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","host":`...)
	b = appendString(b, s.Host)
	b = append(b, `,"job":`...)
	b = appendString(b, s.Job)
	b = append(b, `,"log":{"stream":`...)
	b = appendString(b, s.Log.Stream)
	b = append(b, `,"line":`...)
	b = appendString(b, s.Log.Line)
	return append(b, `}}`...)
}

// appendFloat writes f the way encoding/json does for ordinary values; NaN
// and infinities, which JSON cannot hold, are written as 0.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.AppendFloat(b, f, 'e', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaping what JSON requires and
// replacing invalid UTF-8 with U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
