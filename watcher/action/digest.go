package action

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/internal/textutil"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

// MaxCommentNote is the longest note vigil puts in a job's comment, in
// bytes: squeue and scontrol show it whole; the digest's full hint is in
// the report, the webhook and the mail.
const MaxCommentNote = 200

// HandleDigest acts on a digest of the job. With notify (the job's
// coordinator) it decides the job's hang action (planControl: for
// requeue-exclude, the culprits to requeue the job without), writes the
// digest's hang report, sets the job's comment, posts the webhook and
// sends mail, each saying what is done, and then takes the hang action,
// once per hang episode of the job. Without, it logs the digest and, when the digest
// names culprits, writes its report (so that the epilog on every node
// re-checks the culprits without a shared file system).
func (a *Actor) HandleDigest(ctx context.Context, d digest.DigestEvent, notify bool) error {
	log := a.log().WithFields(logrus.Fields{"job": a.jobOf(d), "event": d.Event, "cause": d.Cause, "origin": d.Origin})
	rep := a.digestReport(d)
	what := "hang digest"
	if rep.Event == digest.EventFailed {
		what = "failure digest"
	}
	log.WithFields(logrus.Fields{"culprits": strings.Join(rep.Culprits, ","), "hosts": strings.Join(d.Hosts, ",")}).
		Error(fmt.Sprintf("vigil: job %s %s: %s", rep.Job, what, digestLine(rep.Digest)))
	if !notify && len(d.Culprits) == 0 {
		return nil // it blames nobody: nothing for an epilog to read
	}
	ev := hang.Event{Time: d.Time, Host: a.Host, Job: rep.Job, Event: rep.Event, Reason: d.Cause}
	var p plan
	revised := !d.Revises.IsZero()
	if notify && rep.Event != digest.EventFailed && !revised {
		// Decided before the report is written and anyone is told, so
		// that they say what is done to the job; done last.
		p = a.planControl(ctx, log, ev, rep.Culprits, d.Origin)
		rep.Actions = a.plannedActions(false, &p)
		rep.Excluded = p.exclude
	}
	rep.Coordinator = notify // the epilog on this node forwards it to the admins
	var errs []error
	if err := a.writeReport(log, &rep); err != nil {
		errs = append(errs, err)
	}
	if !notify {
		return errors.Join(errs...)
	}
	if rep.Event == hang.EventHung && d.Detection != nil && d.Detection.By != digest.DetectedWindow {
		a.jobHang = true // announced before any window verdict: those only log
	}
	switch {
	case a.Comment && rep.Event == digest.EventFailed:
		// The watcher stops once the job has ended, and Slurm keeps no
		// comment on a finished job ("Job has already finished"): a
		// failed job's digest goes to the report, the webhook and the mail.
		log.Debug("no job comment for a failed job: Slurm refuses comments on a finished job")
	case a.Comment:
		done := ""
		if a.Control == ControlRequeueExclude {
			done = p.outcome()
		}
		if _, err := a.updateComment(ctx, log, ev, func(old string) (string, bool) {
			return DigestComment(old, rep.Digest, rep.Since, rep.HTML, done), false
		}); err != nil {
			errs = append(errs, err)
		}
	}
	if err := a.webhook(ctx, log, webhookBody(rep)); err != nil {
		errs = append(errs, err)
	}
	if err := a.mail(ctx, log, rep); err != nil {
		errs = append(errs, err)
	}
	if rep.Event == digest.EventFailed {
		return errors.Join(errs...) // the job has ended: nothing to cancel or requeue
	}
	if revised {
		return errors.Join(errs...) // the hang action is taken once per episode, on its first digest
	}
	if err := a.control(ctx, log, ev, p); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// HandleJobRecovered announces, on the job's coordinator, that no host of
// the job is hung any more after a hang whose digest was computed at
// digest, hung since since (the digest's; zero: one window before the
// digest): the job's comment says so, and the webhook gets a "recovered"
// notification about the job (its host is this node).
func (a *Actor) HandleJobRecovered(ctx context.Context, t, digest, since time.Time) error {
	since = a.digestSince(digest, since)
	a.jobHang = false
	ev := hang.Event{Time: t, Host: a.Host, Job: a.Job, Event: hang.EventRecovered, Reason: "JobRecovered",
		Message: "no host of the job is hung any more"}
	log := a.log().WithFields(logrus.Fields{"job": a.Job, "event": hang.EventRecovered})
	log.Warn(fmt.Sprintf("vigil: job %s recovered at %s (hung since %s)", a.Job, t.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339)))
	var errs []error
	if a.Comment {
		if _, err := a.updateComment(ctx, log, ev, func(old string) (string, bool) {
			user, _ := SplitComment(old)
			return slurm.JoinComment(user, fmt.Sprintf("%s recovered at %s (hung since %s)", slurm.ReasonPrefix,
				t.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339))), false
		}); err != nil {
			errs = append(errs, err)
		}
	}
	if err := a.webhook(ctx, log, webhookBody(a.newReport(ev, since, []string{}))); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (a *Actor) jobOf(d digest.DigestEvent) string {
	if a.Job != "" {
		return a.Job
	}
	return d.Job
}

