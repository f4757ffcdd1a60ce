package trace

import (
	"fmt"
	"time"
)

// The decoding of one sample line, field by field: the top-level object
// (sample, sampleField), then one method per nested object or array (io,
// accel, missing, cgroup_io, io_pressure, log).

// seenFields records which of a sample's required fields a line has.
type seenFields struct {
	v, time, host bool
}

// sample decodes one line into s. The line must hold exactly one object,
// with the fields "v" (Version), "time" and "host".
func (d *decoder) sample(s *Sample) error {
	var seen seenFields
	err := d.object(func(key []byte) error { return d.sampleField(s, key, &seen) })
	if err != nil {
		return err
	}
	if d.ws(); d.i != len(d.b) {
		return d.errf("trailing data after the object")
	}
	switch {
	case !seen.v:
		return fmt.Errorf("%w: no \"v\" (format version)", ErrSyntax)
	case !seen.time:
		return fmt.Errorf("%w: no \"time\"", ErrSyntax)
	case !seen.host:
		return fmt.Errorf("%w: no \"host\"", ErrSyntax)
	}
	return nil
}

// sampleField decodes the value of the sample's field key into s, and
// skips the value of a field it does not know.
func (d *decoder) sampleField(s *Sample, key []byte, seen *seenFields) error {
	var err error
	switch string(key) {
	case "v":
		seen.v = true
		s.V, err = d.version()
	case "time":
		seen.time = true
		s.Time, err = d.timestamp()
	case "host":
		seen.host = true
		s.Host, err = d.internedStr()
	case "job":
		s.Job, err = d.internedStr()
	case "io":
		err = d.ioCounters(&s.IO)
	case "cpu_usec":
		s.CPUUsec, err = d.uint()
	case "procs":
		s.Procs, err = d.int()
	case "procs_d":
		s.ProcsD, err = d.int()
	case "procs_t":
		s.ProcsT, err = d.int()
	case "cpu_throttled_usec":
		s.CPUThrottledUsec, err = d.uint()
	case "accel":
		err = d.accels(s)
	case "missing":
		err = d.missing(s)
	case "cgroup_io":
		err = d.cgroupIO(s)
	case "io_pressure":
		err = d.ioPressure(s)
	case "log":
		err = d.logLine(s)
	default:
		err = d.skip()
	}
	return err
}

// version decodes "v", which must be Version.
func (d *decoder) version() (int, error) {
	start := d.i
	v, err := d.int()
	if err != nil {
		return 0, err
	}
	if v != Version {
		d.i = start
		return 0, fmt.Errorf("%w %d (this reader knows %d)", ErrVersion, v, Version)
	}
	return v, nil
}

// timestamp decodes an RFC 3339 time string.
func (d *decoder) timestamp() (time.Time, error) {
	b, err := d.str()
	if err != nil {
		return time.Time{}, err
	}
	t, err := parseTime(b)
	if err != nil {
		return time.Time{}, d.errf("bad time %q", b)
	}
	return t, nil
}

// internedStr decodes a string and interns it in the Reader: hosts, jobs
// and device ids repeat on every line.
func (d *decoder) internedStr() (string, error) {
	b, err := d.str()
	if err != nil {
		return "", err
	}
	return d.r.intern(b), nil
}

// ioCounters decodes the "io" object (null leaves c as it is).
func (d *decoder) ioCounters(c *IO) error {
	if d.null() {
		return nil
	}
	return d.uints(ioKeys[:], &c.RChar, &c.WChar, &c.ReadBytes, &c.WriteBytes)
}

// ioKeys are the keys of the "io" object, in the order ioCounters gives
// its fields.
var ioKeys = [...]string{"rchar", "wchar", "read_bytes", "write_bytes"}

// accels decodes the "accel" array into s.Accel: nil when empty, else a
// slice of its own. The readings are gathered in the Reader's scratch
// space first, so that a line costs one allocation for them.
func (d *decoder) accels(s *Sample) error {
	acc := d.r.accel[:0]
	defer func() {
		d.r.accel = acc
		s.Accel = nil
		if len(acc) > 0 {
			s.Accel = append(make([]Accel, 0, len(acc)), acc...)
		}
	}()
	return d.array(func() error {
		var a Accel
		err := d.accel(&a)
		acc = append(acc, a)
		return err
	})
}

