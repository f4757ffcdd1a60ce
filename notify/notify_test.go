package notify

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWebhookPost(t *testing.T) {
	cases := []struct {
		name      string
		codes     []int // answers in order; the last repeats
		attempts  int
		wantPosts int32
		wantErr   bool
		permanent bool
	}{
		{"ok at once", []int{200}, 3, 1, false, false},
		{"5xx then ok", []int{503, 200}, 3, 2, false, false},
		{"429 retried until the last attempt", []int{429}, 3, 3, true, false},
		{"4xx is permanent", []int{400}, 3, 1, true, true},
		{"one attempt", []int{500}, 1, 1, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var posts atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(posts.Add(1)) - 1
				if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("User-Agent") != "vigil-test" {
					t.Errorf("headers: %v", r.Header)
				}
				var body map[string]string
				if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body["text"] != "hello" {
					t.Errorf("body %v, err %v", body, err)
				}
				w.WriteHeader(tc.codes[min(n, len(tc.codes)-1)])
			}))
			defer srv.Close()
			var waits []time.Duration
			var retries int
			w := Webhook{URL: srv.URL, Attempts: tc.attempts, UserAgent: "vigil-test",
				Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
				Retry: func(int, error) { retries++ }}
			n, err := w.Post(context.Background(), map[string]string{"text": "hello"})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got := posts.Load(); got != tc.wantPosts || int32(n) != tc.wantPosts {
				t.Errorf("posts = %d (reported %d), want %d", got, n, tc.wantPosts)
			}
			if errors.Is(err, ErrPermanent) != tc.permanent {
				t.Errorf("permanent = %v, want %v (%v)", errors.Is(err, ErrPermanent), tc.permanent, err)
			}
			if err != nil && !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("error %q does not name the URL", err)
			}
			if retries != int(tc.wantPosts)-1 || len(waits) != retries {
				t.Errorf("retries %d, waits %v for %d posts", retries, waits, tc.wantPosts)
			}
			for i, d := range waits {
				if d != time.Second<<i {
					t.Errorf("wait %d = %v, want %v", i, d, time.Second<<i)
				}
			}
		})
	}
}

func TestWebhookTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	w := Webhook{URL: srv.URL, Timeout: 50 * time.Millisecond, Attempts: 1}
	start := time.Now()
	if _, err := w.Post(context.Background(), "x"); err == nil {
		t.Fatal("a webhook that never answers gave no error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %v", d)
	}
}

func TestMailSend(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "mail")
	script := filepath.Join(dir, "mailprog")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s|' \"$@\" > "+out+"\ncat >> "+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := Mail{Prog: script}
	if err := m.Send(context.Background(), "alice", "vigil: job 1 hung on n1", []byte("body\n")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if want := "-s|vigil: job 1 hung on n1|alice|body\n"; string(got) != want {
		t.Errorf("mail prog saw %q, want %q", got, want)
	}
	if err := m.Send(context.Background(), "", "s", nil); err == nil {
		t.Error("mail without a recipient gave no error")
	}
	if got := (Mail{}).Argv("s", "bob"); got[0] != DefaultMailProg {
		t.Errorf("default prog = %v", got)
	}
}

func TestExecRunner(t *testing.T) {
	ctx := context.Background()
	if err := (ExecRunner{}).Run(ctx, []string{"/bin/sh", "-c", "echo no such user >&2; exit 3"}, nil); err == nil || !strings.Contains(err.Error(), "no such user") {
		t.Errorf("failing command: err = %v, want its stderr", err)
	}
	if err := (ExecRunner{}).Run(ctx, nil, nil); err == nil {
		t.Error("empty command gave no error")
	}
	ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := (ExecRunner{}).Run(ctx, []string{"/bin/sh", "-c", "sleep 30 & sleep 30"}, nil); err == nil {
		t.Error("a command past its deadline returned no error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("killing the process group took %v", d)
	}
}
