// Package kmsg reads the kernel log from /dev/kmsg: one reader for the
// prolog's and epilog's xid check and for the watcher, over one parser of
// its records ("priority,sequence,microseconds,flags;message", each
// continuation line starting with a space).
package kmsg

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strconv"
	"syscall"
)

// Record is one kernel log message.
type Record struct {
	// Seq is the record's sequence number (0 for a plain text line).
	Seq uint64
	// Usec is its time stamp in microseconds since boot (0 for plain text).
	Usec uint64
	// Text is the message without the header and continuation lines.
	Text string
}

// header matches the "priority,sequence,microseconds,flags[,...];" prefix
// of a /dev/kmsg record.
var header = regexp.MustCompile(`^(\d+),(\d+),(\d+),[^;]*;`)

// Parse reads one record or line: a /dev/kmsg record (its continuation
// lines dropped) or a plain text line as syslog writes it. A header whose
// numbers are out of range is read as text, so that a saturated sequence
// number cannot move a saved position past every later record.
func Parse(b []byte) Record {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	m := header.FindSubmatchIndex(b)
	if m == nil {
		return Record{Text: string(b)}
	}
	seq, err1 := strconv.ParseUint(string(b[m[4]:m[5]]), 10, 64)
	usec, err2 := strconv.ParseUint(string(b[m[6]:m[7]]), 10, 64)
	if err1 != nil || err2 != nil {
		return Record{Text: string(b)}
	}
	return Record{Seq: seq, Usec: usec, Text: string(b[m[1]:])}
}

// Open opens a /dev/kmsg character device for reading without blocking
// (and without the Go runtime's poller, which the device does not
// support).
func Open(path string) (int, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// maxReads bounds one ReadAvailable, whatever the kernel logs meanwhile.
const maxReads = 1 << 16

// ReadAvailable reads the records available now from fd (opened with
// Open), those whose sequence number is above after (every one when all is
// set), at most limit of them (0: no limit), without blocking: records the
// kernel overwrote before they were read are skipped. It returns them and
// the highest sequence number seen.
func ReadAvailable(fd int, after uint64, all bool, limit int) ([]Record, uint64, error) {
	last := after
	var out []Record
	buf := make([]byte, 16<<10) // a record is at most 8 KiB
	for range maxReads {
		n, err := syscall.Read(fd, buf)
		switch {
		case errors.Is(err, syscall.EAGAIN):
			return out, last, nil
		case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return out, last, err
		case n <= 0:
			return out, last, nil
		}
		// A character device returns one record (and its continuation
		// lines) per read; a file standing in for it (tests, a dump)
		// returns many.
		for _, line := range bytes.Split(buf[:n], []byte{'\n'}) {
			if len(line) == 0 || line[0] == ' ' {
				continue
			}
			r := Parse(line)
			if !all && r.Seq <= after {
				continue
			}
			out = append(out, r)
			last = max(last, r.Seq)
		}
		if limit > 0 && len(out) >= limit {
			return out, last, nil
		}
	}
	return out, last, nil
}