// accel decodes one object of the "accel" array.
func (d *decoder) accel(a *Accel) error {
	return d.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "id":
			a.ID, err = d.internedStr()
		case "util":
			a.Util, err = d.float()
		case "mem_used_mib":
			a.MemUsedMiB, err = d.float()
		case "power_w":
			a.PowerW, err = d.float()
		case "sm_clock_mhz":
			a.SMClockMHz, err = d.int()
		case "sm_clock_max_mhz":
			a.SMClockMaxMHz, err = d.int()
		case "throttle":
			a.Throttle, err = d.uint()
		default:
			err = d.skip()
		}
		return err
	})
}

// missing decodes the "missing" array of strings into s.Missing.
func (d *decoder) missing(s *Sample) error {
	s.Missing = s.Missing[:0]
	return d.array(func() error {
		b, err := d.str()
		if err == nil {
			s.Missing = append(s.Missing, string(b))
		}
		return err
	})
}

// cgroupIO decodes the "cgroup_io" object into a new s.CgroupIO (null
// leaves it as it is).
func (d *decoder) cgroupIO(s *Sample) error {
	if d.null() {
		return nil
	}
	c := new(CgroupIO)
	s.CgroupIO = c
	return d.uints(cgroupIOKeys[:], &c.ReadBytes, &c.WriteBytes)
}

// ioPressure decodes the "io_pressure" object into a new s.IOPressure (null
// leaves it as it is).
func (d *decoder) ioPressure(s *Sample) error {
	if d.null() {
		return nil
	}
	p := new(Pressure)
	s.IOPressure = p
	return d.uints(pressureKeys[:], &p.SomeUsec, &p.FullUsec)
}

// The keys of the "cgroup_io" and "io_pressure" objects, in the order of
// their fields.
var (
	cgroupIOKeys = [...]string{"rbytes", "wbytes"}
	pressureKeys = [...]string{"some_usec", "full_usec"}
)

// uints decodes an object whose keys hold unsigned integers: the value of
// keys[i] into vals[i]. Other keys are skipped.
func (d *decoder) uints(keys []string, vals ...*uint64) error {
	return d.object(func(k []byte) error {
		for i, key := range keys {
			if string(k) == key {
				var err error
				*vals[i], err = d.uint()
				return err
			}
		}
		return d.skip()
	})
}

// logLine decodes the "log" object into a new s.Log (null leaves it as it
// is): a log record.
func (d *decoder) logLine(s *Sample) error {
	if d.null() {
		return nil
	}
	l := new(Log)
	s.Log = l
	return d.object(func(k []byte) error {
		switch string(k) {
		case "stream":
			b, err := d.str()
			l.Stream = d.r.intern(b)
			return err
		case "line":
			b, err := d.str()
			l.Line = string(b)
			return err
		}
		return d.skip()
	})
}

// parseTime parses RFC 3339 times, with a fast path for UTC times such as
// "2026-11-29T10:00:00Z" and "2026-11-29T10:00:00.123Z".
func parseTime(b []byte) (time.Time, error) {
	if len(b) >= 20 && b[len(b)-1] == 'Z' && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':' && b[16] == ':' {
		num := func(b []byte) (int, bool) {
			n := 0
			for _, c := range b {
				if c < '0' || c > '9' {
					return 0, false
				}
				n = n*10 + int(c-'0')
			}
			return n, true
		}
		y, ok1 := num(b[0:4])
		mo, ok2 := num(b[5:7])
		dd, ok3 := num(b[8:10])
		h, ok4 := num(b[11:13])
		mi, ok5 := num(b[14:16])
		sec, ok6 := num(b[17:19])
		ns, ok7 := 0, true
		rest := b[19 : len(b)-1]
		if len(rest) > 0 {
			if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
				ok7 = false
			} else {
				frac, ok := num(rest[1:])
				ok7 = ok
				for i := len(rest) - 1; i < 9; i++ {
					frac *= 10
				}
				ns = frac
			}
		}
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && mo >= 1 && mo <= 12 && dd >= 1 && dd <= 31 && h < 24 && mi < 60 && sec < 60 {
			t := time.Date(y, time.Month(mo), dd, h, mi, sec, ns, time.UTC)
			if t.Day() == dd {
				return t, nil
			}
		}
	}
	return time.Parse(time.RFC3339Nano, string(b))
}
