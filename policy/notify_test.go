package policy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const hookPolicy = `[policy]
notify = ["mail", "webhook"]
webhooks = ["https://hooks.example/services/", "https://other.example/exact"]
`

func TestNotifySet(t *testing.T) {
	for _, tc := range []struct {
		opt, val string
		want     Request
		err      string
	}{
		{opt: OptNotify, val: "mail", want: Request{Notify: []string{"mail"}}},
		{opt: OptNotify, val: "webhook, mail,webhook", want: Request{Notify: []string{"webhook", "mail"}}},
		{opt: OptNotify, val: "none", want: Request{Notify: []string{}}},
		{opt: OptNotify, val: "mail,none", err: `"none" cannot be combined`},
		{opt: OptNotify, val: "sms", err: `--vigil-notify=sms: want a comma-separated list of "mail" and "webhook", or "none"`},
		{opt: OptNotify, val: "mail,", err: "want a comma-separated list"},
		{opt: OptWebhook, val: "https://hooks.example/a/b", want: Request{Webhook: "https://hooks.example/a/b"}},
		{opt: OptWebhook, val: "ftp://hooks.example/a", err: "want an http:// or https:// URL"},
		{opt: OptWebhook, val: "hooks.example/a", err: "want an http:// or https:// URL"},
		{opt: OptWebhook, val: "https:///a", err: "the URL has no host"},
		{opt: OptWebhook, val: "https://u:p@hooks.example/a", err: "user name or password"},
		{opt: OptWebhook, val: "https://hooks.example/a#x", err: "fragment"},
	} {
		t.Run(tc.opt+"="+tc.val, func(t *testing.T) {
			var r Request
			err := r.Set(tc.opt, tc.val)
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Set = %v, want ErrSyntax containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(r, tc.want) {
				t.Fatalf("Set = %+v, %v; want %+v", r, err, tc.want)
			}
			if r.Empty() {
				t.Fatal("a request with a notification choice reads as empty")
			}
		})
	}
}

func TestNotifyKeys(t *testing.T) {
	p, err := Load(parse(t, hookPolicy), known)
	if err != nil || !reflect.DeepEqual(p.Notify, []string{"mail", "webhook"}) || len(p.Webhooks) != 2 {
		t.Fatalf("Load = %+v, %v", p, err)
	}
	if d := Default(); !reflect.DeepEqual(d.Notify, []string{"mail"}) || d.Webhooks != nil {
		t.Fatalf("Default notify %v webhooks %v; want mail only, no webhooks", d.Notify, d.Webhooks)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"bad channel", "[policy]\nnotify = [\"sms\"]\n", `vigil.toml:2: policy.notify: invalid value: "sms": want "mail" or "webhook"`},
		{"webhook without URLs", "[policy]\n\nnotify = [\"webhook\"]\n", `vigil.toml:3: policy.notify: invalid value: allows "webhook" but [policy] webhooks lists no URL`},
		{"URLs without webhook", "[policy]\nwebhooks = [\"https://h.example/\"]\n", `vigil.toml:2: policy.webhooks: invalid value: lists URLs but [policy] notify does not allow "webhook"`},
		{"bad URL", "[policy]\nnotify = [\"webhook\"]\nwebhooks = [\"gopher://h/\"]\n", `vigil.toml:3: policy.webhooks: invalid value: "gopher://h/": want an http:// or https:// URL`},
		{"wrong type", "[policy]\nwebhooks = \"https://h.example/\"\n", "vigil.toml:2: policy.webhooks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(parse(t, tc.doc), known)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestWebhookAllowed(t *testing.T) {
	p, err := Load(parse(t, hookPolicy), known)
	if err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]bool{
		"https://hooks.example/services/T1/B2/xyz":    true,
		"https://HOOKS.example/services/T1":           true,
		"https://hooks.example/services/":             true,
		"https://other.example/exact":                 true,
		"https://other.example/exact/more":            false, // exact entries allow nothing below them
		"https://other.example/exactly":               false,
		"http://hooks.example/services/T1":            false, // scheme differs
		"https://hooks.example:8443/services/T1":      false, // port differs
		"https://hooks.example.evil.org/services/T1":  false,
		"https://hooks.example/other":                 false,
		"https://hooks.example/services/../admin":     false,
		"https://hooks.example/services/%2e%2e/admin": false,
		"https://user@hooks.example/services/T1":      false,
		"https://hooks.example/servicesX/T1":          false,
		"not a url":                                   false,
	} {
		if got := p.WebhookAllowed(u); got != want {
			t.Errorf("WebhookAllowed(%q) = %v, want %v", u, got, want)
		}
	}
}

