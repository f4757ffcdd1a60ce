package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
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
