package lifecycle

import (
	"os"
	"path/filepath"

	"github.com/vigil-hpc/vigil/report"
)

// jobDir is vigil's per-job directory.
func (r *run) jobDir() string {
	if r.job == nil || r.s.Prolog.RunDir == "" {
		return ""
	}
	return filepath.Join(r.s.Prolog.RunDir, "jobs", filepath.Base(r.job.ID))
}

func (r *run) cleanJobFiles() {
	dir := r.jobDir()
	if dir == "" || r.o.DryRun {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		r.note("removing %s: %v", dir, err)
	}
}

// record writes the JSON report, the textfile and the per-job copy.
// Failures are logged and noted, never fatal.
func (r *run) record() string {
	p := r.s.Prolog
	dry := r.o.DryRun
	var path string
	if p.ReportDir != "" && (!dry || r.s.Explicit["report_dir"]) {
		var err error
		if path, err = report.WriteJSON(p.ReportDir, r.rep); err != nil {
			r.log.WithError(err).Error("writing the report")
			r.note("report not written: %v", err)
			path = ""
		} else if err := report.Prune(p.ReportDir, p.KeepReports); err != nil {
			r.log.WithError(err).Warn("pruning old reports")
		}
	}
	if p.Textfile != "" && (!dry || r.s.Explicit["textfile"]) {
		if err := report.WriteTextfile(p.Textfile, r.rep); err != nil {
			r.log.WithError(err).Error("writing the Prometheus textfile")
		}
	}
	if dir := r.jobDir(); dir != "" && !dry && r.o.Mode == ModeProlog {
		b, err := r.rep.JSON()
		if err == nil {
			if err = os.MkdirAll(dir, 0o755); err == nil {
				err = report.WriteAtomic(filepath.Join(dir, "prolog.json"), b, 0o644)
			}
		}
		if err != nil {
			r.log.WithError(err).Warn("writing the per-job report")
		}
	}
	return path
}
