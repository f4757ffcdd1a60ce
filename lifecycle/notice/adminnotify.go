// Package notice is what a run tells people besides its report: the
// admins of its drains ([notify], rate limited over the fleet), the
// guard's alerts, the job's hang digest forwarded to the admins, the job's
// user of a failed prolog (--vigil-notify), and the job's comment. None
// of it changes a verdict or an exit code; a failure to tell is logged and
// noted in the report.
package notice

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/notify"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/session"
)

// Admin notifications ([notify], docs/notify.md). After vigil drained a
// node for a check it had not named before, the Admins get a message
// (webhook, mail), rate limited per check over the controller's state: the
// nodes drained by vigil for the check within [notify] window, this one
// included, are counted. While that count is at most burst, each drain sends
// its message; the drain that makes it burst+1 sends one summary; later ones
// send nothing until the window has passed. Two nodes drained within the
// same scontrol round trip may both count themselves burst+1 and send a
// summary each. Notifying never changes the verdict or the exit code.

// noticeKind is what one drain sends for one check.
type noticeKind int

const (
	noticeNone    noticeKind = iota // the burst is over: nothing
	noticeNode                      // this node's message
	noticeSummary                   // the summary of the burst
)

// noticeFor decides for one check: count is the number of nodes drained by
// vigil for it within the window, this node included.
func noticeFor(count, burst int) noticeKind {
	switch {
	case count <= burst:
		return noticeNode
	case count == burst+1:
		return noticeSummary
	}
	return noticeNone
}

// Admins tells the Admins of one run's drains ([notify]), and records and
// sends what the guard said (guardalert.go). Built once per run.
type Admins struct {
	notify config.Notify
	guard  config.Guard
	sl     *session.Access
	// rep is the run's report: its node, job and results, and where the
	// notices and guarded checks go.
	rep *report.Report
	// program is the binary's name, the webhook's User-Agent.
	program string
	now     func() time.Time
	log     logrus.FieldLogger
	note    func(format string, args ...any)
}

// NewAdmins returns the admins' notifier of one run: [notify] n, [guard]
// g, the run's Slurm access, its report rep, the binary's name, the
// clock, the log and the function that adds a note to the report.
func NewAdmins(n config.Notify, g config.Guard, sl *session.Access, rep *report.Report, program string, now func() time.Time,
	log logrus.FieldLogger, note func(format string, args ...any)) *Admins {
	return &Admins{notify: n, guard: g, sl: sl, rep: rep, program: program, now: now, log: log, note: note}
}

// Drained tells the Admins that the node was drained (in a dry run: logs
// what it would send), for the checks Decide named (plan.Notify).
func (a *Admins) Drained(ctx context.Context, plan decide.Plan) {
	checks := plan.Notify
	if len(checks) == 0 {
		return
	}
	if a.sl.DryRun {
		a.note("would notify ([notify]) that %s is drained for %s", a.rep.Node, strings.Join(checks, ","))
		a.log.WithField("checks", strings.Join(checks, ",")).Info("would notify: dry run")
		return
	}
	mine, summaries := adminNotices(a.sl.ReadFleet(ctx), checks, a.rep.Node, a.now(), a.notify)
	for _, s := range summaries {
		a.sendSummary(ctx, s.check, s.nodes)
	}
	if len(mine) > 0 {
		a.sendDrained(ctx, plan.Drain, mine)
	}
}

// summary is the one message of a check's burst: the nodes drained for it.
type summary struct {
	check string
	nodes []string
}

// adminNotices applies the rate limit over fleet (nil: no limit) to the
// checks node was drained for at now: the checks of this node's own
// message, and the summaries it sends.
func adminNotices(fleet []slurm.Node, checks []string, node string, now time.Time, n config.Notify) (mine []string, summaries []summary) {
	for _, check := range checks {
		others := decide.DrainedFor(fleet, check, node, now, n.Window)
		switch noticeFor(len(others)+1, n.Burst) {
		case noticeNode:
			mine = append(mine, check)
		case noticeSummary:
			summaries = append(summaries, summary{check, append(others, node)})
		}
	}
	return mine, summaries
}

