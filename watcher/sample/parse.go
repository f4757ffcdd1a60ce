package sample

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// ErrFormat is wrapped by the parsers' errors.
var ErrFormat = errors.New("sample: unexpected file format")

// ProcStat is what the sampler takes from /proc/PID/stat.
type ProcStat struct {
	State  byte   // R, S, D, Z, T, ...
	UTime  uint64 // user time, clock ticks
	STime  uint64 // system time, clock ticks
	CUTime uint64 // user time of waited-for children, clock ticks
	CSTime uint64 // system time of waited-for children, clock ticks
}

// Ticks is the process's CPU time including its waited-for children, in
// clock ticks.
func (p ProcStat) Ticks() uint64 { return p.UTime + p.STime + p.CUTime + p.CSTime }

// ParseProcIO parses /proc/PID/io ("rchar: 123\n..."). Keys other than
// rchar, wchar, read_bytes and write_bytes are ignored; all four must be
// present.
func ParseProcIO(b []byte) (trace.IO, error) {
	var io trace.IO
	var seen int
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue
		}
		var dst *uint64
		var bit int
		switch string(line[:colon]) {
		case "rchar":
			dst, bit = &io.RChar, 1
		case "wchar":
			dst, bit = &io.WChar, 2
		case "read_bytes":
			dst, bit = &io.ReadBytes, 4
		case "write_bytes":
			dst, bit = &io.WriteBytes, 8
		default:
			continue
		}
		v, ok := parseUint(bytes.TrimSpace(line[colon+1:]))
		if !ok {
			return trace.IO{}, fmt.Errorf("%w: /proc/PID/io: bad value in %q", ErrFormat, line)
		}
		*dst = v
		seen |= bit
	}
	if seen != 15 {
		return trace.IO{}, fmt.Errorf("%w: /proc/PID/io: missing counters", ErrFormat)
	}
	return io, nil
}

// ParseProcStat parses /proc/PID/stat. The command name may hold spaces and
// parentheses: fields are counted after the last ')'.
func ParseProcStat(b []byte) (ProcStat, error) {
	var ps ProcStat
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ps, fmt.Errorf("%w: /proc/PID/stat: no ')'", ErrFormat)
	}
	b = b[i+1:]
	// Fields after the command: 3 state, ... 14 utime, 15 stime, 16 cutime, 17 cstime.
	field := 2
	for len(b) > 0 && field < 17 {
		for len(b) > 0 && b[0] == ' ' {
			b = b[1:]
		}
		j := 0
		for j < len(b) && b[j] != ' ' && b[j] != '\n' {
			j++
		}
		tok := b[:j]
		b = b[j:]
		if len(tok) == 0 {
			break
		}
		field++
		var dst *uint64
		switch field {
		case 3:
			ps.State = tok[0]
			continue
		case 14:
			dst = &ps.UTime
		case 15:
			dst = &ps.STime
		case 16:
			dst = &ps.CUTime
		case 17:
			dst = &ps.CSTime
		default:
			continue
		}
		v, ok := parseUint(tok)
		if !ok {
			// cutime/cstime are signed in the kernel's format; never negative in practice.
			if n, err := strconv.ParseInt(string(tok), 10, 64); err == nil && n < 0 {
				v = 0
			} else {
				return ProcStat{}, fmt.Errorf("%w: /proc/PID/stat: bad field %d %q", ErrFormat, field, tok)
			}
		}
		*dst = v
	}
	if field < 17 {
		return ProcStat{}, fmt.Errorf("%w: /proc/PID/stat: %d fields, want at least 17", ErrFormat, field)
	}
	return ps, nil
}

// ParseCPUStat returns usage_usec from a cgroup v2 cpu.stat file, in
// microseconds.
func ParseCPUStat(b []byte) (uint64, error) {
	v, ok, err := keyValue(b, "usage_usec", ' ')
	if err != nil {
		return 0, fmt.Errorf("cpu.stat: %w", err)
	}
	if !ok {
		return 0, fmt.Errorf("%w: cpu.stat: no usage_usec", ErrFormat)
	}
	return v, nil
}

