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
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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

// RedactURL is u cut to its scheme and host ("https://hooks.example/…"):
// a webhook's path and query are its secret, and never go into a log, a
// report or an error. Something that is not a URL with a host is "(a URL)".
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "(a URL)"
	}
	if (p.Path == "" || p.Path == "/") && p.RawQuery == "" && p.Fragment == "" {
		return p.Scheme + "://" + p.Host + "/"
	}
	return p.Scheme + "://" + p.Host + "/…"
}

// Webhook POSTs JSON bodies to one URL. Its errors name the URL only as
// RedactURL does.
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
	shown := RedactURL(w.URL)
	for i := 1; ; i++ {
		err = w.redact(w.post(ctx, data))
		if err == nil {
			return i, nil
		}
		if errors.Is(err, ErrPermanent) || i >= attempts || ctx.Err() != nil {
			return i, fmt.Errorf("webhook %s: %d attempt(s): %w", shown, i, err)
		}
		if w.Retry != nil {
			w.Retry(i, err)
		}
		if err := w.sleep(ctx, backoff); err != nil {
			return i, fmt.Errorf("webhook %s: %w", shown, err)
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
		return fmt.Errorf("%w: not a URL", ErrPermanent)
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

// redact is err with every spelling of the URL in its text (the HTTP
// client's *url.Error quotes it) replaced by RedactURL's. The answer's
// body stays: it is the server's, not the URL.
func (w Webhook) redact(err error) error {
	if err == nil {
		return nil
	}
	shown := RedactURL(w.URL)
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = shown
	}
	msg := err.Error()
	for _, s := range urlSpellings(w.URL) {
		msg = strings.ReplaceAll(msg, s, shown)
	}
	if msg == err.Error() {
		return err
	}
	return &redacted{msg: msg, err: err}
}

// urlSpellings are the forms a URL takes in error texts: as given and as
// net/url prints it back.
func urlSpellings(u string) []string {
	out := []string{u}
	if p, err := url.Parse(u); err == nil && p.String() != u {
		out = append(out, p.String())
	}
	return out
}

// redacted is an error whose text had a secret taken out; errors.Is still
// sees what it wraps (ErrPermanent).
type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

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
// MailProg -s SUBJECT USER, the subject made one line (SafeSubject).
func MailArgv(prog, subject, to string) []string {
	if prog == "" {
		prog = DefaultMailProg
	}
	return []string{prog, "-s", SafeSubject(subject), to}
}

// Send mails body to the recipient to (a user name or an address). The
// subject is made one line and the body safe for mailx (SafeBody): parts
// of both come from the job (paths, names, messages), and root runs
// MailProg.
func (m Mail) Send(ctx context.Context, to, subject string, body []byte) error {
	if to == "" {
		return errors.New("mail: no recipient")
	}
	if strings.HasPrefix(to, "-") || strings.IndexFunc(to, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("mail: recipient %q: want a user name or an address, without spaces or a leading '-'", to)
	}
	body = SafeBody(body)
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

// MaxSubject is the longest subject Send passes to MailProg, in bytes.
const MaxSubject = 200

// SafeSubject is s as one line of valid UTF-8, at most MaxSubject bytes:
// control characters (a newline would end mailx's header) become spaces.
func SafeSubject(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) > MaxSubject {
		s = strings.ToValidUTF8(s[:MaxSubject], "")
	}
	return s
}

// SafeBody is body as valid UTF-8 whose lines mail programs take as text:
// control characters other than newline and tab become '?', and a line
// that starts with '~' (mailx's escape: "~!" runs a shell command, "~r"
// reads a file) or '.' alone (the end of the message for some) gets a
// leading space.
func SafeBody(body []byte) []byte {
	text := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(string(body), "?"))
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "~") || l == "." {
			lines[i] = " " + l
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// OneLine is a value from the job (a path, a name, a message) as it goes
// into one line of a message: as it is when it is one line of printable
// text, else Go-quoted ("\"/work/x\\n~! cmd\""), so that it can neither
// start a line of its own nor hide what it holds.
func OneLine(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }) < 0 {
		return s
	}
	return strconv.Quote(s)
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
