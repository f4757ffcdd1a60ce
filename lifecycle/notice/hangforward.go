package notice

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/internal/textutil"
	"github.com/vigil-hpc/vigil/notify"
	"github.com/vigil-hpc/vigil/report"
)

// The Admins hear of a job's hangs from vigil-epilog, not from vigil-watch:
// the watcher runs as the job's user and posts only to the job's own
// webhooks, while the Admins' webhook ([notify] webhook_url) lives in the
// root-only secrets file. After the job, the epilog on the node whose
// watcher announced the job's digest (the coordinator: its digest report
// has Coordinator set and names this node as Host) posts that digest to
// the Admins' webhook, once per job on that node, marked as the job's
// watcher's word ("from": "job-watcher"): the report is the job's user's
// file, so the message is a claim, bounded in size and never acted on.

// noticeHangDigest is the report.Notice kind of a forwarded digest.
const noticeHangDigest = "hang-digest"

// fromJobWatcher is the webhook body's "from" of a forwarded digest.
const fromJobWatcher = "job-watcher"

// Bounds on what of the user's report a forwarded digest carries.
const (
	maxForwardField    = 200 // bytes of one text field (cause, hint, a culprit's reason)
	maxForwardCulprits = 8   // culprits named; the rest are counted
)

// CoordinatorDigest picks, of the job's hang reports, the one to forward
// from node: the newest digest report (hung or failed) whose watcher was
// the job's coordinator on node. others counts the older ones it stands
// for; ok is false when there is none.
func CoordinatorDigest(all []hangreport.Report, node string) (rep hangreport.Report, others int, ok bool) {
	for _, r := range all {
		if r.Digest == nil || !r.Coordinator || r.Host != node || node == "" ||
			(r.Event != hangreport.EventHung && r.Event != hangreport.EventFailed) {
			continue
		}
		if ok {
			others++
			if !r.Time.After(rep.Time) {
				continue
			}
		}
		rep, ok = r, true
	}
	return rep, others, ok
}

// ForwardHangDigest posts rep, the job's digest report written on this
// node by the job's coordinator, to the Admins' webhook (webhook only: the
// Admins' mail is for drains), within a tenth of what is left before
// deadline and [notify] timeout. The report records the attempt as a
// notice; the log and the notes name the webhook by its host alone. A dry
// run, or no [notify] webhook_url, sends nothing and says so.
func (a *Admins) ForwardHangDigest(rep hangreport.Report, others int, deadline time.Time) {
	log := a.log.WithFields(logrus.Fields{"report": rep.Path, "from": fromJobWatcher})
	if a.notify.WebhookURL == "" {
		log.Debug("no [notify] webhook_url: the job's hang digest goes to the Admins through nobody")
		return
	}
	hook := notify.RedactURL(a.notify.WebhookURL)
	if a.sl.DryRun {
		a.note("would forward the job's hang digest reported by the job's watcher (%s) to the Admins' webhook %s", rep.Path, hook)
		log.WithField("webhook", hook).Info("would forward the job's hang digest: dry run")
		return
	}
	text, fields := hangDigestMessage(rep, a.rep.Node, a.rep.Job, others)
	body := map[string]any{"text": text, "from": fromJobWatcher, "job": a.rep.Job, "node": a.rep.Node, "vigil": fields}
	d := min(a.notify.Timeout, max(time.Until(deadline)/10, time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	w := notify.Webhook{URL: a.notify.WebhookURL, Timeout: a.notify.WebhookTimeout, Attempts: a.notify.WebhookAttempts, UserAgent: a.program}
	_, err := w.Post(ctx, body) // its errors name the webhook by its host
	nt := report.Notice{Kind: noticeHangDigest, Checks: []string{}, To: "webhook", Sent: err == nil}
	log = log.WithField("webhook", hook)
	if err != nil {
		nt.Error = err.Error()
		log.WithError(err).Error("forwarding the job's hang digest to the Admins ([notify] webhook_url) failed")
	} else {
		log.Info("forwarded the job's hang digest, reported by the job's watcher, to the Admins")
	}
	a.rep.Notices = append(a.rep.Notices, nt)
	a.note("hang digest reported by the job's watcher (%s) forwarded to the Admins' webhook %s: sent %v", rep.Path, hook, err == nil)
}

// hangDigestMessage is the forwarded digest's text and structured fields.
// Every value from the report is the job's user's: each is cut to
// maxForwardField bytes, the culprits to maxForwardCulprits, and the text
// is one line. node and job are the epilog's own.
func hangDigestMessage(rep hangreport.Report, node, job string, others int) (string, map[string]any) {
	cut := func(s string) string { return notify.OneLine(textutil.CutWithin(s, maxForwardField, "…")) }
	dg := rep.Digest
	var culprits []string
	for i, c := range dg.Culprits {
		if i == maxForwardCulprits {
			culprits = append(culprits, fmt.Sprintf("and %d more", len(dg.Culprits)-i))
			break
		}
		culprits = append(culprits, cut(c.Host)+" ("+cut(c.Reason)+")")
	}
	named := "no host stands out"
	if len(culprits) > 0 {
		named = strings.Join(culprits, ", ")
	}
	what := "hang digest"
	if rep.Event == hangreport.EventFailed {
		what = "failure digest"
	}
	text := fmt.Sprintf("vigil: job %s %s on %s, reported by the job's watcher (the job's user's file; vigil acts on none of it): cause %s, origin %s; culprits: %s",
		job, what, node, cut(dg.Cause), cut(dg.Origin), named)
	if dg.Hint != "" {
		text += "; hint: " + cut(dg.Hint)
	}
	if others > 0 {
		text += fmt.Sprintf("; %d earlier digest report(s) of this job on this node not forwarded", others)
	}
	text += "; report " + cut(rep.Path)
	fields := map[string]any{"event": noticeHangDigest, "from": fromJobWatcher, "node": node, "job": job,
		"user": cut(rep.User), "digest_event": rep.Event, "cause": cut(dg.Cause), "origin": cut(dg.Origin),
		"culprits": culprits, "time": rep.Time.UTC().Format(time.RFC3339), "report": cut(rep.Path), "not_forwarded": others}
	return notify.OneLine(text), fields
}
