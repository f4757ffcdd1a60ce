package loop

import (
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/config"
)

// TestResolveJobNotify: the job's VIGIL_NOTIFY and VIGIL_WEBHOOK_URL
// turn on mail and the job's webhook within [policy]; a URL or channel
// outside it is dropped with a warning, and replay reads neither. The
// only other webhook is the job's user's --webhook-url flag: the file
// names none.
func TestResolveJobNotify(t *testing.T) {
	const doc = "[policy]\nnotify = [\"mail\", \"webhook\"]\nwebhooks = [\"https://hooks.example/\"]\n"
	const mailOnly = "[policy]\nnotify = [\"mail\"]\n"
	for _, tc := range []struct {
		name  string
		doc   string
		env   map[string]string
		mail  bool
		hook  string
		warns []string
	}{
		{name: "nothing chosen", doc: doc, env: map[string]string{}},
		{name: "webhook implied by the URL", doc: doc, env: map[string]string{"VIGIL_WEBHOOK_URL": "https://hooks.example/a"}, hook: "https://hooks.example/a"},
		{name: "mail and webhook", doc: doc, env: map[string]string{"VIGIL_NOTIFY": "mail,webhook", "VIGIL_WEBHOOK_URL": "https://hooks.example/a"}, mail: true, hook: "https://hooks.example/a"},
		{name: "forged URL dropped", doc: doc, env: map[string]string{"VIGIL_WEBHOOK_URL": "https://evil.example/a"},
			warns: []string{"ignoring --vigil-webhook=https://evil.example/…: not one of [policy] webhooks"}},
		{name: "channel not allowed", doc: mailOnly, env: map[string]string{"VIGIL_NOTIFY": "mail,webhook", "VIGIL_WEBHOOK_URL": "https://hooks.example/a"}, mail: true,
			warns: []string{"ignoring --vigil-notify=webhook: not allowed"}},
		{name: "replay reads no env", doc: doc, env: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := config.Parse(strings.NewReader(tc.doc), "vigil.toml")
			if err != nil {
				t.Fatal(err)
			}
			src := Sources{File: f, Flags: config.Values{"webhook_url": "https://mine.example/hook"}}
			if tc.env != nil {
				src.Lookup = envOf(tc.env)
			}
			res, err := Resolve(src)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Settings
			if s.Mail != tc.mail || s.JobWebhookURL != tc.hook || s.WebhookURL != "https://mine.example/hook" || len(res.Warnings) != len(tc.warns) {
				t.Fatalf("mail %v, job webhook %q, flag's webhook %q, warnings %q; want %v, %q, the flag's, %q",
					s.Mail, s.JobWebhookURL, s.WebhookURL, res.Warnings, tc.mail, tc.hook, tc.warns)
			}
			for i, w := range res.Warnings {
				if !strings.Contains(w, tc.warns[i]) {
					t.Errorf("warning %q, want %q", w, tc.warns[i])
				}
			}
		})
	}
}

// TestResolveRefusesSiteWebhook: a [watch] webhook_url in the file stops
// vigil-watch with an error naming the file, line and key; the watcher
// never posts to it.
func TestResolveRefusesSiteWebhook(t *testing.T) {
	f, err := config.Parse(strings.NewReader("[watch]\nwebhook_url = \"https://site.example/services/s3cr3t\"\n"), "/etc/vigil/vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Resolve(Sources{File: f, Lookup: envOf(map[string]string{})})
	if err == nil || !strings.Contains(err.Error(), "/etc/vigil/vigil.toml:2: watch.webhook_url:") ||
		!strings.Contains(err.Error(), "[notify] webhook_url in the root-only secrets file") || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("got %v: want the refusal at /etc/vigil/vigil.toml:2, without the URL", err)
	}
	if res.Settings.WebhookURL != "" {
		t.Errorf("settings hold %q", res.Settings.WebhookURL)
	}
}
