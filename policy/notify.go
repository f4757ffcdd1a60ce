package policy

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/notify"
)

// Channels of --vigil-notify and [policy] notify: how vigil tells the
// job's user of a hang (vigil-watch) or of a node of the job that failed
// the prolog (vigil-prolog). NotifyNone chooses neither.
const (
	NotifyMail    = "mail"
	NotifyWebhook = "webhook"
	NotifyNone    = "none"
)

// Option names of the notification choice, as on the sbatch command line
// without "--vigil-".
const (
	OptNotify  = "notify"
	OptWebhook = "webhook"
)

// Environment variables of the notification choice: SPANK_VIGIL_NOTIFY and
// SPANK_VIGIL_WEBHOOK in the prolog's environment, EnvNotify and
// EnvWebhookURL in the job's steps and the watcher the plugin starts.
const (
	EnvSpankNotify  = "SPANK_VIGIL_NOTIFY"
	EnvSpankWebhook = "SPANK_VIGIL_WEBHOOK"
	EnvNotify       = "VIGIL_NOTIFY"
	EnvWebhookURL   = "VIGIL_WEBHOOK_URL"
)

// setNotify parses --vigil-notify: "none", or a comma-separated list of
// "mail" and "webhook".
func (r *Request) setNotify(v string, bad func(string, ...any) error) error {
	if v == NotifyNone {
		r.Notify = []string{}
		return nil
	}
	var chans []string
	for _, c := range strings.Split(v, ",") {
		c = strings.TrimSpace(c)
		switch c {
		case NotifyMail, NotifyWebhook:
			if !slices.Contains(chans, c) {
				chans = append(chans, c)
			}
		case NotifyNone:
			return bad("%q cannot be combined with channels", NotifyNone)
		default:
			return bad("want a comma-separated list of %q and %q, or %q", NotifyMail, NotifyWebhook, NotifyNone)
		}
	}
	r.Notify = chans
	return nil
}

// setWebhook parses --vigil-webhook: an absolute http or https URL.
func (r *Request) setWebhook(v string, bad func(string, ...any) error) error {
	if err := checkWebhookURL(v); err != nil {
		return bad("%v", err)
	}
	r.Webhook = v
	return nil
}

// checkWebhookURL accepts an absolute http(s) URL with a host, without
// user name, password or fragment.
func checkWebhookURL(v string) error {
	if strings.ContainsAny(v, " \t\r\n") {
		return fmt.Errorf("not a URL")
	}
	if err := notify.CheckURL(v); err != nil {
		return err
	}
	u, _ := url.Parse(v)
	switch {
	case u.User != nil:
		return fmt.Errorf("the URL may not carry a user name or password")
	case u.Fragment != "" || strings.Contains(v, "#"):
		return fmt.Errorf("the URL may not carry a fragment (#...)")
	}
	return nil
}

// RedactURL is u cut to its scheme and host ("https://hooks.example/…"),
// for logs and messages: a webhook URL's path is often its secret.
func RedactURL(u string) string { return notify.RedactURL(u) }

// validateNotify checks [policy] notify and webhooks.
func (p Policy) validateNotify(f *config.File) []error {
	var errs []error
	for _, c := range p.Notify {
		if c != NotifyMail && c != NotifyWebhook {
			errs = append(errs, f.Errorf(Section+".notify", "%q: want %q or %q", c, NotifyMail, NotifyWebhook))
		}
	}
	for _, w := range p.Webhooks {
		if err := checkWebhookURL(w); err != nil {
			errs = append(errs, f.Errorf(Section+".webhooks", "%q: %v", w, err))
		}
	}
	hasHook := slices.Contains(p.Notify, NotifyWebhook)
	switch {
	case hasHook && len(p.Webhooks) == 0:
		errs = append(errs, f.Errorf(Section+".notify", "allows %q but [policy] webhooks lists no URL users may post to: list them, or remove %q", NotifyWebhook, NotifyWebhook))
	case !hasHook && len(p.Webhooks) > 0:
		errs = append(errs, f.Errorf(Section+".webhooks", "lists URLs but [policy] notify does not allow %q: add it there, or empty webhooks", NotifyWebhook))
	}
	return errs
}