// ParseCPUAcctUsage parses a cgroup v1 cpuacct.usage file (nanoseconds) and
// returns microseconds.
func ParseCPUAcctUsage(b []byte) (uint64, error) {
	v, ok := parseUint(bytes.TrimSpace(b))
	if !ok {
		return 0, fmt.Errorf("%w: cpuacct.usage: %q", ErrFormat, bytes.TrimSpace(b))
	}
	return v / 1000, nil
}

// ParseBlkioServiceBytes sums the Read and Write lines of a cgroup v1
// blkio.throttle.io_service_bytes(_recursive) file over all devices, in
// bytes. ("8:0 Read 4096", "Total 8192" lines are skipped.)
func ParseBlkioServiceBytes(b []byte) (trace.CgroupIO, error) {
	var c trace.CgroupIO
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) != 3 {
			continue
		}
		v, ok := parseUint(f[2])
		if !ok {
			return trace.CgroupIO{}, fmt.Errorf("%w: blkio: bad line %q", ErrFormat, line)
		}
		var dst *uint64
		switch string(f[1]) {
		case "Read":
			dst = &c.ReadBytes
		case "Write":
			dst = &c.WriteBytes
		default:
			continue
		}
		if !addTo(dst, v) {
			return trace.CgroupIO{}, fmt.Errorf("%w: blkio: sum overflows at %q", ErrFormat, line)
		}
	}
	return c, nil
}

// ParseIOStat sums rbytes and wbytes of a cgroup v2 io.stat file over all
// devices, in bytes ("8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0").
func ParseIOStat(b []byte) (trace.CgroupIO, error) {
	var c trace.CgroupIO
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.Fields(line)
		for _, kv := range f[min(1, len(f)):] {
			k, v, ok := bytes.Cut(kv, []byte{'='})
			if !ok {
				return trace.CgroupIO{}, fmt.Errorf("%w: io.stat: bad field %q", ErrFormat, kv)
			}
			var dst *uint64
			switch string(k) {
			case "rbytes":
				dst = &c.ReadBytes
			case "wbytes":
				dst = &c.WriteBytes
			default:
				continue
			}
			n, ok := parseUint(v)
			if !ok {
				return trace.CgroupIO{}, fmt.Errorf("%w: io.stat: bad field %q", ErrFormat, kv)
			}
			if !addTo(dst, n) {
				return trace.CgroupIO{}, fmt.Errorf("%w: io.stat: sum overflows at %q", ErrFormat, kv)
			}
		}
	}
	return c, nil
}

// ParsePressure returns the total= values of the "some" and "full" lines of
// a pressure file (io.pressure), in microseconds.
func ParsePressure(b []byte) (trace.Pressure, error) {
	var p trace.Pressure
	var seen int
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		var dst *uint64
		switch string(f[0]) {
		case "some":
			dst, seen = &p.SomeUsec, seen|1
		case "full":
			dst, seen = &p.FullUsec, seen|2
		default:
			continue
		}
		found := false
		for _, kv := range f[1:] {
			if v, ok := bytes.CutPrefix(kv, []byte("total=")); ok {
				n, ok := parseUint(v)
				if !ok {
					return trace.Pressure{}, fmt.Errorf("%w: pressure: bad %q", ErrFormat, kv)
				}
				*dst, found = n, true
			}
		}
		if !found {
			return trace.Pressure{}, fmt.Errorf("%w: pressure: no total= in %q", ErrFormat, line)
		}
	}
	if seen&1 == 0 {
		return trace.Pressure{}, fmt.Errorf("%w: pressure: no \"some\" line", ErrFormat)
	}
	return p, nil
}

// keyValue finds "key<sep>value" lines.
func keyValue(b []byte, key string, sep byte) (uint64, bool, error) {
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		k, v, ok := bytes.Cut(line, []byte{sep})
		if !ok || string(k) != key {
			continue
		}
		n, ok := parseUint(bytes.TrimSpace(v))
		if !ok {
			return 0, false, fmt.Errorf("%w: bad value in %q", ErrFormat, line)
		}
		return n, true, nil
	}
	return 0, false, nil
}

// addTo adds v to *dst unless the sum would wrap around: a total over
// devices that wrapped would read as a counter going backwards.
func addTo(dst *uint64, v uint64) bool {
	if *dst > 1<<64-1-v {
		return false
	}
	*dst += v
	return true
}

func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
