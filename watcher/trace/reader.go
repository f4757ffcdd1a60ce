package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxLine is the longest line a Reader accepts, in bytes.
const MaxLine = 16 << 20

// LineError is the error of a Reader for one bad line. It wraps ErrSyntax or
// ErrVersion.
type LineError struct {
	Line int   // 1-based line number
	Err  error // what was wrong
}

func (e *LineError) Error() string { return fmt.Sprintf("trace: line %d: %v", e.Line, e.Err) }

// Unwrap returns the underlying error.
func (e *LineError) Unwrap() error { return e.Err }

// Reader reads samples written by a Writer. Blank lines are skipped; unknown
// fields are ignored; a line with another "v" than Version is an error
// wrapping ErrVersion, and a malformed one an error wrapping ErrSyntax, both
// of type *LineError naming the line.
type Reader struct {
	br   *bufio.Reader
	src  []byte // instead of br: the whole input, for ReadParallel's chunks
	line int
	long []byte
	d    decoder
	// interned strings: hosts, jobs and device ids repeat on every line.
	strs map[string]string
	// accel is scratch space for one line's accelerator readings.
	accel []Accel
}

// NewReader returns a Reader that reads from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), strs: make(map[string]string)}
}

// Line is the number of the line last returned or rejected by Next (1-based).
func (r *Reader) Line() int { return r.line }

// Next returns the next sample, or io.EOF at the end of the input. After an
// error naming a bad line Next may be called again to go on with the next
// line; other errors (from the underlying reader) are returned as is.
func (r *Reader) Next() (Sample, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return Sample{}, err
		}
		r.line++
		if isBlank(line) {
			continue
		}
		var s Sample
		r.d = decoder{b: line, r: r}
		if err := r.d.sample(&s); err != nil {
			return Sample{}, &LineError{Line: r.line, Err: err}
		}
		return s, nil
	}
}

// newBytesReader reads lines straight from data, without copying.
func newBytesReader(data []byte) *Reader {
	return &Reader{src: data, strs: make(map[string]string)}
}

func (r *Reader) readLine() ([]byte, error) {
	if r.br == nil {
		if len(r.src) == 0 {
			return nil, io.EOF
		}
		i := bytes.IndexByte(r.src, '\n')
		if i < 0 {
			line := r.src
			r.src = nil
			return line, nil
		}
		line := r.src[:i]
		r.src = r.src[i+1:]
		return line, nil
	}
	line, err := r.br.ReadSlice('\n')
	if err == nil {
		return line[:len(line)-1], nil
	}
	if errors.Is(err, bufio.ErrBufferFull) {
		r.long = append(r.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(r.long) > MaxLine {
				return nil, fmt.Errorf("trace: line %d longer than %d bytes", r.line+1, MaxLine)
			}
			line, err = r.br.ReadSlice('\n')
			r.long = append(r.long, line...)
		}
		if err == nil {
			return r.long[:len(r.long)-1], nil
		}
		line = r.long
	}
	if err == io.EOF && len(line) > 0 {
		return line, nil
	}
	if err == io.EOF {
		return nil, io.EOF
	}
	return nil, fmt.Errorf("trace: read: %w", err)
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

func (r *Reader) intern(b []byte) string {
	if s, ok := r.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(r.strs) < 1<<16 {
		r.strs[s] = s
	}
	return s
}

// decoder is a small hand-written JSON decoder for one line.
type decoder struct {
	b   []byte
	i   int
	r   *Reader
	tmp []byte
}

func (d *decoder) errf(format string, args ...any) error {
	return fmt.Errorf("%w: %s at byte %d", ErrSyntax, fmt.Sprintf(format, args...), d.i+1)
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\r', '\n':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *decoder) expect(c byte) error {
	if d.peek() != c {
		if d.i >= len(d.b) {
			return d.errf("unexpected end of line, want %q", c)
		}
		return d.errf("want %q, got %q", c, d.b[d.i])
	}
	d.i++
	return nil
}

// object calls field for each key of an object; field must consume the value.
func (d *decoder) object(field func(key []byte) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.i++
		return nil
	}
	for {
		key, err := d.str()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.errf("want ',' or '}' in object")
		}
	}
}