// WebhookAllowed reports whether users may give u with --vigil-webhook: an
// entry of [policy] webhooks that ends in "/" allows every URL of the same
// scheme and host whose path starts with the entry's path (and has no ".."
// segment); any other entry allows that exact URL.
func (p Policy) WebhookAllowed(u string) bool {
	if checkWebhookURL(u) != nil {
		return false
	}
	cand, _ := url.Parse(u)
	for _, e := range p.Webhooks {
		if !strings.HasSuffix(e, "/") {
			if u == e {
				return true
			}
			continue
		}
		pre, err := url.Parse(e)
		if err != nil {
			continue
		}
		if strings.EqualFold(cand.Scheme, pre.Scheme) && strings.EqualFold(cand.Host, pre.Host) &&
			strings.HasPrefix(cand.EscapedPath(), pre.EscapedPath()) && !dotDot(cand.Path) {
			return true
		}
	}
	return false
}

// dotDot reports whether a URL path has a "." or ".." segment.
func dotDot(path string) bool {
	for _, s := range strings.Split(path, "/") {
		if s == ".." || s == "." {
			return true
		}
	}
	return false
}

// checkNotify refuses, at submit time, a channel or a webhook the policy
// does not allow.
func (p Policy) checkNotify(r Request, refuse func(string, ...any)) {
	for _, c := range r.Notify {
		if !slices.Contains(p.Notify, c) {
			refuse("notification by %s is not allowed on this cluster (allowed: %s; [policy] notify)", c, list(p.Notify))
		}
	}
	switch {
	case r.Webhook == "":
	case !slices.Contains(p.Notify, NotifyWebhook):
		refuse("webhooks chosen by the job are not allowed on this cluster ([policy] notify does not list %q)", NotifyWebhook)
	case !p.WebhookAllowed(r.Webhook):
		refuse("webhook %s is not one this cluster allows ([policy] webhooks; ask the admins to add it)", RedactURL(r.Webhook))
	}
}

// Notify is how vigil tells the job's user, after the policy.
type Notify struct {
	// Mail mails the job's user through Slurm's MailProg.
	Mail bool
	// WebhookURL is the job's own webhook; "" for none.
	WebhookURL string
	// Warnings say what was ignored, one sentence each.
	Warnings []string
}

// Any reports whether the job's user is told by some channel.
func (n Notify) Any() bool { return n.Mail || n.WebhookURL != "" }

// ApplyNotify returns the job's notification choice within the policy.
// --vigil-webhook without --vigil-notify chooses the webhook; with
// --vigil-notify, only the channels listed there count. A channel or URL
// the policy does not allow is ignored with a warning: the environment
// that carries them can be forged in the job's steps.
func (p Policy) ApplyNotify(r Request) Notify {
	var out Notify
	warn := func(format string, a ...any) { out.Warnings = append(out.Warnings, fmt.Sprintf(format, a...)) }
	want := r.Notify
	if want == nil && r.Webhook != "" {
		want = []string{NotifyWebhook}
	}
	for _, c := range want {
		switch {
		case !slices.Contains(p.Notify, c):
			warn("ignoring --vigil-notify=%s: not allowed (allowed: %s; [policy] notify)", c, list(p.Notify))
		case c == NotifyMail:
			out.Mail = true
		case r.Webhook == "":
			warn("--vigil-notify=%s without --vigil-webhook=URL: no webhook to post to", NotifyWebhook)
		case !p.WebhookAllowed(r.Webhook):
			warn("ignoring --vigil-webhook=%s: not one of [policy] webhooks", RedactURL(r.Webhook))
		default:
			out.WebhookURL = r.Webhook
		}
	}
	if r.Webhook != "" && r.Notify != nil && !slices.Contains(r.Notify, NotifyWebhook) {
		warn("--vigil-webhook=%s unused: --vigil-notify does not list %q", RedactURL(r.Webhook), NotifyWebhook)
	}
	return out
}
