package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/notify"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// Admin notifications ([notify], docs/notify.md). After vigil drained a
// node for a check it had not named before, the admins get a message
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

// adminState is what the guard and the notifications share in one run.
type adminState struct {
	// fleetRead is set once the fleet was read (or could not be).
	fleetRead bool
	// fleet is every node of the cluster, nil when not read.
	fleet []slurm.Node
}

// fleetSlurm is the part of slurm.Client the guard and the notifications
// use beyond Slurm.
type fleetSlurm interface {
	Nodes(ctx context.Context) ([]slurm.Node, error)
	SetNodeComment(ctx context.Context, node, comment string) error
	Config(ctx context.Context) (map[string]string, error)
}

// fleetClient is the fleet-wide Slurm client: nil in a dry run, and for an
// Options.Slurm that has no fleet calls.
func (r *run) fleetClient() fleetSlurm {
	if r.o.DryRun {
		return nil
	}
	f, _ := r.rawSlurm().(fleetSlurm)
	return f
}

// notifyDrain tells the admins that the node was drained (in a dry run:
// logs what it would send), for the checks Decide named (plan.Notify).
func (r *run) notifyDrain(ctx context.Context, plan Plan) {
	checks := plan.Notify
	if len(checks) == 0 {
		return
	}
	if r.o.DryRun {
		r.note("would notify ([notify]) that %s is drained for %s", r.rep.Node, strings.Join(checks, ","))
		r.log.WithField("checks", strings.Join(checks, ",")).Info("would notify: dry run")
		return
	}
	mine, summaries := adminNotices(r.readFleet(ctx), checks, r.rep.Node, r.o.Now(), r.s.Notify)
	for _, s := range summaries {
		r.sendSummary(ctx, s.check, s.nodes)
	}
	if len(mine) > 0 {
		r.sendDrained(ctx, plan.Drain, mine)
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
		others := drainedFor(fleet, check, node, now, n.Window)
		switch noticeFor(len(others)+1, n.Burst) {
		case noticeNode:
			mine = append(mine, check)
		case noticeSummary:
			summaries = append(summaries, summary{check, append(others, node)})
		}
	}
	return mine, summaries
}

// newlyDrained lists the checks that failed (and were not guarded) in
// results and that vigil's earlier reason old did not name; the budget
// when none did and it ran out.
func newlyDrained(old string, guarded []guardedCheck, results []benchmarks.Result, budgetExpired bool) []string {
	entries, _ := benchmarks.ParseDrain(old)
	var out []string
	for _, c := range failedChecks(results) {
		if slices.ContainsFunc(guarded, func(g guardedCheck) bool { return g.Check == c }) ||
			slices.ContainsFunc(entries, func(e benchmarks.DrainEntry) bool { return e.Check == c }) {
			continue
		}
		out = append(out, c)
	}
	if len(out) == 0 && budgetExpired && !strings.Contains(old, benchmarks.BudgetCheck) {
		out = append(out, benchmarks.BudgetCheck)
	}
	return out
}

// sendDrained sends this node's message for checks.
func (r *run) sendDrained(ctx context.Context, plan drainPlan, checks []string) {
	var lines []string
	var items []map[string]any
	for _, res := range r.rep.Results {
		if res.Status != benchmarks.StatusFail || !slices.Contains(checks, res.Check) {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %s%s: %s", res.Check, res.Reason, at(res.Device), res.Message))
		items = append(items, checkFields(res))
	}
	job := ""
	if r.rep.Job != "" {
		job = " (job " + r.rep.Job + ")"
	}
	text := fmt.Sprintf("vigil drained %s%s for %s: %s. Reason: %s. Then: %s",
		r.rep.Node, job, strings.Join(checks, ","), strings.Join(lines, "; "), plan.Reason, retestHint(r.rep.Node, checks))
	fields := map[string]any{"event": "drain", "node": r.rep.Node, "job": r.rep.Job, "mode": r.rep.Mode,
		"reason": plan.Reason, "checks": items}
	r.sendNotice(ctx, "drain", checks, text, fields)
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
func (r *run) sendSummary(ctx context.Context, check string, nodes []string) {
	slices.Sort(nodes)
	text := fmt.Sprintf("%d nodes drained by vigil for %s within %v: %s; further %s drains within this window are not notified one by one; see sinfo -R",
		len(nodes), check, r.s.Notify.Window, strings.Join(nodes, ","), check)
	fields := map[string]any{"event": "summary", "check": check, "count": len(nodes), "nodes": nodes,
		"window": r.s.Notify.Window.String(), "node": r.rep.Node, "job": r.rep.Job}
	r.sendNotice(ctx, "summary", []string{check}, text, fields)
}

// sendNotice sends one message to the webhook and every mail recipient,
// within [notify] timeout and the run's budget, and records each attempt
// in the report. Failures are logged at error level and change nothing else.
func (r *run) sendNotice(ctx context.Context, kind string, checks []string, text string, fields map[string]any) {
	n := r.s.Notify
	d := n.Timeout
	if left := time.Until(r.deadline); left < d {
		d = max(left, time.Second)
	}
	nctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	record := func(to string, err error) {
		nt := report.Notice{Kind: kind, Checks: checks, To: to, Sent: err == nil}
		if err != nil {
			nt.Error = err.Error()
			r.log.WithError(err).WithField("to", to).Error("notifying the admins ([notify]) failed; the node's state is unchanged by it")
		}
		r.rep.Notices = append(r.rep.Notices, nt)
	}
	if n.WebhookURL != "" {
		w := notify.Webhook{URL: n.WebhookURL, Timeout: n.WebhookTimeout, Attempts: n.WebhookAttempts, UserAgent: r.o.Program}
		_, err := w.Post(nctx, map[string]any{"text": text, "vigil": fields})
		record("webhook", err)
	}
	if len(n.Mail) > 0 {
		m := notify.Mail{Prog: r.mailProg(nctx), Timeout: d}
		subject := firstLine(text, 120)
		for _, to := range n.Mail {
			record("mail:"+to, m.Send(nctx, to, subject, []byte(text+"\n")))
		}
	}
}

// mailProg is [notify] mail_prog, else Slurm's MailProg, else
// notify.DefaultMailProg.
func (r *run) mailProg(ctx context.Context) string {
	if r.s.Notify.MailProg != "" {
		return r.s.Notify.MailProg
	}
	return r.slurmMailProg(ctx)
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
