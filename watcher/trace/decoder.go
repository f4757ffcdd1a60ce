package trace

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

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
