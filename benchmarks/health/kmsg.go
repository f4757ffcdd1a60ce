package health

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// logLine is one kernel log message.
type logLine struct {
	// seq is the kmsg sequence number (0 for plain text lines).
	seq uint64
	// usec is the kmsg time stamp in microseconds since boot (0 for plain text).
	usec uint64
	// text is the message without the kmsg header.
	text string
}

// kmsgHeader matches the "priority,sequence,microseconds,flags[,...];"
// prefix of a /dev/kmsg record.
var kmsgHeader = regexp.MustCompile(`^(\d+),(\d+),(\d+),[^;]*;`)

// parseLogLine reads one record or line: a /dev/kmsg record (its
// continuation lines, which start with a space, are dropped) or a plain
// text line as syslog writes it.
func parseLogLine(b []byte) logLine {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	m := kmsgHeader.FindSubmatchIndex(b)
	if m == nil {
		return logLine{text: string(b)}
	}
	seq, err1 := strconv.ParseUint(string(b[m[4]:m[5]]), 10, 64)
	usec, err2 := strconv.ParseUint(string(b[m[6]:m[7]]), 10, 64)
	if err1 != nil || err2 != nil {
		// Out of range: not a record the kernel wrote. Read as text, so
		// that a saturated sequence number cannot move the saved
		// position past every later record.
		return logLine{text: string(b)}
	}
	return logLine{seq: seq, usec: usec, text: string(b[m[1]:])}
}

// readKmsg reads every record of a /dev/kmsg character device whose
// sequence number is above after (all records when all is true), without
// blocking. It returns the records and the highest sequence number seen.
func readKmsg(path string, after uint64, all bool) ([]logLine, uint64, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, after, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	last := after
	var out []logLine
	buf := make([]byte, 16<<10) // a record is at most 8 KiB
	for {
		n, err := syscall.Read(fd, buf)
		switch {
		case errors.Is(err, syscall.EAGAIN):
			return out, last, nil
		case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.EINTR):
			continue // records overwritten before we read them, or a signal
		case err != nil:
			return out, last, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return out, last, nil
		}
		l := parseLogLine(buf[:n])
		if !all && l.seq <= after {
			continue
		}
		out = append(out, l)
		last = max(last, l.seq)
	}
}

// fileIdentity tells one log file from the file that replaced it.
type fileIdentity struct {
	inode uint64
	size  int64
}

// readLogFile reads the complete lines of a regular file from offset on
// (from the start when the file is not the one the offset belongs to, or is
// shorter than it: rotated or truncated). It returns the lines, the offset
// after the last complete line read and the file's identity; on error, what
// was read so far and the position to resume from.
func readLogFile(path string, offset int64, inode uint64) ([]logLine, int64, fileIdentity, error) {
	unchanged := fileIdentity{inode: inode}
	f, err := os.Open(path)
	if err != nil {
		return nil, offset, unchanged, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, offset, unchanged, err
	}
	id := fileIdentity{size: st.Size()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.inode = sys.Ino
	}
	if id.inode != inode || offset > id.size || offset < 0 {
		offset = 0
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, unchanged, err
	}
	var out []logLine
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, offset, id, nil // an unfinished last line is read next time
		}
		if err != nil {
			return out, offset, id, fmt.Errorf("read %s: %w", path, err)
		}
		offset += int64(len(line))
		if strings.HasPrefix(string(line), " ") {
			continue // kmsg continuation line (KEY=value)
		}
		out = append(out, parseLogLine(line))
	}
}
