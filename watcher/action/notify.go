package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/notify"
	"github.com/vigil-hpc/vigil/policy"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

// The job comment carries vigil's state after the user's own comment:
//
//	<user comment>; vigil: hung since 2026-11-29T10:00:00Z on n1,n2
//	<user comment>; vigil: recovered at 2026-11-29T10:40:00Z on n1 (hung since 2026-11-29T10:00:00Z)
//
// The user's part is kept; vigil's part is replaced, never appended twice.

var hungMarker = regexp.MustCompile(`^vigil: hung since (\S+) on (\S+)$`)

// SplitComment splits a job comment into the user's part and vigil's part
// (slurm.SplitComment).
func SplitComment(c string) (user, vigil string) { return slurm.SplitComment(c) }

// HungComment is the job comment after a hang on host since since. When the
// old comment already reports a hang that began less than window apart from
// since (another node of the same job, same episode), the hosts are merged
// and dup is true.
func HungComment(old, host string, since time.Time, window time.Duration) (comment string, dup bool) {
	user, mine := SplitComment(old)
	hosts := []string{host}
	if m := hungMarker.FindStringSubmatch(mine); m != nil {
		if t, err := time.Parse(time.RFC3339, m[1]); err == nil && absDur(t.Sub(since)) < window {
			prev := strings.Split(m[2], ",")
			dup = true
			hosts = append(prev, host)
			if t.Before(since) {
				since = t
			}
		}
	}
	slices.Sort(hosts)
	hosts = slices.Compact(hosts)
	return slurm.JoinComment(user, fmt.Sprintf("%s hung since %s on %s", slurm.ReasonPrefix, since.UTC().Format(time.RFC3339), strings.Join(hosts, ","))), dup
}