// sendDrained sends this node's message for checks.
func (a *Admins) sendDrained(ctx context.Context, plan decide.DrainPlan, checks []string) {
	var lines []string
	var items []map[string]any
	for _, res := range a.rep.Results {
		if res.Status != benchmarks.StatusFail || !slices.Contains(checks, res.Check) {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %s%s: %s", res.Check, res.Reason, at(res.Device), res.Message))
		items = append(items, checkFields(res))
	}
	job := ""
	if a.rep.Job != "" {
		job = " (job " + a.rep.Job + ")"
	}
	then := RetestHint(a.rep.Node, checks)
	fields := map[string]any{"event": "drain", "node": a.rep.Node, "job": a.rep.Job, "mode": a.rep.Mode,
		"reason": plan.Reason, "checks": items}
	remedy := ""
	if m := a.rep.Action.Remedy; m != nil {
		fields["remedy"] = *m
		remedy = " Remedy: " + remedyWords(*m) + "."
		if m.Kind == report.RemedyNeedsService {
			fields["event"] = "needs-service"
			then = "service " + decide.OrNode(m.Device) + ", then resume by hand: scontrol update NodeName=" + a.rep.Node + " State=RESUME"
		}
	}
	text := fmt.Sprintf("vigil drained %s%s for %s: %s. Reason: %s.%s Then: %s",
		a.rep.Node, job, strings.Join(checks, ","), strings.Join(lines, "; "), plan.Reason, remedy, then)
	a.Send(ctx, "drain", checks, text, fields)
}

func at(device string) string {
	if device == "" {
		return ""
	}
	return " " + device
}

// checkFields are a failed result's structured fields: the check, its
// reason and device, and the first failing value against its threshold.
func checkFields(res benchmarks.Result) map[string]any {
	f := map[string]any{"check": res.Check, "reason": res.Reason, "device": res.Device, "message": res.Message}
	for _, v := range res.Values {
		if v.Status != benchmarks.StatusFail {
			continue
		}
		f["value"], f["name"], f["unit"] = v.Value, v.Name, v.Unit
		if v.Threshold != nil {
			f["threshold"], f["op"] = *v.Threshold, v.Op
		}
		if v.Device != "" {
			f["device"] = v.Device
		}
		break
	}
	return f
}

// sendSummary sends the one summary of check's burst.
func (a *Admins) sendSummary(ctx context.Context, check string, nodes []string) {
	slices.Sort(nodes)
	text := fmt.Sprintf("%d nodes drained by vigil for %s within %v: %s; further %s drains within this window are not notified one by one; see sinfo -R",
		len(nodes), check, a.notify.Window, strings.Join(nodes, ","), check)
	fields := map[string]any{"event": "summary", "check": check, "count": len(nodes), "nodes": nodes,
		"window": a.notify.Window.String(), "node": a.rep.Node, "job": a.rep.Job}
	a.Send(ctx, "summary", []string{check}, text, fields)
}

// Send sends one message to the webhook and every mail recipient,
// within [notify] timeout and the run's budget, and records each attempt
// in the report. Failures are logged at error level and change nothing else.
func (a *Admins) Send(ctx context.Context, kind string, checks []string, text string, fields map[string]any) {
	n := a.notify
	d := n.Timeout
	if left := time.Until(a.sl.Deadline); left < d {
		d = max(left, time.Second)
	}
	nctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	record := func(to string, err error) {
		nt := report.Notice{Kind: kind, Checks: checks, To: to, Sent: err == nil}
		if err != nil {
			nt.Error = err.Error()
			a.log.WithError(err).WithField("to", to).Error("notifying the Admins ([notify]) failed; the node's state is unchanged by it")
		}
		a.rep.Notices = append(a.rep.Notices, nt)
	}
	if n.WebhookURL != "" {
		w := notify.Webhook{URL: n.WebhookURL, Timeout: n.WebhookTimeout, Attempts: n.WebhookAttempts, UserAgent: a.program}
		_, err := w.Post(nctx, map[string]any{"text": text, "vigil": fields})
		record("webhook", err)
	}
	if len(n.Mail) > 0 {
		m := notify.Mail{Prog: a.mailProg(nctx), Timeout: d}
		subject := firstLine(text, 120)
		for _, to := range n.Mail {
			record("mail:"+to, m.Send(nctx, to, subject, []byte(notify.OneLine(text)+"\n")))
		}
	}
}

// mailProg is [notify] mail_prog, else Slurm's MailProg, else
// notify.DefaultMailProg.
func (a *Admins) mailProg(ctx context.Context) string {
	if a.notify.MailProg != "" {
		return a.notify.MailProg
	}
	return a.sl.MailProg(ctx)
}

// firstLine is s up to its first sentence end or n bytes.
func firstLine(s string, n int) string {
	if i := strings.Index(s, ": "); i > 0 && i < n {
		return s[:i]
	}
	if len(s) > n {
		return s[:n]
	}
	return s
}

// remedyWords says in a few words what the repair ladder did.
func remedyWords(m report.Remedy) string {
	var s string
	switch m.Kind {
	case report.RemedyNeedsService:
		return "NEEDS SERVICE, " + m.Note
	case report.RemedyReboot:
		s = "reboot requested"
	default:
		s = m.Kind + " " + m.Device
	}
	s += fmt.Sprintf(" (remedy %d of %d within %s)", m.Attempt, m.Max, m.Window)
	switch {
	case m.Error != "":
		s += ", FAILED: " + m.Error
	case !m.Done:
		s += ", not done"
	}
	return s
}

// RetestHint says how to re-test checks on node, for logs and notices: a
// local check with `vigil-prolog --node N --checks ...`; a cross-node
// check (net-connect, net-bandwidth, ...) only in the prolog of a job on
// the node and its peers, so the way is to resume the node once its cause
// is fixed and let the next multi-node job's prolog check it again.
func RetestHint(node string, checks []string) string {
	var local, cross []string
	for _, c := range checks {
		if ch, ok := benchmarks.Lookup(c); ok && benchmarks.Describe(ch).Scope == benchmarks.ScopeCrossNode {
			cross = append(cross, c)
		} else {
			local = append(local, c)
		}
	}
	resume := "scontrol update NodeName=" + node + " State=RESUME"
	var parts []string
	if len(local) > 0 {
		parts = append(parts, "re-test with vigil-prolog --node "+node+" --checks "+strings.Join(local, ","))
	}
	if len(cross) > 0 {
		parts = append(parts, strings.Join(cross, ",")+" is tested only by the prolog of a job on "+node+
			" and its peers: once the cause is fixed, resume it ("+resume+"); the next multi-node job checks it again, and a failure drains it again and sends that job back to the queue")
	}
	if len(local) > 0 || len(cross) == 0 {
		parts = append(parts, "or resume by hand: "+resume)
	}
	return strings.Join(parts, "; ")
}
