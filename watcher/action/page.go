package action

import (
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/hangview"
)

// PageSource gives what a hang report's page is drawn from: the readings
// and events the watcher holds for the window before the verdict, of every
// host of the job on its coordinator, else of this node (*hangview.Recent).
type PageSource interface {
	Data() hangview.Data
}

// PageTitle is the title of a live hang report's page.
const PageTitle = "vigil hang report"

// PagePath is the page's path for a report's path: the same name, .html.
func PagePath(report string) string { return strings.TrimSuffix(report, ".json") + ".html" }

// writePage draws the report's page (hangview, as replay --html draws it)
// with the report's digest on top, writes it to path atomically and
// returns path; "" when the Actor has no PageSource or the write failed,
// which is logged: the report and the other actions go on without it.
func (a *Actor) writePage(log logrus.FieldLogger, path string, r hangreport.Report) string {
	if a.Pages == nil {
		return ""
	}
	d := a.Pages.Data()
	d.Title = PageTitle
	if r.Digest != nil {
		d.Events = append(d.Events, digestEvent(r))
	}
	if err := osutil.WriteFile(path, hangview.Render(d), 0o644); err != nil {
		log.WithError(err).WithField("html", path).Error("could not write the hang report's HTML page; the report and the other actions go on without it")
		return ""
	}
	return path
}

// digestEvent is the report's digest as an event of the page.
func digestEvent(r hangreport.Report) hangview.Event {
	cs := make([]digest.DigestCulprit, 0, len(r.Digest.Culprits))
	for _, c := range r.Digest.Culprits {
		cs = append(cs, digest.DigestCulprit{Host: c.Host, Reason: c.Reason, Evidence: c.Evidence})
	}
	return hangview.Event{Time: r.Time, Job: r.Job, Event: digest.EventDigest, Cause: r.Digest.Cause,
		Culprits: cs, Hint: r.Digest.Hint, Hosts: r.Digest.Hosts, Since: r.Since}
}