// RecoveredComment is the job comment after host recovered at t. Other hosts
// of a shared hang stay listed as hung.
func RecoveredComment(old, host string, t, since time.Time) string {
	user, mine := SplitComment(old)
	if m := hungMarker.FindStringSubmatch(mine); m != nil {
		rest := slices.DeleteFunc(strings.Split(m[2], ","), func(h string) bool { return h == host })
		if len(rest) > 0 {
			return slurm.JoinComment(user, fmt.Sprintf("%s hung since %s on %s", slurm.ReasonPrefix, m[1], strings.Join(rest, ",")))
		}
	}
	return slurm.JoinComment(user, fmt.Sprintf("%s recovered at %s on %s (hung since %s)", slurm.ReasonPrefix,
		t.UTC().Format(time.RFC3339), host, since.UTC().Format(time.RFC3339)))
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func (a *Actor) commentHung(ctx context.Context, log logrus.FieldLogger, ev hang.Event, since time.Time) (dup bool, err error) {
	return a.updateComment(ctx, log, ev, func(old string) (string, bool) {
		return HungComment(old, ev.Host, since, a.Window)
	})
}

func (a *Actor) commentRecovered(ctx context.Context, log logrus.FieldLogger, ev hang.Event, since time.Time) error {
	_, err := a.updateComment(ctx, log, ev, func(old string) (string, bool) {
		return RecoveredComment(old, ev.Host, ev.Time, since), false
	})
	return err
}

func (a *Actor) updateComment(ctx context.Context, log logrus.FieldLogger, ev hang.Event, next func(string) (string, bool)) (bool, error) {
	if a.Slurm == nil {
		return false, errors.New("job comment: no Slurm client")
	}
	job := a.jobID(ev)
	if a.DryRun {
		info, err := a.Slurm.Job(ctx, job)
		if err != nil {
			return false, fmt.Errorf("job comment: read job %s: %w", job, err)
		}
		comment, dup := next(info.Comment)
		if comment != info.Comment {
			log.WithField("comment", comment).Warn("dry run: would set the job's comment")
		}
		return dup, nil
	}
	// dup is what the first reading said: whether another node had
	// announced this episode before this node looked.
	var dup, read bool
	var comment string
	written, err := slurm.CommentUpdate{Sleep: a.CommentSleep}.Run(ctx, a.Slurm, job, func(old string) (string, bool) {
		c, d := next(old)
		if !read {
			read, dup = true, d
		}
		comment = c
		return c, true
	})
	if err != nil {
		return dup, fmt.Errorf("job comment: job %s: %w", job, err)
	}
	if written {
		log.WithField("comment", comment).Info("job comment updated")
	}
	return dup, nil
}

// WebhookBody is what the webhook receives: a Slack-compatible text plus
// the report's structured fields.
type WebhookBody struct {
	Text string `json:"text"` // one line for people (Slack, Mattermost, Teams connectors)
	hangreport.Report
	ReportPath string `json:"report,omitempty"` // the report file on the node
}

func webhookBody(r hangreport.Report) WebhookBody {
	return WebhookBody{Text: Summary(r), Report: r, ReportPath: r.Path}
}

// Summary is the one-line message for people about a report.
func Summary(r hangreport.Report) string {
	who := "job " + r.Job
	if r.User != "" {
		who += " (" + r.User + ")"
	}
	if r.Digest != nil && r.Event == digest.EventFailed {
		s := fmt.Sprintf("vigil: %s failed (%d hosts) at %s: %s", who, len(r.Digest.Hosts),
			r.Since.Format(time.RFC3339), digestLine(r.Digest))
		if o := originWords[r.Digest.Origin]; o != "" {
			s += " It " + o + "."
		}
		return s
	}
	if r.Digest != nil && r.Event == hang.EventHung {
		s := fmt.Sprintf("vigil: %s is hung (%d hosts) since %s: %s", who, len(r.Digest.Hosts),
			r.Since.Format(time.RFC3339), digestLine(r.Digest))
		if !r.Digest.Revises.IsZero() {
			s = fmt.Sprintf("vigil: %s is hung (%d hosts) since %s, revised digest (replaces the one of %s): %s", who,
				len(r.Digest.Hosts), r.Since.Format(time.RFC3339), r.Digest.Revises.Format(time.RFC3339), digestLine(r.Digest))
		}
		if r.Digest.Detection != "" {
			s += " Detected by " + r.Digest.Detection + "."
		}
		return s + excludedLine(r)
	}
	switch r.Event {
	case hang.EventRecovered:
		return fmt.Sprintf("vigil: %s recovered on %s at %s (hung since %s)", who, r.Host,
			r.Time.Format(time.RFC3339), r.Since.Format(time.RFC3339))
	}
	s := fmt.Sprintf("vigil: %s is hung on %s since %s (no I/O progress for %s): %s", who, r.Host,
		r.Since.Format(time.RFC3339), r.Window, r.Reason)
	if r.Message != "" {
		s += " (" + r.Message + ")"
	}
	if len(r.Flat) > 0 {
		s += "; flat: " + strings.Join(r.Flat, ", ")
	}
	if len(r.Culprits) > 0 {
		s += "; culprits: " + strings.Join(r.Culprits, ",")
	}
	return s + excludedLine(r)
}

// excludedLine is " Requeued without n3." for a report whose hang action
// requeues the job without culprits, else "".
func excludedLine(r hangreport.Report) string {
	if len(r.Excluded) == 0 {
		return ""
	}
	return " Requeued without " + strings.Join(r.Excluded, ",") + "."
}

// webhook posts body to the job's webhooks, --webhook-url's and
// --vigil-webhook's, once to a URL that both name. The admins' webhook is
// never among them: vigil-epilog forwards the job's digest to it.
func (a *Actor) webhook(ctx context.Context, log logrus.FieldLogger, body WebhookBody) error {
	var errs []error
	for _, u := range webhookURLs(a.WebhookURL, a.JobWebhookURL) {
		errs = append(errs, a.post(ctx, log, u, body))
	}
	return errors.Join(errs...)
}

// webhookURLs lists the URLs that are set, each once.
func webhookURLs(urls ...string) []string {
	var out []string
	for _, u := range urls {
		if u != "" && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

func (a *Actor) post(ctx context.Context, log logrus.FieldLogger, url string, body WebhookBody) error {
	// A webhook URL's path is its secret: the logs name the host only, and
	// the errors of notify.Webhook do the same.
	log = log.WithField("webhook", policy.RedactURL(url))
	if a.DryRun {
		log.WithField("text", body.Text).Warn("dry run: would POST to the webhook")
		return nil
	}
	w := notify.Webhook{
		URL: url, Timeout: a.WebhookTimeout, Attempts: a.WebhookAttempts,
		UserAgent: "vigil-watch", HTTP: a.HTTP, Sleep: a.sleep,
		Retry: func(i int, err error) {
			log.WithError(err).WithField("attempt", i).Warn("webhook failed; retrying")
		},
	}
	n, err := w.Post(ctx, body)
	if err != nil {
		return err
	}
	log.WithField("attempt", n).Info("webhook notified")
	return nil
}

func (a *Actor) sleep(ctx context.Context, d time.Duration) error {
	if a.Sleep != nil {
		return a.Sleep(ctx, d)
	}
	return osutil.Sleep(ctx, d)
}

func (a *Actor) mail(ctx context.Context, log logrus.FieldLogger, r hangreport.Report) error {
	if !a.Mail {
		return nil
	}
	if a.User == "" {
		return errors.New("mail: the job's user is unknown")
	}
	subject := fmt.Sprintf("vigil: job %s hung on %s", r.Job, r.Host)
	if r.Digest != nil {
		subject = fmt.Sprintf("vigil: job %s hung: %s", r.Job, r.Digest.Cause)
		if !r.Digest.Revises.IsZero() {
			subject = fmt.Sprintf("vigil: job %s hung (revised): %s", r.Job, r.Digest.Cause)
		}
		if len(r.Culprits) > 0 {
			subject += " on " + strings.Join(r.Culprits, ",")
		}
	}
	m := notify.Mail{Prog: a.MailProg, Timeout: a.MailTimeout, Runner: a.Mailer}
	if a.DryRun {
		log.WithField("argv", m.Argv(subject, a.User)).Warn("dry run: would send mail")
		return nil
	}
	if err := m.Send(ctx, a.User, subject, MailBody(r)); err != nil {
		return err
	}
	log.WithField("user", a.User).Info("mail sent")
	return nil
}

// MailBody is the mail's text: the summary, then the report as JSON.
func MailBody(r hangreport.Report) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n\n", Summary(r))
	fmt.Fprintf(&b, "Job:      %s\nNode:     %s\nSince:    %s\nDetected: %s\nReason:   %s\n",
		r.Job, r.Host, r.Since.Format(time.RFC3339), r.Time.Format(time.RFC3339), r.Reason)
	if r.Path != "" {
		fmt.Fprintf(&b, "Report:   %s\n", r.Path)
	}
	if r.HTML != "" {
		fmt.Fprintf(&b, "HTML:     %s\n", r.HTML)
	}
	fmt.Fprintf(&b, "Actions:  %s\n\n", strings.Join(r.Actions, ", "))
	if r.Digest != nil {
		fmt.Fprintf(&b, "Cause:    %s\nCulprits: %s\nHosts:    %s\nHint:     %s\n",
			r.Digest.Cause, culpritList(r.Digest), strings.Join(r.Digest.Hosts, ","), r.Digest.Hint)
		if r.Digest.Detection != "" {
			fmt.Fprintf(&b, "How:      %s\n", r.Digest.Detection)
		}
		b.WriteString("\n")
		if len(r.Digest.Culprits) == 0 {
			b.WriteString("Evidence: none against any host (no host stands out); see the report.\n")
			return b.Bytes()
		}
		writeEvidence(&b, r.Digest.Culprits)
		return b.Bytes()
	}
	if len(r.Evidence) == 0 {
		b.WriteString("Evidence: none recorded.\n")
		return b.Bytes()
	}
	writeEvidence(&b, r.Evidence)
	return b.Bytes()
}

// writeEvidence writes "Evidence:" and v as indented JSON.
func writeEvidence(b *bytes.Buffer, v any) {
	b.WriteString("Evidence:\n")
	ev, _ := json.MarshalIndent(v, "", "  ")
	b.Write(ev)
	b.WriteByte('\n')
}
