package action

import "github.com/vigil-hpc/vigil/hangreport"

// The hang report's format and reader live in the leaf package hangreport,
// which the epilog reads without linking the watcher; these are its names
// as the watcher has always used them.
const (
	// ReportVersion is the format version of the hang reports.
	ReportVersion = hangreport.ReportVersion
	// MaxReportBytes is the largest hang report ReadReport accepts, in bytes.
	MaxReportBytes = hangreport.MaxReportBytes
)

// ErrBadReport is wrapped by the reader's errors about a file that is not a
// hang report of a known version.
var ErrBadReport = hangreport.ErrBadReport

// FindReports lists the hang reports of job in dir (hangreport.FindReports).
func FindReports(dir, job string) ([]string, error) { return hangreport.FindReports(dir, job) }

// ReadReport reads one hang report (hangreport.ReadReport).
func ReadReport(path string) (Report, error) { return hangreport.ReadReport(path) }

// ParseReport decodes a hang report from its JSON (hangreport.ParseReport).
func ParseReport(data []byte) (Report, error) { return hangreport.ParseReport(data) }