func TestNotifyCheckAndApply(t *testing.T) {
	hooks, err := Load(parse(t, hookPolicy), known)
	if err != nil {
		t.Fatal(err)
	}
	ok := "https://hooks.example/services/T1"
	bad := "https://evil.example/x/secret"
	for _, tc := range []struct {
		name    string
		p       Policy
		r       Request
		refused []string
		want    Notify
		warn    []string
	}{
		{name: "nothing", p: hooks, r: Request{}},
		{name: "mail", p: Default(), r: Request{Notify: []string{"mail"}}, want: Notify{Mail: true}},
		{name: "webhook implied", p: hooks, r: Request{Webhook: ok}, want: Notify{WebhookURL: ok}},
		{name: "both", p: hooks, r: Request{Notify: []string{"mail", "webhook"}, Webhook: ok}, want: Notify{Mail: true, WebhookURL: ok}},
		{name: "none keeps the URL unused", p: hooks, r: Request{Notify: []string{}, Webhook: ok},
			warn: []string{`--vigil-webhook=https://hooks.example/… unused: --vigil-notify does not list "webhook"`}},
		{name: "webhook without URL", p: hooks, r: Request{Notify: []string{"webhook"}},
			warn: []string{"--vigil-notify=webhook without --vigil-webhook=URL"}},
		{name: "URL not in the list", p: hooks, r: Request{Webhook: bad},
			refused: []string{"webhook https://evil.example/… is not one this cluster allows ([policy] webhooks"},
			warn:    []string{"ignoring --vigil-webhook=https://evil.example/…: not one of [policy] webhooks"}},
		{name: "webhook channel not allowed", p: Default(), r: Request{Notify: []string{"webhook"}, Webhook: ok},
			refused: []string{"notification by webhook is not allowed on this cluster (allowed: mail; [policy] notify)",
				`webhooks chosen by the job are not allowed on this cluster ([policy] notify does not list "webhook")`},
			warn: []string{"ignoring --vigil-notify=webhook: not allowed (allowed: mail; [policy] notify)"}},
		{name: "no channel allowed", p: Policy{}, r: Request{Notify: []string{"mail"}},
			refused: []string{"notification by mail is not allowed on this cluster (allowed: none; [policy] notify)"},
			warn:    []string{"ignoring --vigil-notify=mail"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.p.Check(tc.r, reg)
			if len(errs) != len(tc.refused) {
				t.Fatalf("Check = %v, want %d refusals %q", errs, len(tc.refused), tc.refused)
			}
			for i, e := range errs {
				if !errors.Is(e, ErrRefused) || !strings.Contains(e.Error(), tc.refused[i]) {
					t.Errorf("Check[%d] = %v, want ErrRefused containing %q", i, e, tc.refused[i])
				}
				if strings.Contains(e.Error(), "secret") {
					t.Errorf("Check[%d] = %v shows the URL's path", i, e)
				}
			}
			got := tc.p.ApplyNotify(tc.r)
			if got.Mail != tc.want.Mail || got.WebhookURL != tc.want.WebhookURL || len(got.Warnings) != len(tc.warn) {
				t.Fatalf("ApplyNotify = %+v, want %+v with warnings %q", got, tc.want, tc.warn)
			}
			for i, w := range got.Warnings {
				if !strings.Contains(w, tc.warn[i]) {
					t.Errorf("warning %q, want %q", w, tc.warn[i])
				}
			}
		})
	}
}