// array calls elem for each element of an array (or not at all for null).
func (d *decoder) array(elem func() error) error {
	if d.null() {
		return nil
	}
	if err := d.expect('['); err != nil {
		return err
	}
	if d.peek() == ']' {
		d.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return nil
		default:
			return d.errf("want ',' or ']' in array")
		}
	}
}

func (d *decoder) null() bool {
	d.ws()
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// str returns a string's bytes, unescaped. The slice is valid until the next
// call of str.
func (d *decoder) str() ([]byte, error) {
	if err := d.expect('"'); err != nil {
		return nil, err
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			s := d.b[start:d.i]
			d.i++
			return s, nil
		}
		if c == '\\' {
			return d.strSlow(start)
		}
		if c < 0x20 {
			return nil, d.errf("control character in string")
		}
		d.i++
	}
	return nil, d.errf("unterminated string")
}

func (d *decoder) strSlow(start int) ([]byte, error) {
	d.tmp = append(d.tmp[:0], d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.tmp, nil
		case c < 0x20:
			return nil, d.errf("control character in string")
		case c != '\\':
			d.tmp = append(d.tmp, c)
			d.i++
			continue
		}
		d.i++
		if d.i >= len(d.b) {
			break
		}
		e := d.b[d.i]
		d.i++
		switch e {
		case '"', '\\', '/':
			d.tmp = append(d.tmp, e)
		case 'b':
			d.tmp = append(d.tmp, '\b')
		case 'f':
			d.tmp = append(d.tmp, '\f')
		case 'n':
			d.tmp = append(d.tmp, '\n')
		case 'r':
			d.tmp = append(d.tmp, '\r')
		case 't':
			d.tmp = append(d.tmp, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return nil, d.errf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
					save := d.i
					d.i += 2
					if x, ok := d.hex4(); ok {
						r2 = x
					} else {
						d.i = save
					}
				}
				r = utf16.DecodeRune(r, r2)
			}
			d.tmp = utf8.AppendRune(d.tmp, r)
		default:
			return nil, d.errf("bad escape \\%c", e)
		}
	}
	return nil, d.errf("unterminated string")
}

func (d *decoder) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return r, true
}

// numBytes returns the bytes of a JSON number.
func (d *decoder) numBytes() ([]byte, error) {
	d.ws()
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			d.i++
			continue
		}
		break
	}
	if start == d.i {
		return nil, d.errf("want a number")
	}
	return d.b[start:d.i], nil
}

// uint reads a non-negative integer (null reads as 0).
func (d *decoder) uint() (uint64, error) {
	if d.null() {
		return 0, nil
	}
	start := d.i
	b, err := d.numBytes()
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			d.i = start
			return 0, d.errf("want a non-negative integer, got %q", b)
		}
		if n > (1<<64-1-9)/10 {
			v, err := strconv.ParseUint(string(b), 10, 64)
			if err != nil {
				d.i = start
				return 0, d.errf("integer %s out of range", b)
			}
			return v, nil
		}
		n = n*10 + uint64(c-'0')
	}
	return n, nil
}

func (d *decoder) int() (int, error) {
	start := d.i
	n, err := d.uint()
	if err != nil {
		return 0, err
	}
	if n > 1<<31 {
		d.i = start
		return 0, d.errf("integer %d out of range", n)
	}
	return int(n), nil
}

func (d *decoder) float() (float64, error) {
	if d.null() {
		return 0, nil
	}
	start := d.i
	b, err := d.numBytes()
	if err != nil {
		return 0, err
	}
	// Fast path: small plain integers ("97").
	if len(b) < 16 {
		var n int64
		ok := true
		for _, c := range b {
			if c < '0' || c > '9' {
				ok = false
				break
			}
			n = n*10 + int64(c-'0')
		}
		if ok {
			return float64(n), nil
		}
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		d.i = start
		return 0, d.errf("bad number %q", b)
	}
	return f, nil
}

