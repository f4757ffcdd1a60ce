package action

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

// TestPathsAreAbsolute: a relative report_dir (or none, the job's working
// directory) still gives the log, the webhook and the mail full paths,
// which a receiver elsewhere can find.
func TestPathsAreAbsolute(t *testing.T) {
	f := newFixture(t)
	dir := f.actor.ReportDir
	t.Chdir(filepath.Dir(dir))
	f.actor.ReportDir = filepath.Base(dir)
	f.actor.Pages = recentOf("n1")
	if err := f.actor.Handle(context.Background(), hungEvent("n1", t0)); err != nil {
		t.Fatal(err)
	}
	json := filepath.Join(dir, hangreport.Name("1234", "n1", t0))
	html := PagePath(json)
	if h := f.hook.received(); len(h) != 1 || h[0].ReportPath != json || h[0].HTML != html {
		t.Errorf("webhook %+v, want report %s and html %s", h, json, html)
	}
	if len(f.mailer.stdin) != 1 || !strings.Contains(f.mailer.stdin[0], "Report:   "+json+"\n") || !strings.Contains(f.mailer.stdin[0], "HTML:     "+html+"\n") {
		t.Errorf("mail %q lacks the full paths", f.mailer.stdin)
	}
	if !logged(f, ReportLine(json, html)) {
		t.Errorf("no log line names %s and %s", json, html)
	}
}

// TestUnwrittenReportIsNotAnAction: when the report cannot be written (a
// full disk), the webhook and the mail do not list "report" among the
// actions, and name no file.
func TestUnwrittenReportIsNotAnAction(t *testing.T) {
	f := newFixture(t)
	// A directory in the report's way: the rename onto it fails, as a
	// write to a full disk does (and as root, unlike a read-only directory).
	if err := os.Mkdir(filepath.Join(f.actor.ReportDir, hangreport.Name("1234", "n1", t0)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.actor.Handle(context.Background(), hungEvent("n1", t0)); err == nil || !strings.Contains(err.Error(), "hang report") {
		t.Fatalf("err = %v, want the report's failure", err)
	}
	h := f.hook.received()
	if len(h) != 1 || h[0].ReportPath != "" || strings.Contains(" "+strings.Join(h[0].Actions, " ")+" ", " report ") {
		t.Errorf("webhook %+v: want one, without report among its actions", h)
	}
	if len(f.mailer.stdin) != 1 || strings.Contains(f.mailer.stdin[0], "Report:") || strings.Contains(f.mailer.stdin[0], "report,") {
		t.Errorf("mail %q names a report that was not written", f.mailer.stdin)
	}
}

// TestMailEvidence: a digest that blames no host says so, never
// "Evidence: []"; a node's evidence is written out.
func TestMailEvidence(t *testing.T) {
	d := networkDigest()
	d.Cause, d.Culprits = digest.CauseUnknown, nil
	f := newFixture(t)
	body := string(MailBody(f.actor.digestReport(d)))
	if strings.Contains(body, "[]") || strings.Contains(body, "null") || !strings.HasSuffix(body, "Evidence: none against any host (no host stands out); see the report.\n") {
		t.Errorf("mail of a digest without culprits:\n%s", body)
	}
	body = string(MailBody(f.actor.digestReport(networkDigest())))
	if !strings.Contains(body, "Evidence:\n[\n  {\n    \"host\": \"gpu04\"") {
		t.Errorf("mail of a digest with a culprit lacks its evidence:\n%s", body)
	}
	ev := hungEvent("n1", t0)
	ev.Evidence = nil
	if body := string(MailBody(f.actor.newReport(ev, t0, nil))); !strings.HasSuffix(body, "Evidence: none recorded.\n") {
		t.Errorf("mail of an event without evidence:\n%s", body)
	}
}
