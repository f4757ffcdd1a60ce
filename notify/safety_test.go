package notify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWebhookErrorsHideTheURL: whatever fails (an answer of 500 or 403,
// nothing listening, a URL the client cannot use), the error names the
// webhook by scheme and host only; errors.Is still sees ErrPermanent.
func TestWebhookErrorsHideTheURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "forbidden") {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	const path = "/services/T0/B0/s3cr3t?token=k3y"
	for _, tc := range []struct {
		name, url string
		permanent bool
	}{
		{"500", srv.URL + path, false},
		{"403", srv.URL + "/forbidden" + path, true},
		{"refused", closed + path, false},
		{"escaped path", srv.URL + "/services/s3cr3t%2Fx%20y?token=k3y", false},
		{"bad URL", "http://exa mple.com/s3cr3t?token=k3y", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Webhook{URL: tc.url, Attempts: 2, Sleep: func(context.Context, time.Duration) error { return nil }}
			var retried []string
			w.Retry = func(_ int, err error) { retried = append(retried, err.Error()) }
			_, err := w.Post(context.Background(), map[string]string{"text": "x"})
			if err == nil {
				t.Fatal("Post succeeded")
			}
			for _, msg := range append(retried, err.Error()) {
				if strings.Contains(msg, "s3cr3t") || strings.Contains(msg, "k3y") {
					t.Errorf("error shows the URL: %s", msg)
				}
			}
			if errors.Is(err, ErrPermanent) != tc.permanent {
				t.Errorf("errors.Is(%v, ErrPermanent) = %v, want %v", err, !tc.permanent, tc.permanent)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.slack.com/services/T0/B0/X": "https://hooks.slack.com/…",
		"https://hooks.example.com":                "https://hooks.example.com/",
		"https://hooks.example.com/?token=x":       "https://hooks.example.com/…",
		"https://user:pw@hooks.example.com/":       "https://hooks.example.com/",
		"not a url":                                "(a URL)",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMailTextIsSafe: a subject, a body and a job's value that hold
// newlines, mailx escapes ("~!"), a lone "." and control characters reach
// a real MailProg (a script that records its argv and stdin) as text: the
// subject one line, no line of the body starting with '~' or being ".",
// and a job's value on the one line it was given.
func TestMailTextIsSafe(t *testing.T) {
	dir := t.TempDir()
	argv, stdin, pwned := filepath.Join(dir, "argv"), filepath.Join(dir, "stdin"), filepath.Join(dir, "pwned")
	prog := filepath.Join(dir, "mailprog")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %s\ncat > %s\n", argv, stdin)
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	workdir := "/home/u/x\n~! touch " + pwned + "\n.\nResult: forged\x1b[2J"
	body := "Result: " + OneLine(workdir) + "\n~r /etc/shadow\n.\nend\r\n"
	subject := "vigil: job 1\n~! touch " + pwned
	if err := (Mail{Prog: prog}).Send(context.Background(), "alice", subject, []byte(body)); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(argv)
	if want := "-s\nvigil: job 1 ~! touch " + pwned + "\nalice\n"; string(a) != want {
		t.Errorf("argv %q, want %q", a, want)
	}
	got, _ := os.ReadFile(stdin)
	lines := strings.Split(string(got), "\n")
	if !strings.HasPrefix(lines[0], "Result: \"/home/u/x\\n~! touch ") {
		t.Errorf("the job's value did not stay on its line: %q", lines[0])
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "~") || l == "." || strings.ContainsAny(l, "\r\x1b") || strings.HasPrefix(l, "Result: forged") {
			t.Errorf("body line %q: an escape, a lone dot, a control character or a forged line", l)
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("a command of the text ran")
	}
	for _, to := range []string{"-f x", "a b", "alice\nbob"} {
		if err := (Mail{Prog: prog}).Send(context.Background(), to, "s", nil); err == nil {
			t.Errorf("recipient %q accepted", to)
		}
	}
}
