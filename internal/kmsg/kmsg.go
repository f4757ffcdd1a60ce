// Package kmsg reads the kernel log from /dev/kmsg: one reader for the
// prolog's and epilog's xid check and for the watcher, over one parser of
// its records ("priority,sequence,microseconds,flags;message", each
// continuation line starting with a space) and of the text lines syslog
// and dmesg write.
//
// Only the kernel's own messages are evidence. A record written to
// /dev/kmsg from user space carries a facility other than the kernel's
// (the kernel replaces facility 0 with LOG_USER on every write), and a
// syslog line of another program names another tag: both are marked User
// and ReadAvailable drops them. Within a kernel message, what a user can
// choose (a process name, the name of a file the kernel prints in a
// segfault line) never stands at the start of the message in a form a
// driver's line takes, so a reader of driver lines matches at the start of
// Text, never anywhere in it.
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
	// Text is the message: without the record's header and continuation
	// lines, or, for a text line, without the syslog header ("Nov 29
	// 14:55:40 n7 kernel: ") and the kernel's time stamp ("[ 3240.118812] ").
	Text string
	// User is set when the message was not the kernel's: a record of a
	// facility other than the kernel's (written to /dev/kmsg from user
	// space), or a syslog line whose program is not "kernel".
	User bool
	// Plain is set for a text line (syslog, journalctl, dmesg), not a
	// /dev/kmsg record. Only a record is sure to be one whole message: a
	// message holding a newline (a user's file name in a segfault line can)
	// is one record in /dev/kmsg, its newline written "\x0a", but syslog
	// daemons that read the kernel log through syslog(2) or /proc/kmsg
	// write each of its lines as a line of its own, with the kernel's tag.
	Plain bool
}

var (
	// header matches the "priority,sequence,microseconds,flags[,...];"
	// prefix of a /dev/kmsg record; the priority is facility*8+level.
	header = regexp.MustCompile(`^(\d+),(\d+),(\d+),[^;]*;`)
	// syslogHeader matches the header syslog daemons and journalctl write
	// before a message: a time stamp (RFC 3164 "Nov 29 14:55:40" or RFC
	// 3339 "2024-11-29T14:55:40.123456+00:00"), the host, and the program's
	// tag ("kernel", "sshd[811]"), then ": ". The tag is the first word
	// after the host: a message cannot move it.
	syslogHeader = regexp.MustCompile(`^(?:[A-Z][a-z]{2} [ 0-3]?\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)) \S+ ([^\s:\[]+)(?:\[\d+\])?: `)
	// stamp matches the kernel's time stamp as dmesg and some syslog
	// daemons write it before the message: "[ 3240.118812] ", dmesg -T's
	// "[Sat Oct 12 18:35:32 2024] ", or dmesg -e/-H's (--reltime): the
	// minute ("[Oct12 18:35] ") and then the time since the previous
	// message ("[  +0.000316] ").
	stamp = regexp.MustCompile(`^\[(?:\s*\+?\d+\.\d+|[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-3]?\d \d\d:\d\d:\d\d \d{4}|[A-Z][a-z]{2}[ 0-3]?\d \d\d:\d\d)\] `)
)

// Parse reads one record or line: a /dev/kmsg record (its continuation
// lines dropped) or a plain text line as syslog, journalctl -k or dmesg
// write it. A header whose numbers are out of range is read as text, so
// that a saturated sequence number cannot move a saved position past every
// later record.
func Parse(b []byte) Record {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	m := header.FindSubmatchIndex(b)
	if m == nil {
		return parseText(string(b))
	}
	prio, err0 := strconv.ParseUint(string(b[m[2]:m[3]]), 10, 64)
	seq, err1 := strconv.ParseUint(string(b[m[4]:m[5]]), 10, 64)
	usec, err2 := strconv.ParseUint(string(b[m[6]:m[7]]), 10, 64)
	if err0 != nil || err1 != nil || err2 != nil {
		return parseText(string(b))
	}
	return Record{Seq: seq, Usec: usec, Text: string(b[m[1]:]), User: prio>>3 != 0}
}

// parseText reads a text line: the message after its syslog header (User
// when the header names another program than the kernel) and the kernel's
// time stamp; a line without either is the message itself.
func parseText(line string) Record {
	r := Record{Text: line, Plain: true}
	if m := syslogHeader.FindStringSubmatchIndex(line); m != nil {
		r.User = line[m[2]:m[3]] != "kernel"
		r.Text = line[m[1]:]
	}
	if m := stamp.FindStringIndex(r.Text); m != nil {
		r.Text = r.Text[m[1]:]
	}
	return r
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

// ReadAvailable reads the kernel's records available now from fd (opened
// with Open), those whose sequence number is above after (every one when
// all is set), at most limit of them (0: no limit), without blocking:
// records the kernel overwrote before they were read are skipped, and so
// are those written from user space (User), which count for the position
// only. It returns them and the highest sequence number seen.
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
			last = max(last, r.Seq)
			if !r.User {
				out = append(out, r)
			}
		}
		if limit > 0 && len(out) >= limit {
			return out, last, nil
		}
	}
	return out, last, nil
}