// digestSince is since when a hang whose digest came at digest was hung:
// since, the digest's own (the last progress of the first host to stall),
// or, from a digest without one (an older coordinator's), one window
// before the digest.
func (a *Actor) digestSince(digest, since time.Time) time.Time {
	if since.IsZero() {
		return digest.Add(-a.Window)
	}
	return since
}

// digestReport is the hang report of a digest: about this node, blaming
// the digest's culprits. Since is the digest's since (digestSince).
func (a *Actor) digestReport(d digest.DigestEvent) hangreport.Report {
	dg := &hangreport.Digest{Cause: d.Cause, Origin: d.Origin, Hint: d.Hint, Hosts: d.Hosts, Culprits: []hangreport.DigestCulprit{}}
	if det := d.Detection; det != nil {
		dg.DetectedBy, dg.Detection, dg.LastProgress = det.By, det.Words(), det.LastProgress.UTC()
	}
	if !d.Revises.IsZero() {
		dg.Revises = d.Revises.UTC()
	}
	culprits := []string{}
	for _, c := range d.Culprits {
		dg.Culprits = append(dg.Culprits, hangreport.DigestCulprit{Host: c.Host, Reason: c.Reason, Evidence: c.Evidence})
		culprits = append(culprits, c.Host)
	}
	r := hangreport.Report{
		V: hangreport.ReportVersion, Event: hang.EventHung, Job: a.jobOf(d), User: a.User, Host: a.Host,
		Time: d.Time.UTC(), Since: a.digestSince(d.Time, d.Since).UTC(), Window: a.Window.String(),
		Reason: d.Cause, Message: d.Hint, Flat: []string{}, Culprits: culprits,
		Actions: a.plannedActions(d.Event == digest.EventFailed, nil), Digest: dg,
	}
	if d.Event == digest.EventFailed {
		r.Event = digest.EventFailed // the job has ended: no hang action
	}
	return r
}

// originWords say a digest's origin for people.
var originWords = map[string]string{
	digest.OriginCluster: "looks like the cluster's",
	digest.OriginJob:     "looks like the job's own",
}

// culpritList is "gpu04 (TransportErrors), gpu07 (BadLinks)", or "no host
// stands out".
func culpritList(d *hangreport.Digest) string {
	if len(d.Culprits) == 0 {
		return "no host stands out"
	}
	parts := make([]string, 0, len(d.Culprits))
	for _, c := range d.Culprits {
		parts = append(parts, c.Host+" ("+c.Reason+")")
	}
	return strings.Join(parts, ", ")
}

// digestLine is "network: gpu04 (TransportErrors). NCCL reported ...".
func digestLine(d *hangreport.Digest) string {
	return d.Cause + ": " + culpritList(d) + ". " + d.Hint
}

// shortHints are the comment's hints, by cause: the first thing to try.
var shortHints = map[string]string{
	digest.CauseBadDevice:         "the host is re-checked; requeue with --exclude",
	digest.CauseRankFailed:        "read that host's first error",
	digest.CauseNetwork:           "check its port and cable; NCCL_IB_TIMEOUT=22",
	digest.CauseDataStall:         "check its input file system, DataLoader num_workers",
	digest.CauseDifferentProgress: "same collectives on every rank, even data split",
	digest.CauseUnknown:           "see the job's output; py-spy dump a rank",
}

// DigestComment is the job comment after a digest: the user's part kept,
// vigil's note replaced by "vigil: hung since T, CAUSE: HOST (REASON) —
// HINT", cut to MaxCommentNote bytes. done, when not "", is what the hang
// action did to the job ("requeued without n3") and takes the hint's
// place. When page (the report's HTML page) is not "" and fits in
// MaxCommentNote after the note, the note ends "; HTML: PAGE"; a page
// that does not fit is left to the report, the log, the webhook and the
// mail.
func DigestComment(old string, d *hangreport.Digest, since time.Time, page, done string) string {
	user, _ := SplitComment(old)
	by := ""
	if d.DetectedBy != "" && d.DetectedBy != digest.DetectedWindow {
		by = " (" + d.DetectedBy + ")"
	}
	if !d.Revises.IsZero() {
		by += " (revised)"
	}
	note := fmt.Sprintf("%s hung since %s%s, %s: %s", slurm.ReasonPrefix, since.UTC().Format(time.RFC3339), by, d.Cause, culpritList(d))
	if done != "" {
		note += " — " + done
	} else if h := shortHints[d.Cause]; h != "" {
		note += " — " + h
	}
	note = textutil.CutWithin(note, MaxCommentNote, "...")
	if withPage := note + "; HTML: " + page; page != "" && len(withPage) <= MaxCommentNote {
		note = withPage
	}
	return slurm.JoinComment(user, note)
}
