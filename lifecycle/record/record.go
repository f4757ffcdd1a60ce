// Package record is what a run leaves behind: the JSON report, the
// Prometheus textfile and the per-job files where [prolog] says, the
// record paths of the last valid config (used when the config is broken),
// and the job's result file for its user.
package record

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
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

// CleanJobFiles removes the job's directory under runDir (not in a dry run).
func CleanJobFiles(runDir string, job *slurm.Job, dryRun bool, note func(format string, args ...any)) {
	dir := jobDir(runDir, job)
	if dir == "" || dryRun {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		note("removing %s: %v", dir, err)
	}
}

// Write writes rep as JSON, the mode's textfile and the per-job copy, where
// s says (in a dry run only where a flag or the environment said). It
// returns the JSON report's path, "" for none. Failures are logged and
// noted, never fatal.
func Write(rep *report.Report, s *settings.Settings, job *slurm.Job, dry bool, log logrus.FieldLogger, note func(format string, args ...any)) string {
	p := s.Prolog
	textfile := p.TextfileDir != "" && (!dry || s.TextfileExplicit())
	if textfile {
		removeSharedTextfiles(p, rep.Mode, log, note) // first: its note goes into the report
	}
	var path string
	if p.ReportDir != "" && (!dry || s.Explicit["report_dir"]) {
		var err error
		if path, err = report.WriteJSON(p.ReportDir, rep); err != nil {
			log.WithError(err).Error("writing the report")
			note("report not written: %v", err)
			path = ""
		} else if err := report.Prune(p.ReportDir, p.KeepReports); err != nil {
			log.WithError(err).Warn("pruning old reports")
		}
	}
	if textfile {
		if _, err := report.WriteTextfile(p.TextfileDir, rep); err != nil {
			log.WithError(err).Error("writing the Prometheus textfile")
		}
	}
	if dir := jobDir(p.RunDir, job); dir != "" && !dry && decide.Mode(rep.Mode) == decide.ModeProlog {
		b, err := rep.JSON()
		if err == nil {
			if err = os.MkdirAll(dir, 0o755); err == nil {
				err = report.WriteAtomic(filepath.Join(dir, "prolog.json"), b, 0o644)
			}
		}
		if err != nil {
			log.WithError(err).Warn("writing the per-job report")
		}
	}
	return path
}

// removeSharedTextfiles removes the textfile that all modes shared before
// each wrote its own (report.RemoveSharedTextfile): vigil.prom in
// textfile_dir, and the file the deprecated [prolog] textfile names. The
// first run of any mode after the upgrade removes it; the other modes'
// series are back at their next runs. Never a mode's own file, even when
// the deprecated key names one. mode is this run's.
func removeSharedTextfiles(p config.Prolog, mode string, log logrus.FieldLogger, note func(format string, args ...any)) {
	if p.Textfile != "" {
		log.WithFields(logrus.Fields{"textfile": p.Textfile, "textfile_dir": p.TextfileDir}).
			Warn("[prolog] textfile is deprecated: set textfile_dir instead (each mode writes vigil-MODE.prom there)")
	}
	old := []string{filepath.Join(p.TextfileDir, report.SharedTextfileName)}
	if p.Textfile != "" && filepath.Clean(p.Textfile) != old[0] {
		old = append(old, filepath.Clean(p.Textfile))
	}
	for _, path := range old {
		if slices.ContainsFunc([]decide.Mode{decide.ModeProlog, decide.ModeEpilog, decide.ModeHealth, decide.ModeValidate}, func(m decide.Mode) bool {
			return filepath.Base(path) == report.TextfileName(string(m))
		}) {
			continue
		}
		removed, err := report.RemoveSharedTextfile(path)
		if err != nil {
			log.WithError(err).Warn("removing the shared textfile of earlier versions")
		}
		if removed {
			note("removed %s, the textfile that all modes shared before each wrote its own (%s)", path,
				filepath.Join(p.TextfileDir, report.TextfileName(mode)))
			log.WithField("textfile", path).Info("removed the shared textfile of earlier versions")
		}
	}
}
