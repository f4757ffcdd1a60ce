package action

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// ReportVersion is the format version of the hang reports this package
// writes and reads.
const ReportVersion = 1

// MaxReportBytes is the largest hang report ReadReport accepts, in bytes.
// The reports vigil-watch writes are a few KiB.
const MaxReportBytes = 4 << 20

// ErrBadReport is wrapped by ReadReport's errors about a file that is not a
// hang report of a known version (not a regular file, too large, not JSON,
// another version, no job or host).
var ErrBadReport = errors.New("not a vigil-watch hang report")

// reportPrefix starts the name of every hang report (see ReportName).
const reportPrefix = "vigil-hang-"

// FindReports lists the hang reports of job in dir: the files named as
// ReportName names them for that job, sorted by name (for one host, oldest
// first). It reads only the directory, not the files; temporary files of a
// write in progress are not listed. An unreadable or missing dir is an
// error (wrapping fs.ErrNotExist when dir does not exist).
func FindReports(dir, job string) ([]string, error) {
	if job == "" {
		return nil, fmt.Errorf("hang reports: no job id")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("hang reports: %w", err)
	}
	prefix := reportPrefix + job + "-"
	var out []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, ".json") && !e.IsDir() {
			out = append(out, filepath.Join(dir, name))
		}
	}
	slices.Sort(out)
	return out, nil
}

// ReadReport reads one hang report written by vigil-watch. It opens regular
// files only (not a symbolic link, FIFO or device: the directory may belong
// to the job's user; O_NONBLOCK so that a FIFO cannot block the reader),
// reads at most MaxReportBytes and checks it as ParseReport does. Errors
// about the content wrap ErrBadReport. The returned Report's Path is path.
func ReadReport(path string) (Report, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return Report{}, fmt.Errorf("%s: %w: a symbolic link", path, ErrBadReport)
		}
		return Report{}, fmt.Errorf("hang report: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Report{}, fmt.Errorf("hang report: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Report{}, fmt.Errorf("%s: %w: not a regular file (%v)", path, ErrBadReport, fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxReportBytes+1))
	if err != nil {
		return Report{}, fmt.Errorf("hang report %s: %w", path, err)
	}
	if len(data) > MaxReportBytes {
		return Report{}, fmt.Errorf("%s: %w: larger than %d bytes", path, ErrBadReport, MaxReportBytes)
	}
	r, err := ParseReport(data)
	if err != nil {
		return Report{}, fmt.Errorf("%s: %w", path, err)
	}
	r.Path = path
	return r, nil
}

// ParseReport decodes a hang report from its JSON. It needs the version
// ReportVersion, a job and a host; errors wrap ErrBadReport.
func ParseReport(data []byte) (Report, error) {
	var r Report
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("%w: %v", ErrBadReport, err)
	}
	if dec.More() {
		return Report{}, fmt.Errorf("%w: data after the JSON object", ErrBadReport)
	}
	switch {
	case r.V != ReportVersion:
		return Report{}, fmt.Errorf("%w: version %d (want %d)", ErrBadReport, r.V, ReportVersion)
	case r.Job == "":
		return Report{}, fmt.Errorf("%w: no job", ErrBadReport)
	case r.Host == "":
		return Report{}, fmt.Errorf("%w: no host", ErrBadReport)
	}
	return r, nil
}

// Blames reports whether the hang report names node as a culprit: node is
// in Culprits or, when Culprits is empty, the report is about node itself
// (its own watcher wrote it).
func (r Report) Blames(node string) bool {
	if node == "" {
		return false
	}
	if len(r.Culprits) == 0 {
		return r.Host == node
	}
	return slices.Contains(r.Culprits, node)
}
