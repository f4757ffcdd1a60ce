package lifecycle

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/lifecycle/notice"
	"github.com/vigil-hpc/vigil/slurm"
)

// CulpritReports returns the vigil-watch hang reports of job in dir that
// blame node (hangreport.Report.Blames: node is among the culprits or, when the
// report names none, the report is about node), oldest first per host.
// "hung" reports count, and "failed" ones whose failure looks like the
// cluster's (failedByCluster). problems has one error per report file of the
// job that could not be read or is not a valid report; such a file never
// counts. err is set when dir cannot be listed (wrapping fs.ErrNotExist when
// it does not exist).
func CulpritReports(dir, job, node string) (found []hangreport.Report, problems []error, err error) {
	all, problems, err := JobReports(dir, job)
	return blaming(all, node), problems, err
}

// JobReports returns every valid vigil-watch hang report of job in dir,
// in file name order, with CulpritReports' problems and err.
func JobReports(dir, job string) (found []hangreport.Report, problems []error, err error) {
	paths, err := hangreport.FindReports(dir, job)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range paths {
		r, err := hangreport.ReadReport(p)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		if r.Job != job {
			problems = append(problems, fmt.Errorf("%s: %w: it is about job %s, not %s", p, hangreport.ErrBadReport, r.Job, job))
			continue
		}
		found = append(found, r)
	}
	return found, problems, nil
}

// blaming keeps the reports of all that blame node and count for a
// re-check: "hung" ones, and "failed" ones that look like the cluster's.
func blaming(all []hangreport.Report, node string) []hangreport.Report {
	var out []hangreport.Report
	for _, r := range all {
		if r.Blames(node) && (r.Event == hangreport.EventHung || failedByCluster(r)) {
			out = append(out, r)
		}
	}
	return out
}

// failedByCluster reports whether r is the report of a failed job whose
// digest says the failure looks like the cluster's (device or network
// evidence): its culprits are re-checked; a job's own failure (a crash
// with no such evidence) re-checks nobody.
func failedByCluster(r hangreport.Report) bool {
	return r.Event == hangreport.EventFailed && r.Digest != nil && r.Digest.Origin == hangreport.OriginCluster
}

// ErrNoWatchDir is returned by WatchReportDir when [watch] report_dir is
// empty (vigil-watch's working directory) and the epilog's environment does
// not say the job's working directory (SLURM_JOB_WORK_DIR).
var ErrNoWatchDir = errors.New("no vigil-watch report directory")

// WatchReportDir returns the directory where vigil-watch wrote the job's
// hang reports: the report_dir of ws, the [watch] section as the run's one
// load of the config decoded it with vigil-watch's own defaults and rules
// (watchcfg.Default and Settings.Load). vigil-watch
// resolves an empty or relative report_dir against its working directory,
// the job's, so the epilog resolves it against SLURM_JOB_WORK_DIR. A
// --report-dir flag given to vigil-watch in a batch script is not visible
// here.
func WatchReportDir(ws watchcfg.Settings, lookup func(string) (string, bool)) (string, error) {
	dir := ws.ReportDir
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir), nil
	}
	work, _ := lookup("SLURM_JOB_WORK_DIR")
	if !filepath.IsAbs(work) {
		return "", fmt.Errorf("%w: [%s] report_dir is %q (the job's working directory) and SLURM_JOB_WORK_DIR is %q",
			ErrNoWatchDir, watchcfg.Section, dir, work)
	}
	return filepath.Join(work, dir), nil
}

// culpritLookupTimeout bounds the search for hang reports: the directory may
// be on a network file system that hangs. A variable for tests.
var culpritLookupTimeout = 10 * time.Second

// jobReports is the search the epilog runs; a variable for tests.
var jobReports = JobReports

