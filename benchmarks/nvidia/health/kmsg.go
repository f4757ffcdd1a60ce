package health

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/vigil-hpc/vigil/internal/kmsg"
)

// parseLogLine reads one /dev/kmsg record or plain text line (kmsg.Parse:
// the one parser of the kernel log, shared with the watcher).
func parseLogLine(b []byte) kmsg.Record { return kmsg.Parse(b) }

// readKmsg reads every record of a /dev/kmsg character device whose
// sequence number is above after (all records when all is true), without
// blocking. It returns the records and the highest sequence number seen.
func readKmsg(path string, after uint64, all bool) ([]kmsg.Record, uint64, error) {
	fd, err := kmsg.Open(path)
	if err != nil {
		return nil, after, err
	}
	defer syscall.Close(fd)
	out, last, err := kmsg.ReadAvailable(fd, after, all, 0)
	if err != nil {
		err = &os.PathError{Op: "read", Path: path, Err: err}
	}
	return out, last, err
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
func readLogFile(path string, offset int64, inode uint64) ([]kmsg.Record, int64, fileIdentity, error) {
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
	var out []kmsg.Record
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
