// Package hangreport is the record vigil-watch writes when a job hangs (or
// recovers), and its reader: the one format the watcher writes and the
// epilog reads to find the culprits it must re-check. It is a leaf package,
// so the prolog and epilog read hang reports without linking the watcher's
// sampling, detection and action code.
//
// vigil-watch runs as the job's user, so a hang report is always the
// user's file: any place the watcher can write, the user can write too. A
// reader running as root treats a report as the user's claim: ReadReport
// opens only regular files, never through a link, bounded in size, and the
// epilog records a report that names its node without running anything
// more for it.
package hangreport

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
	"time"
)

// Event kinds of a report.
const (
	EventHung      = "hung"      // suspect, and resource usage flat over the window
	EventRecovered = "recovered" // I/O progressed again after suspect or hung
	// EventFailed: the job ended with evidence of a failure; the report's
	// digest says what failed first and on which host.
	EventFailed = "failed"
)

// OriginCluster is a digest's Origin when the trouble looks like the
// cluster's (a device, the network, the file system, a silent node).
const OriginCluster = "cluster"

// Report is the JSON record of one hang (or recovery) that vigil-watch
// writes to the report directory and sends, in part, to the webhook.
type Report struct {
	V        int            `json:"v"`                  // format version, 1
	Event    string         `json:"event"`              // hung, recovered or failed
	Job      string         `json:"job"`                // Slurm job id
	User     string         `json:"user,omitempty"`     // the job's user
	Host     string         `json:"host"`               // the node the event is about
	Time     time.Time      `json:"time"`               // when the detector decided
	Since    time.Time      `json:"since"`              // when the flat stretch began
	Window   string         `json:"window"`             // the detection window, Go duration
	Reason   string         `json:"reason"`             // the detector's reason token
	Message  string         `json:"message,omitempty"`  // the detector's text for people
	Flat     []string       `json:"flat"`               // what was flat: "io", "accel:0", "cpu" ...
	Culprits []string       `json:"culprits"`           // hosts blamed
	Evidence map[string]any `json:"evidence,omitempty"` // the detector's evidence, verbatim
	Actions  []string       `json:"actions"`            // what vigil-watch does about it
	// Excluded are the culprits the hang action requeues the job without
	// (requeue-exclude: added to the job's ExcNodeList); none when it
	// excludes no one.
	Excluded []string `json:"excluded,omitempty"`
	// Digest is the job's digest of the hang (its likely cause, and the
	// hosts with evidence against them), in the reports written for it by
	// the job's coordinator and its peers; nil in per-node reports and in
	// reports of vigil versions without one.
	Digest *Digest `json:"digest,omitempty"`
	// Coordinator marks the digest report of the watcher that announced
	// the digest (the job's coordinator, or one acting alone): the
	// epilog on its Host forwards it to the admins' webhook. The job's
	// user writes the file: it is a claim, never more.
	Coordinator bool `json:"coordinator,omitempty"`
	// HTML is where the report's page went: a self-contained HTML page
	// of the job's readings over the window before the verdict, next to
	// the report (same name, .html); "" when none was written.
	HTML string `json:"html,omitempty"`
	Path string `json:"-"` // where the report was written; "" when not
}

// Digest is a job's digest of one hang episode, as vigil-watch computes it
// across the job's hosts.
type Digest struct {
	Cause    string          `json:"cause"`            // bad-device, rank-failed, network, data-stall, different-progress or unknown
	Origin   string          `json:"origin,omitempty"` // cluster, job or unknown: whose the trouble looks like ("" from older versions)
	Culprits []DigestCulprit `json:"culprits"`         // hosts with evidence against them; none for unknown
	Hint     string          `json:"hint,omitempty"`   // what the job's user can do
	Hosts    []string        `json:"hosts,omitempty"`  // every host of the job the digest saw
	// DetectedBy says how the hang was detected: "window", "pulse" (the
	// job's progress lines stopped well beyond their cadence), "evidence"
	// or "ras" (strong evidence, then a few flat periods); Detection says
	// it for people, with how long after the last progress line;
	// LastProgress is the job's newest progress line (zero: none). Empty
	// in a failed job's digest and in reports of older versions.
	DetectedBy   string    `json:"detected_by,omitempty"`
	Detection    string    `json:"detection,omitempty"`
	LastProgress time.Time `json:"last_progress,omitzero"`
	// Revises, when not zero, marks the hang episode's one update: later
	// evidence changed the cause or the culprits of the digest of that time.
	Revises time.Time `json:"revises,omitzero"`
}

// DigestCulprit is a host a digest blames, with the evidence against it.
type DigestCulprit struct {
	Host     string         `json:"host"`
	Reason   string         `json:"reason"` // a stable token, e.g. "TransportErrors"
	Evidence map[string]any `json:"evidence,omitempty"`
}

// Name is the report's file name for a job, host and event time.
func Name(job, host string, t time.Time) string {
	return fmt.Sprintf("%s%s-%s-%s.json", reportPrefix, job, host, t.UTC().Format("20060102T150405Z"))
}

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

// reportPrefix starts the name of every hang report (see Name).
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

// Blames reports whether the hang report names node as a culprit. A report
// with a digest blames the digest's culprits only, the hosts with evidence
// against them (none when its cause is unknown). Without one: node is in
// Culprits or, when Culprits is empty, the report is about node itself
// (its own watcher wrote it).
func (r Report) Blames(node string) bool {
	if node == "" {
		return false
	}
	if r.Digest != nil {
		return slices.ContainsFunc(r.Digest.Culprits, func(c DigestCulprit) bool { return c.Host == node })
	}
	if len(r.Culprits) == 0 {
		return r.Host == node
	}
	return slices.Contains(r.Culprits, node)
}
