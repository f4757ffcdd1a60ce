package notice

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/record"
	"github.com/vigil-hpc/vigil/notify"
	"github.com/vigil-hpc/vigil/policy"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/session"
)

// A job that chose --vigil-notify (mail, webhook) within [policy] hears of
// a node of the job that failed the prolog: one mail to the job's user
// through Slurm's MailProg and/or one POST to the job's webhook, saying
// which node failed which check and why, that Slurm requeues the job, and
// where the node's result file is.
//
// One message per job, not per failing node, where the job's comment is
// on ([prolog] job_comment): a failing node that finds another node's
// failure already in the comment when it first reads it stays silent; the
// first one to write its failure there sends. Two nodes that fail within
// the same few milliseconds can both send, and so can every failing node
// where the comment is off. A first node whose prolog starts only after
// another node has already failed can find the failure of the job's
// previous run in the comment and stay silent: its own report and result
// file still have it.
//
// Sending is bounded by UserNotifyTimeout and by the prolog's budget;
// failures are logged and noted in the report, and never change the
// verdict or the exit code.

// UserNotifyTimeout bounds all the messages of one prolog run.
var UserNotifyTimeout = 10 * time.Second

// UserNotice is the job's notification choice and what the prolog saw of
// the other nodes' failures.
type UserNotice struct {
	// choice is the job's --vigil-notify and --vigil-webhook within the policy.
	Choice policy.Notify
	// read is set once the job's comment was read before this node's failure was written.
	read bool
	// othersFirst is set when that comment already reported another node's failure.
	othersFirst bool
}

// SawComment records, the first time only, whether vigil's part of the
// job's comment already reported another node's failure.
func (u *UserNotice) SawComment(othersFailed bool) {
	if u.read {
		return
	}
	u.read = true
	u.othersFirst = othersFailed
}

// PrologFailure is what the job's webhook receives when a node of the job
// fails the prolog: a Slack-compatible text plus the structured fields.
type PrologFailure struct {
	Text     string                  `json:"text"`
	Event    string                  `json:"event"` // "prolog_failed"
	Job      string                  `json:"job"`
	User     string                  `json:"user,omitempty"`
	Node     string                  `json:"node"`
	Failed   []record.JobResultCheck `json:"failed"`
	Requeued bool                    `json:"requeued"`
	// ResultFile is the node's result file; "" when [prolog] result_dir is off.
	ResultFile string `json:"result_file,omitempty"`
}

// EventPrologFailed is PrologFailure's event.
const EventPrologFailed = "prolog_failed"

// NewPrologFailure is the message about rep's node, whose result file is
// resultFile ("" for none).
func NewPrologFailure(rep *report.Report, user, resultFile string) PrologFailure {
	jr := record.NewJobResult(rep)
	m := PrologFailure{Event: EventPrologFailed, Job: rep.Job, User: user, Node: rep.Node, Failed: jr.Failed,
		Requeued: true, ResultFile: resultFile}
	if m.Failed == nil {
		m.Failed = []record.JobResultCheck{}
	}
	m.Text = fmt.Sprintf("vigil: job %s: %s; the job is requeued", rep.Job, decide.NodeFailure(rep.Node, rep.Results))
	return m
}

// MailBody is the mail's text. Each value takes one line of it
// (notify.OneLine): the result file's path may be the job's working
// directory, which the user names (newlines, "~!" and all), and root pipes
// the body to MailProg.
func (m PrologFailure) MailBody() []byte {
	var b strings.Builder
	one := notify.OneLine
	fmt.Fprintf(&b, "%s.\n\nJob:    %s\nNode:   %s\n", one(m.Text), one(m.Job), one(m.Node))
	for _, c := range m.Failed {
		why := strings.TrimSpace(c.Reason + " " + c.Device)
		fmt.Fprintf(&b, "Check:  %s (%s)", one(c.Check), one(why))
		if c.Message != "" {
			fmt.Fprintf(&b, ": %s", one(c.Message))
		}
		b.WriteByte('\n')
	}
	b.WriteString("Job:    requeued by Slurm (a batch job starts again on other nodes; srun and salloc fail)\n")
	if m.ResultFile != "" {
		fmt.Fprintf(&b, "Result: %s\n", one(m.ResultFile))
	}
	return []byte(b.String())
}

// Subject is the mail's subject.
func (m PrologFailure) Subject() string {
	return fmt.Sprintf("vigil: job %s requeued: %s failed its checks", m.Job, m.Node)
}

// NotifyUser tells the job's user that this node (rep's) failed the
// prolog, when the job chose so (u) and no other node of the job did it
// first; dir is the result files' directory ("" for none).
func NotifyUser(ctx context.Context, u UserNotice, rep *report.Report, job *slurm.Job, dir string, sl *session.Access, log logrus.FieldLogger, note func(format string, args ...any)) {
	if sl.DryRun || decide.Mode(rep.Mode) != decide.ModeProlog || job == nil || !u.Choice.Any() {
		return
	}
	log = log.WithField("node", rep.Node)
	if u.othersFirst {
		log.Info("another node of the job already reported its failure in the job's comment; it tells the job's user, not this node")
		return
	}
	d := min(UserNotifyTimeout, max(time.Until(sl.Deadline), time.Second))
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	m := NewPrologFailure(rep, job.User, resultFile(dir, job.ID, rep.Node))
	if u.Choice.WebhookURL != "" {
		userWebhook(cctx, log, u.Choice.WebhookURL, m, note)
	}
	if u.Choice.Mail {
		userMail(cctx, log, job.User, sl.MailProg(cctx), m, note)
	}
}

// resultFile is the path of node's result file for job in dir, "" when
// none is written.
func resultFile(dir, job, node string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, record.JobResultName(job, node))
}

// userWebhook posts m to the job's webhook url.
func userWebhook(ctx context.Context, log logrus.FieldLogger, url string, m PrologFailure, note func(format string, args ...any)) {
	log = log.WithField("webhook", policy.RedactURL(url))
	w := notify.Webhook{URL: url, Attempts: 2, Timeout: 5 * time.Second, UserAgent: "vigil-prolog"}
	if _, err := w.Post(ctx, m); err != nil {
		// The URL's path may be the job's secret: not in the report or the log.
		msg := strings.ReplaceAll(err.Error(), url, policy.RedactURL(url))
		note("the job's webhook was not told of this failure: %s", msg)
		log.WithField("error", msg).Warn("posting to the job's webhook")
		return
	}
	log.Info("the job's webhook was told of this node's failure")
}

// userMail mails m to the job's user through prog.
func userMail(ctx context.Context, log logrus.FieldLogger, user, prog string, m PrologFailure, note func(format string, args ...any)) {
	mail := notify.Mail{Prog: prog, Timeout: UserNotifyTimeout}
	if err := mail.Send(ctx, user, m.Subject(), m.MailBody()); err != nil {
		note("the job's user was not mailed of this failure: %v", err)
		log.WithError(err).Warn("mailing the job's user")
		return
	}
	log.WithFields(logrus.Fields{"user": user, "mail_prog": prog}).Info("the job's user was mailed of this node's failure")
}
