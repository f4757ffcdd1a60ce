package lifecycle

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// jobDir is vigil's per-job directory under runDir, "" for none.
func jobDir(runDir string, job *slurm.Job) string {
	if job == nil || runDir == "" {
		return ""
	}
	return filepath.Join(runDir, "jobs", filepath.Base(job.ID))
}

func (r *run) cleanJobFiles() {
	dir := jobDir(r.s.Prolog.RunDir, r.job)
	if dir == "" || r.o.DryRun {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		r.note("removing %s: %v", dir, err)
	}
}

// record writes the JSON report, the mode's textfile and the per-job copy.
// Failures are logged and noted, never fatal.
func (r *run) record() string {
	p := r.s.Prolog
	dry := r.o.DryRun
	textfile := p.TextfileDir != "" && (!dry || r.s.textfileExplicit())
	if textfile {
		r.removeSharedTextfiles() // first: its note goes into the report
	}
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
	if textfile {
		if _, err := report.WriteTextfile(p.TextfileDir, r.rep); err != nil {
			r.log.WithError(err).Error("writing the Prometheus textfile")
		}
	}
	if dir := jobDir(p.RunDir, r.job); dir != "" && !dry && r.o.Mode == ModeProlog {
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

// removeSharedTextfiles removes the textfile that all modes shared before
// each wrote its own (report.RemoveSharedTextfile): vigil.prom in
// textfile_dir, and the file the deprecated [prolog] textfile names. The
// first run of any mode after the upgrade removes it; the other modes'
// series are back at their next runs. Never a mode's own file, even when
// the deprecated key names one.
func (r *run) removeSharedTextfiles() {
	p := r.s.Prolog
	if p.Textfile != "" {
		r.log.WithFields(logrus.Fields{"textfile": p.Textfile, "textfile_dir": p.TextfileDir}).
			Warn("[prolog] textfile is deprecated: set textfile_dir instead (each mode writes vigil-MODE.prom there)")
	}
	old := []string{filepath.Join(p.TextfileDir, report.SharedTextfileName)}
	if p.Textfile != "" && filepath.Clean(p.Textfile) != old[0] {
		old = append(old, filepath.Clean(p.Textfile))
	}
	for _, path := range old {
		if slices.ContainsFunc([]Mode{ModeProlog, ModeEpilog, ModeHealth}, func(m Mode) bool {
			return filepath.Base(path) == report.TextfileName(string(m))
		}) {
			continue
		}
		removed, err := report.RemoveSharedTextfile(path)
		if err != nil {
			r.log.WithError(err).Warn("removing the shared textfile of earlier versions")
		}
		if removed {
			r.note("removed %s, the textfile that all modes shared before each wrote its own (%s)", path,
				filepath.Join(p.TextfileDir, report.TextfileName(r.rep.Mode)))
			r.log.WithField("textfile", path).Info("removed the shared textfile of earlier versions")
		}
	}
}
