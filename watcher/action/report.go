package action

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/watcher/hang"
)

func (a *Actor) newReport(ev hang.Event, since time.Time, culprits []string) hangreport.Report {
	r := hangreport.Report{
		V:        hangreport.ReportVersion,
		Event:    ev.Event,
		Job:      a.jobID(ev),
		User:     a.User,
		Host:     ev.Host,
		Time:     ev.Time.UTC(),
		Since:    since.UTC(),
		Window:   a.Window.String(),
		Reason:   ev.Reason,
		Message:  ev.Message,
		Flat:     Flat(ev),
		Culprits: culprits,
		Evidence: ev.Evidence,
	}
	if ev.Event == hang.EventHung {
		r.Actions = a.plannedActions(false, nil)
	}
	if r.Actions == nil {
		r.Actions = []string{}
	}
	return r
}

// plannedActions lists the actions configured for a hang, for the report
// and the notifications; for a job that has ended (a failed job's digest)
// the comment, which Slurm refuses then, and the cancel or requeue are
// left out. With the hang action's plan p (the watcher that acts), the
// requeue-exclude entry says what is done: "requeue-exclude: requeued
// without n3", or what is done instead and why; without (nil: a member's
// report), what is configured.
func (a *Actor) plannedActions(ended bool, p *plan) []string {
	acts := []string{"log", "report"}
	if a.Comment && !ended {
		acts = append(acts, "comment")
	}
	if len(webhookURLs(a.WebhookURL, a.JobWebhookURL)) > 0 {
		acts = append(acts, "webhook")
	}
	if a.Mail {
		acts = append(acts, "mail")
	}
	switch {
	case ended:
	case a.Control == ControlCancel:
		acts = append(acts, "cancel")
	case a.Control == ControlRequeue:
		acts = append(acts, fmt.Sprintf("requeue (at most %d restarts)", a.MaxRequeues))
	case a.Control == ControlRequeueExclude && p != nil:
		acts = append(acts, p.action())
	case a.Control == ControlRequeueExclude:
		acts = append(acts, fmt.Sprintf("requeue-exclude (at most %d restarts)", a.MaxRequeues))
	}
	if a.DryRun {
		for i := range acts {
			acts[i] = "dry-run " + acts[i]
		}
	}
	return acts
}

// Flat says what the detector found flat: the evidence's "flat" list when it
// has one; else, for suspect and hung, "io" plus "accel:ID" for each flat
// device of the evidence's "devices", or "cpu" when the job has no devices
// and the evidence carries its CPU rate.
func Flat(ev hang.Event) []string {
	switch v := ev.Evidence["flat"].(type) {
	case []string:
		return append([]string(nil), v...)
	case []any:
		out := []string{}
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	out := []string{}
	if ev.Event != hang.EventHung && ev.Event != hang.EventSuspect {
		return out
	}
	out = append(out, "io")
	devices := 0
	switch v := ev.Evidence["devices"].(type) {
	case []hang.DeviceStats:
		for _, d := range v {
			devices++
			if d.Flat {
				out = append(out, "accel:"+d.ID)
			}
		}
	case []any: // the same evidence after a JSON round trip
		for _, x := range v {
			m, ok := x.(map[string]any)
			if !ok {
				continue
			}
			devices++
			if flat, _ := m["flat"].(bool); flat {
				out = append(out, "accel:"+fmt.Sprint(m["id"]))
			}
		}
	}
	if _, ok := ev.Evidence["cpu_cores_median"]; ok && devices == 0 && ev.Event == hang.EventHung {
		out = append(out, "cpu")
	}
	return out
}

// writeReport writes r to the report directory, with its page next to
// it when a PageSource is set, and sets r.Path and r.HTML. The page is
// written first, so that the report names it only once it is whole; a page
// that cannot be written is logged and left out, the report is written
// regardless.
func (a *Actor) writeReport(log logrus.FieldLogger, r *hangreport.Report) error {
	dir := a.ReportDir
	if dir == "" {
		dir = "."
	}
	// Absolute, so that the log, the webhook's receiver and the mail's
	// reader can find the files.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	path := filepath.Join(dir, hangreport.Name(r.Job, r.Host, r.Time))
	if a.DryRun {
		log.WithField("report", path).Warn("dry run: would write the hang report")
		return nil
	}
	r.HTML = a.writePage(log, PagePath(path), *r)
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("hang report: %w", err)
	}
	if err := osutil.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		r.Actions = withoutReport(r.Actions)
		return fmt.Errorf("hang report: %w", err)
	}
	r.Path = path
	log.WithFields(logrus.Fields{"report": path, "html": r.HTML}).Info(ReportLine(path, r.HTML))
	return nil
}

// withoutReport is the actions without "report": the notifications must
// not promise a file that could not be written (a full disk).
func withoutReport(acts []string) []string {
	out := make([]string, 0, len(acts))
	for _, a := range acts {
		if a != "report" {
			out = append(out, a)
		}
	}
	return out
}

// ReportLine is the log message about a written report:
// "hang report: FILE (HTML: PAGE)", or "hang report: FILE" without a page.
func ReportLine(report, page string) string {
	if page == "" {
		return "hang report: " + report
	}
	return fmt.Sprintf("hang report: %s (HTML: %s)", report, page)
}