// skip consumes any JSON value.
func (d *decoder) skip() error {
	switch c := d.peek(); {
	case c == '{':
		return d.object(func([]byte) error { return d.skip() })
	case c == '[':
		return d.array(d.skip)
	case c == '"':
		_, err := d.str()
		return err
	case c == 't' && len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		d.i += 4
	case c == 'f' && len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		d.i += 5
	case c == 'n' && d.null():
	case c == '-' || (c >= '0' && c <= '9'):
		b, err := d.numBytes()
		if err != nil {
			return err
		}
		if _, err := strconv.ParseFloat(string(b), 64); err != nil {
			return d.errf("bad number %q", b)
		}
	default:
		return d.errf("want a value")
	}
	return nil
}

func (d *decoder) sample(s *Sample) error {
	var haveV, haveTime, haveHost bool
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "v":
			haveV = true
			var v int
			start := d.i
			if v, err = d.int(); err != nil {
				return err
			}
			if v != Version {
				d.i = start
				return fmt.Errorf("%w %d (this reader knows %d)", ErrVersion, v, Version)
			}
			s.V = v
		case "time":
			haveTime = true
			var b []byte
			if b, err = d.str(); err != nil {
				return err
			}
			if s.Time, err = parseTime(b); err != nil {
				return d.errf("bad time %q", b)
			}
		case "host":
			haveHost = true
			var b []byte
			if b, err = d.str(); err != nil {
				return err
			}
			s.Host = d.r.intern(b)
		case "job":
			var b []byte
			if b, err = d.str(); err != nil {
				return err
			}
			s.Job = d.r.intern(b)
		case "io":
			if d.null() {
				return nil
			}
			return d.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "rchar":
					s.IO.RChar, err = d.uint()
				case "wchar":
					s.IO.WChar, err = d.uint()
				case "read_bytes":
					s.IO.ReadBytes, err = d.uint()
				case "write_bytes":
					s.IO.WriteBytes, err = d.uint()
				default:
					err = d.skip()
				}
				return err
			})
		case "cpu_usec":
			s.CPUUsec, err = d.uint()
		case "procs":
			s.Procs, err = d.int()
		case "procs_d":
			s.ProcsD, err = d.int()
		case "accel":
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
				err := d.object(func(k []byte) error {
					var err error
					switch string(k) {
					case "id":
						var b []byte
						if b, err = d.str(); err == nil {
							a.ID = d.r.intern(b)
						}
					case "util":
						a.Util, err = d.float()
					case "mem_used_mib":
						a.MemUsedMiB, err = d.float()
					case "power_w":
						a.PowerW, err = d.float()
					default:
						err = d.skip()
					}
					return err
				})
				acc = append(acc, a)
				return err
			})
		case "missing":
			s.Missing = s.Missing[:0]
			return d.array(func() error {
				b, err := d.str()
				if err == nil {
					s.Missing = append(s.Missing, string(b))
				}
				return err
			})
		case "cgroup_io":
			if d.null() {
				return nil
			}
			c := new(CgroupIO)
			s.CgroupIO = c
			return d.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "rbytes":
					c.ReadBytes, err = d.uint()
				case "wbytes":
					c.WriteBytes, err = d.uint()
				default:
					err = d.skip()
				}
				return err
			})
		case "io_pressure":
			if d.null() {
				return nil
			}
			p := new(Pressure)
			s.IOPressure = p
			return d.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "some_usec":
					p.SomeUsec, err = d.uint()
				case "full_usec":
					p.FullUsec, err = d.uint()
				default:
					err = d.skip()
				}
				return err
			})
		default:
			return d.skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	if d.ws(); d.i != len(d.b) {
		return d.errf("trailing data after the object")
	}
	switch {
	case !haveV:
		return fmt.Errorf("%w: no \"v\" (format version)", ErrSyntax)
	case !haveTime:
		return fmt.Errorf("%w: no \"time\"", ErrSyntax)
	case !haveHost:
		return fmt.Errorf("%w: no \"host\"", ErrSyntax)
	}
	return nil
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