// TestNotifyFromEnvironment: the prolog reads SPANK_VIGIL_NOTIFY and
// SPANK_VIGIL_WEBHOOK, the watcher VIGIL_NOTIFY and VIGIL_WEBHOOK_URL;
// both keep nothing the policy does not allow, since a job's steps can
// set these variables to anything.
func TestNotifyFromEnvironment(t *testing.T) {
	f := parse(t, hookPolicy)
	ok := "https://hooks.example/services/T1"
	pp := ForProlog(f, env(map[string]string{EnvSpankNotify: "mail,webhook", EnvSpankWebhook: ok}), reg, 60e9)
	if !pp.Notify.Mail || pp.Notify.WebhookURL != ok || len(pp.Warnings) != 0 {
		t.Fatalf("ForProlog notify = %+v, warnings %q", pp.Notify, pp.Warnings)
	}
	pp = ForProlog(f, env(map[string]string{EnvSpankWebhook: "https://evil.example/x"}), reg, 60e9)
	if pp.Notify.Any() || len(pp.Warnings) != 1 || !strings.Contains(pp.Warnings[0], "not one of [policy] webhooks") {
		t.Fatalf("ForProlog with a forged URL: notify %+v, warnings %q", pp.Notify, pp.Warnings)
	}
	pp = ForProlog(f, env(map[string]string{EnvSpankNotify: "sms"}), reg, 60e9)
	if pp.Notify.Any() || len(pp.Warnings) != 1 || !strings.Contains(pp.Warnings[0], "SPANK_VIGIL_NOTIFY") {
		t.Fatalf("ForProlog with a bad channel: notify %+v, warnings %q", pp.Notify, pp.Warnings)
	}

	w, err := ForWatcher(f, env(map[string]string{EnvWebhookURL: ok}))
	if err != nil || w.Notify().WebhookURL != ok || w.Notify().Mail {
		t.Fatalf("ForWatcher = %+v, %v; notify %+v", w, err, w.Notify())
	}
	w, err = ForWatcher(f, env(map[string]string{EnvNotify: "webhook", EnvWebhookURL: "https://evil.example/x"}))
	if err != nil || w.Notify().Any() || len(w.Notify().Warnings) != 1 {
		t.Fatalf("ForWatcher with a forged URL = %v; notify %+v", err, w.Notify())
	}
	if _, err := ForWatcher(f, env(map[string]string{EnvNotify: "pager"})); err == nil || !strings.Contains(err.Error(), "VIGIL_NOTIFY") {
		t.Fatalf("ForWatcher with a bad VIGIL_NOTIFY = %v, want an error naming it", err)
	}
}

func TestCheckCommandNotify(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "vigil.toml")
	if err := os.WriteFile(cfg, []byte(hookPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--notify=mail,webhook"}, ExitAllowed, ""},
		{[]string{"--webhook=https://hooks.example/services/T1"}, ExitAllowed, ""},
		{[]string{"--webhook=https://evil.example/x"}, ExitRefused, "webhook https://evil.example/… is not one this cluster allows"},
		{[]string{"--webhook=mailto:me"}, ExitRefused, "--vigil-webhook=mailto:me: want an http:// or https:// URL"},
		{[]string{"--notify=pager"}, ExitRefused, "--vigil-notify=pager: want a comma-separated list"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"--config", cfg}, tc.args...)
		if code := CheckCommand(args, &out, &errb, reg); code != tc.code || !strings.Contains(out.String(), tc.out) {
			t.Errorf("CheckCommand(%q) = %d, %q %q; want %d and %q", args, code, out.String(), errb.String(), tc.code, tc.out)
		}
	}
}
