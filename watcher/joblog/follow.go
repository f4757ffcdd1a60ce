package joblog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// DefaultMaxRead is how much of a file one Poll reads at most, in bytes.
const DefaultMaxRead = 1 << 20

// Follower reads the complete lines appended to a file since Offset, like
// `tail -F`, a bounded amount per Poll: a job that writes gigabytes of
// output costs the watcher at most MaxRead bytes per period, and the rest is
// read in later polls.
//
// A line is returned once it is complete (ends in a newline); an incomplete
// last line waits for the next Poll. A line longer than MaxLine is cut to
// MaxLine bytes and the rest of it skipped. When the file shrinks below
// Offset (truncated) or the path names another file (rotated, or removed and
// created again), reading starts again at the beginning of the file the path
// names; lines appended to the old file after the last Poll are not read.
// A file that does not exist (yet) gives no lines and no error.
type Follower struct {
	Path    string // the file to follow
	Offset  int64  // where the next Poll reads from, bytes; save it to go on later
	MaxRead int    // bytes read per Poll at most; 0 is DefaultMaxRead

	ino      uint64 // the file Offset belongs to; 0 until the first Poll
	skipping bool   // in the rest of a line longer than MaxLine
	buf      []byte
}

// Poll returns the complete lines appended since the last Poll (without
// their newlines), as a terminal shows them: frames a '\r' ends are lines
// of their own, escape codes dropped (see lines).
func (f *Follower) Poll() ([]string, error) {
	file, err := os.Open(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("joblog: %w", err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("joblog: %w", err)
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	if (f.ino != 0 && ino != f.ino) || fi.Size() < f.Offset {
		f.Offset, f.skipping = 0, false // rotated or truncated
	}
	f.ino = ino
	maxRead := f.MaxRead
	if maxRead <= 0 {
		maxRead = DefaultMaxRead
	}
	if cap(f.buf) < maxRead {
		f.buf = make([]byte, maxRead)
	}
	n, err := file.ReadAt(f.buf[:maxRead], f.Offset)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("joblog: %s: %w", f.Path, err)
	}
	return f.lines(f.buf[:n], n == maxRead), nil
}

// lines cuts data, read at Offset, into complete lines and moves Offset
// past them. full says the read filled the buffer: a buffer without a
// line end then holds the start of an overlong line.
//
// Lines are read as a terminal shows them (see Terminal): a '\r' ends a
// frame that the next one overwrites (tqdm, Lightning and Keras redraw
// their bars so, and a bar may print no '\n' for a whole epoch). Of a run
// of frames read in one Poll, the newest complete '\r' frame and the
// frame the '\n' ends are lines; the frames between them were shown and
// overwritten within one period, and a frame still being written waits
// for the next Poll. A frame is cut to MaxLine bytes on its own.
func (f *Follower) lines(data []byte, full bool) []string {
	var out []string
	start := f.Offset
	pending, has := "", false // the newest '\r' frame not yet returned
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			break
		}
		frame, end := data[:i], data[i]
		f.Offset += int64(i + 1)
		data = data[i+1:]
		if f.skipping {
			f.skipping = false
			continue // the rest of an overlong frame, already returned
		}
		text := Terminal(string(cut(frame)))
		if end == '\r' {
			if strings.TrimSpace(text) != "" {
				pending, has = text, true
			}
			continue
		}
		if has && pending != text {
			out = append(out, pending)
		}
		if !has || text != "" {
			out = append(out, text)
		}
		pending, has = "", false
	}
	if has {
		out = append(out, pending)
	}
	if full && f.Offset == start && len(data) > 0 {
		// One frame fills the whole buffer: keep its start, skip the rest.
		if !f.skipping {
			out = append(out, Terminal(string(cut(data))))
		}
		f.skipping = true
		f.Offset += int64(len(data))
	}
	return out
}

// cut keeps the first MaxLine bytes of line.
func cut(line []byte) []byte {
	if len(line) > MaxLine {
		line = line[:MaxLine]
	}
	return line
}
