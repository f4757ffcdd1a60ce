// Package notify tells people what vigil found: a JSON POST to a webhook
// (Slack-compatible "text" plus structured fields) and mail through Slurm's
// MailProg. Both bound their time, retry only what retrying can fix, and
// return errors that name the endpoint; none of them decides whom to tell or
// when (the watcher for hangs, the lifecycle for drains and failed prologs).
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/vigil-hpc/vigil/internal/osutil"
)

// DefaultMailProg is Slurm's own default MailProg.
const DefaultMailProg = "/usr/bin/mail"

// ErrPermanent marks a webhook answer that retrying will not fix (HTTP 4xx
// other than 429, a malformed URL).
var ErrPermanent = errors.New("permanent")

// CheckURL reports whether u can be a webhook: an absolute http:// or
// https:// URL with a host. Every setting that names a webhook ([notify],
// [watch], the job's --vigil-webhook) is checked with it.
func CheckURL(u string) error {
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return errors.New("not a URL")
	case p.Scheme != "http" && p.Scheme != "https":
		return errors.New("want an http:// or https:// URL")
	case p.Host == "":
		return errors.New("the URL has no host")
	}
	return nil
}

// Webhook POSTs JSON bodies to one URL.
type Webhook struct {
	URL string
	// Timeout bounds each POST; 0 means 10 s.
	Timeout time.Duration
	// Attempts is how many times a failed POST is tried in all; 0 means 3.
	Attempts int
	// UserAgent names the sender ("vigil-watch", "vigil-prolog").
	UserAgent string
	// HTTP is the client; nil is a client without timeout (each POST has its own).
	HTTP *http.Client
	// Sleep waits between attempts (1 s, doubling); nil waits in real time.
	Sleep func(ctx context.Context, d time.Duration) error
	// Retry, when set, is told of each failed attempt that will be retried.
	Retry func(attempt int, err error)
}

// Post marshals body and POSTs it, retrying network errors, 429 and 5xx
// answers up to Attempts times. It returns how many attempts it made.
func (w Webhook) Post(ctx context.Context, body any) (int, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return 0, fmt.Errorf("webhook: %w", err)
	}
	attempts := w.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	backoff := time.Second
	for i := 1; ; i++ {
		err = w.post(ctx, data)
		if err == nil {
			return i, nil
		}
		if errors.Is(err, ErrPermanent) || i >= attempts || ctx.Err() != nil {
			return i, fmt.Errorf("webhook %s: %d attempt(s): %w", w.URL, i, err)
		}
		if w.Retry != nil {
			w.Retry(i, err)
		}
		if err := w.sleep(ctx, backoff); err != nil {
			return i, fmt.Errorf("webhook %s: %w", w.URL, err)
		}
		backoff *= 2
	}
}

func (w Webhook) post(ctx context.Context, data []byte) error {
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPermanent, err)
	}
	req.Header.Set("Content-Type", "application/json")
	ua := w.UserAgent
	if ua == "" {
		ua = "vigil"
	}
	req.Header.Set("User-Agent", ua)
	c := w.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return fmt.Errorf("HTTP %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return fmt.Errorf("%w: HTTP %s: %s", ErrPermanent, resp.Status, bytes.TrimSpace(msg))
}

func (w Webhook) sleep(ctx context.Context, d time.Duration) error {
	if w.Sleep != nil {
		return w.Sleep(ctx, d)
	}
	return osutil.Sleep(ctx, d)
}

// Runner runs one command with stdin: mail runs MailProg with it.
type Runner interface {
	Run(ctx context.Context, argv []string, stdin []byte) error
}

// Mail sends mail through MailProg, called as slurmctld calls it:
// MailProg -s SUBJECT USER, the body on stdin.
type Mail struct {
	// Prog is Slurm's MailProg; "" means DefaultMailProg.
	Prog string
	// Timeout bounds MailProg; 0 means 30 s.
	Timeout time.Duration
	// Runner runs it; nil is ExecRunner.
	Runner Runner
}

// Argv is the MailProg command line for one message.
func (m Mail) Argv(subject, to string) []string { return MailArgv(m.Prog, subject, to) }

// MailArgv is the MailProg command line, as slurmctld calls it:
// MailProg -s SUBJECT USER.
func MailArgv(prog, subject, to string) []string {
	if prog == "" {
		prog = DefaultMailProg
	}
	return []string{prog, "-s", subject, to}
}

// Send mails body to the recipient to (a user name or an address).
func (m Mail) Send(ctx context.Context, to, subject string, body []byte) error {
	if to == "" {
		return errors.New("mail: no recipient")
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r := m.Runner
	if r == nil {
		r = ExecRunner{}
	}
	if err := r.Run(ctx, m.Argv(subject, to), body); err != nil {
		return fmt.Errorf("mail to %s: %w", to, err)
	}
	return nil
}

// ExecRunner runs a command in its own process group with stdin, killing
// the group when the context ends; stderr is kept in the error.
type ExecRunner struct{}

// Run runs argv with stdin until it exits or ctx ends.
func (ExecRunner) Run(ctx context.Context, argv []string, stdin []byte) error {
	if len(argv) == 0 {
		return errors.New("empty command")
	}
	cmd := osutil.Command(ctx, time.Second, argv...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		if o := bytes.TrimSpace(out.Bytes()); len(o) > 0 {
			return fmt.Errorf("%s: %w: %s", argv[0], err, o)
		}
		return fmt.Errorf("%s: %w", argv[0], err)
	}
	return nil
}