// culpritClaims looks for hang reports of job that name node as a
// culprit, where vigil-watch writes them by ws, within a tenth of what is
// left before deadline (at most culpritLookupTimeout), and records each in
// the notes. It returns true when there is one. The job's digest report
// that the job's watcher on node wrote as its coordinator goes to the
// admins (a.forwardHangDigest; a nil a forwards nothing).
//
// A hang report is the job's user's word: vigil-watch runs as the job's
// user, so every place it can write (the working directory, [watch]
// report_dir) the user can write too, and a report can be forged. The
// epilog therefore never runs more because of one: it runs the health
// facts as after every job, within the same budget, and the note says so;
// the performance probes wait for the next prolog's suite. A missing
// directory or an unreadable report is logged and noted.
func culpritClaims(job *slurm.Job, node string, ws watchcfg.Settings, lookup func(string) (string, bool), deadline time.Time, log logrus.FieldLogger, n notes, a *notice.Admins) bool {
	if job == nil || job.ID == "" {
		return false
	}
	dir, err := WatchReportDir(ws, lookup)
	if err != nil {
		n.add("recheck: not looking for vigil-watch hang reports: %v", err)
		e := log.WithError(err)
		if errors.Is(err, ErrNoWatchDir) {
			e.Info("recheck: no vigil-watch report directory for this job; health facts only")
		} else {
			e.Warn("recheck: cannot tell where vigil-watch writes its hang reports; health facts only")
		}
		return false
	}
	type result struct {
		found    []hangreport.Report
		problems []error
		err      error
	}
	ch := make(chan result, 1)
	find, id := jobReports, job.ID
	go func() {
		all, p, err := find(dir, id)
		ch <- result{all, p, err}
	}()
	timeout := min(culpritLookupTimeout, max(time.Until(deadline)/10, time.Second))
	var res result
	select {
	case res = <-ch:
	case <-time.After(timeout):
		n.add("recheck: gave up looking for vigil-watch hang reports in %s after %v", dir, timeout)
		log.WithField("dir", dir).Warn("recheck: the hang report directory did not answer in time; health facts only")
		return false
	}
	log = log.WithField("dir", dir)
	switch {
	case errors.Is(res.err, fs.ErrNotExist):
		n.add("recheck: no vigil-watch hang report directory %s", dir)
		log.Info("recheck: no vigil-watch hang report directory")
		return false
	case res.err != nil:
		n.add("recheck: cannot read the vigil-watch hang report directory: %v", res.err)
		log.WithError(res.err).Warn("recheck: cannot read the vigil-watch hang report directory; health facts only")
		return false
	}
	for _, p := range res.problems {
		n.add("recheck: ignoring a vigil-watch hang report: %v", p)
		log.WithError(p).Warn("recheck: ignoring an unreadable hang report")
	}
	if rep, others, ok := notice.CoordinatorDigest(res.found, node); ok && a != nil {
		a.ForwardHangDigest(rep, others, deadline)
	}
	for _, rep := range blaming(res.found, node) {
		n.add("recheck: named as culprit by vigil-watch in %s%s; a hang report is written by the job's own processes, "+
			"so it runs nothing more: the health facts decide, as after every job, and the next prolog measures performance", rep.Path, digestOf(rep, node))
		log.WithFields(logrus.Fields{"report": rep.Path, "host": rep.Host, "reason": rep.Reason}).
			Warn("recheck: vigil-watch named this node as a culprit; the job's user's report runs nothing more than the health facts")
	}
	return len(blaming(res.found, node)) > 0
}

// digestOf says what the hang report's digest holds against node, for the
// note that links this re-check to it: " (digest: network, TransportErrors)".
func digestOf(rep hangreport.Report, node string) string {
	if rep.Digest == nil {
		return ""
	}
	for _, c := range rep.Digest.Culprits {
		if c.Host == node {
			return fmt.Sprintf(" (digest: %s, %s)", rep.Digest.Cause, c.Reason)
		}
	}
	return fmt.Sprintf(" (digest: %s)", rep.Digest.Cause)
}
