package action

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/hangview"
	"github.com/vigil-hpc/vigil/watcher/hangview/pagetest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// recentOf holds an hour of readings of hosts, one a minute up to t0,
// whose I/O stops 35 minutes before t0, and a hung event of each at t0.
func recentOf(hosts ...string) *hangview.Recent {
	r := hangview.NewRecent(30 * time.Minute)
	for i := 60; i >= 0; i-- {
		at := t0.Add(-time.Duration(i) * time.Minute)
		for _, h := range hosts {
			var evs []hang.Event
			if i == 0 {
				evs = []hang.Event{hungEvent(h, at)}
			}
			r.Observe(trace.Sample{V: trace.Version, Time: at, Host: h, Job: "1234", IO: trace.IO{WChar: uint64(min(60-i, 25)) << 20},
				CPUUsec: uint64(60-i) * 60e6, Accel: []trace.Accel{{ID: "0", Util: 100, PowerW: 80}}}, evs)
		}
	}
	return r
}

// TestDigestReportWithPage: the coordinator's digest report has its page
// next to it, drawn from every host's readings with the digest on top and
// the culprit highlighted; the report, the log line, the webhook, the mail
// and the comment name it; no temporary file is left.
func TestDigestReportWithPage(t *testing.T) {
	f := newFixture(t)
	f.actor.Pages = recentOf("gpu01", "gpu02", "gpu03", "gpu04")
	dir := f.actor.ReportDir
	t.Chdir(dir)
	f.actor.ReportDir = "" // the job's working directory: still named in full, for the receivers
	if err := f.actor.HandleDigest(context.Background(), networkDigest(), true); err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(hangreport.Name("1234", "n1", t0), ".json")
	json, html := filepath.Join(dir, name+".json"), filepath.Join(dir, name+".html")
	if got := strings.Join(f.reports(t), " "); got != name+".html "+name+".json" { // sorted by name
		t.Fatalf("report directory holds %s, want %s and %s", got, json, html)
	}
	r, err := hangreport.ReadReport(json)
	if err != nil {
		t.Fatal(err)
	}
	if r.HTML != html {
		t.Errorf("report's html = %q, want %q", r.HTML, html)
	}
	data, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	if got := strings.Join(pagetest.Charts(page), ","); got != "gpu01,gpu02,gpu03,gpu04" {
		t.Errorf("page charts %s, want one per host", got)
	}
	for h, n := range pagetest.Series(page) {
		if n != 4 {
			t.Errorf("%s's chart draws %d lines, want I/O, CPU, utilisation and power", h, n)
		}
	}
	if got := strings.Join(pagetest.Culprits(page), ","); got != "gpu04" {
		t.Errorf("page highlights %q, want gpu04", got)
	}
	for _, want := range []string{"<title>vigil hang report: job 1234</title>", `<span class="cause">network</span>`, "TransportErrors", "NCCL reported transport errors", `class="event hung"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if h := f.hook.received(); len(h) != 1 || h[0].HTML != html || h[0].ReportPath != json {
		t.Errorf("webhook %+v, want report %s and html %s", h, json, html)
	}
	if len(f.mailer.stdin) != 1 || !strings.Contains(f.mailer.stdin[0], "HTML:     "+html+"\n") {
		t.Errorf("mail %q lacks the page", f.mailer.stdin)
	}
	if !logged(f, "hang report: "+json+" (HTML: "+html+")") {
		t.Errorf("no log line names the report and its page")
	}
	// The test's directory is too long a path for the comment (TestDigestCommentNamesThePageWhenItFits).
	if want := "my run; vigil: hung since 2026-11-29T10:00:00Z, network: gpu04 (TransportErrors) — check its port and cable; NCCL_IB_TIMEOUT=22"; f.slurm.comment != want {
		t.Errorf("comment\n%q\nwant\n%q", f.slurm.comment, want)
	}
}

func logged(f *fixture, msg string) bool {
	for _, e := range f.logs.AllEntries() {
		if e.Message == msg {
			return true
		}
	}
	return false
}

// TestNodeReportWithPage: a lone watcher's report of its own node has the
// page of its own readings and verdict.
func TestNodeReportWithPage(t *testing.T) {
	f := newFixture(t)
	f.actor.Pages = recentOf("n1")
	if err := f.actor.Handle(context.Background(), hungEvent("n1", t0)); err != nil {
		t.Fatal(err)
	}
	reps := f.reports(t) // sorted by name: the page, then the report
	if len(reps) != 2 || !strings.HasSuffix(reps[0], ".html") || strings.TrimSuffix(reps[1], ".json") != strings.TrimSuffix(reps[0], ".html") {
		t.Fatalf("reports %v, want the report and its page", reps)
	}
	reps[0], reps[1] = reps[1], reps[0]
	data, _ := os.ReadFile(reps[1])
	page := string(data)
	if got := strings.Join(pagetest.Charts(page), ","); got != "n1" {
		t.Errorf("page charts %q, want n1's", got)
	}
	if !strings.Contains(page, hang.ReasonFlatUsageStuckCollective) {
		t.Errorf("page lacks the node's verdict")
	}
	r, _ := hangreport.ReadReport(reps[0])
	if r.HTML != reps[1] {
		t.Errorf("report html %q, want %q", r.HTML, reps[1])
	}
}

// TestPageFailureKeepsTheReport: a page that cannot be written is logged;
// the report (without html) and every other action go on.
func TestPageFailureKeepsTheReport(t *testing.T) {
	f := newFixture(t)
	f.actor.Pages = recentOf("n1")
	page := PagePath(filepath.Join(f.actor.ReportDir, hangreport.Name("1234", "n1", t0)))
	if err := os.Mkdir(page, 0o755); err != nil { // the rename onto it fails
		t.Fatal(err)
	}
	if err := f.actor.Handle(context.Background(), hungEvent("n1", t0)); err != nil {
		t.Fatalf("a failed page failed the actions: %v", err)
	}
	reps := f.reports(t)
	if len(reps) != 2 {
		t.Fatalf("report directory %v, want the report and the directory in the page's way", reps)
	}
	reps[0] = reps[1] // sorted by name: the page's path, then the report
	r, err := hangreport.ReadReport(reps[0])
	if err != nil || r.HTML != "" {
		t.Errorf("report %+v (%v): want one without html", r, err)
	}
	if h := f.hook.received(); len(h) != 1 || h[0].HTML != "" || len(f.mailer.argv) != 1 || f.slurm.count("comment") != 1 {
		t.Errorf("webhook %+v, mail %d, comments %d: want one each, without a page", h, len(f.mailer.argv), f.slurm.count("comment"))
	}
	if !logged(f, "could not write the hang report's HTML page; the report and the other actions go on without it") {
		t.Error("the failed page is not logged")
	}
	if !logged(f, "hang report: "+reps[0]) {
		t.Error("the report's log line is not the one without a page")
	}
	if tmp, _ := filepath.Glob(filepath.Join(f.actor.ReportDir, ".*.tmp*")); len(tmp) != 0 {
		t.Errorf("the failed write left %v", tmp)
	}
}

func TestDigestCommentNamesThePageWhenItFits(t *testing.T) {
	d := &hangreport.Digest{Cause: digest.CauseNetwork, Culprits: []hangreport.DigestCulprit{{Host: "gpu04", Reason: "TransportErrors"}}}
	got := DigestComment("run 7", d, t0, "vigil-hang-1234-n1-20261129T103000Z.html", "")
	if want := "run 7; vigil: hung since 2026-11-29T10:30:00Z, network: gpu04 (TransportErrors) — check its port and cable; NCCL_IB_TIMEOUT=22; HTML: vigil-hang-1234-n1-20261129T103000Z.html"; got != want {
		t.Errorf("comment\n%q\nwant\n%q", got, want)
	}
	long := "/scratch/" + strings.Repeat("x", 100) + "/vigil-hang-1234-n1-20261129T103000Z.html"
	got = DigestComment("run 7", d, t0, long, "")
	if _, note := SplitComment(got); strings.Contains(note, "HTML") || len(note) > MaxCommentNote {
		t.Errorf("comment %q: a page that does not fit must be left out", got)
	}
}
