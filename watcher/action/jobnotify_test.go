package action

import (
	"context"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/watcher/hang"
)

// TestJobWebhook: the job's own webhook (--vigil-webhook) gets the hang
// and the recovery as well as the --webhook-url one, and only once when
// both name the same URL; its path stays out of the log. With only the
// job's webhook, it alone is posted to and the report says "webhook".
func TestJobWebhook(t *testing.T) {
	f := newFixture(t)
	job := newHook(t)
	f.actor.JobWebhookURL = job.URL + "/services/T1/secret"
	ctx := context.Background()
	if err := f.actor.Handle(ctx, hungEvent("n1", t0)); err != nil {
		t.Fatal(err)
	}
	if site, mine := f.hook.received(), job.received(); len(site) != 1 || len(mine) != 1 || mine[0].Text != site[0].Text || mine[0].Event != hang.EventHung {
		t.Fatalf("site webhook got %d, job webhook %d (%+v); want the same hang once each", len(site), len(mine), mine)
	}
	for _, e := range f.logs.AllEntries() {
		if s, _ := e.Data["webhook"].(string); strings.Contains(s, "secret") {
			t.Errorf("log line %q shows the job's webhook path: %q", e.Message, s)
		}
	}

	same := newFixture(t)
	same.actor.JobWebhookURL = same.actor.WebhookURL
	if err := same.actor.Handle(ctx, hungEvent("n1", t0)); err != nil {
		t.Fatal(err)
	}
	if got := len(same.hook.received()); got != 1 {
		t.Fatalf("site and job naming the same URL: %d POSTs, want 1", got)
	}

	// Only the job's --vigil-webhook: no --webhook-url.
	only := newFixture(t)
	only.actor.WebhookURL = ""
	only.actor.JobWebhookURL = job.URL + "/x"
	if err := only.actor.Handle(ctx, hungEvent("n1", t0)); err != nil {
		t.Fatal(err)
	}
	got := job.received()
	if len(got) != 2 || len(only.hook.received()) != 0 {
		t.Fatalf("job webhook alone: %d POSTs in all (other receiver %d), want 2 (0)", len(got), len(only.hook.received()))
	}
	if acts := strings.Join(got[0].Actions, ","); !strings.Contains(acts, "webhook") {
		t.Errorf("the report's actions %q lack the job's webhook", acts)
	}
}

func TestWebhookURLs(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"", ""}, ""},
		{[]string{"a", ""}, "a"},
		{[]string{"", "b"}, "b"},
		{[]string{"a", "a"}, "a"},
		{[]string{"a", "b"}, "a b"},
	} {
		if got := strings.Join(webhookURLs(tc.in...), " "); got != tc.want {
			t.Errorf("webhookURLs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFailedWebhookLogsNoURL: a webhook (the site's or the job's) that
// fails leaves neither its path nor its query in the log or the error.
func TestFailedWebhookLogsNoURL(t *testing.T) {
	f := newFixture(t)
	f.actor.WebhookURL = "http://127.0.0.1:1/services/T0/s3cr3t?token=k3y"
	f.actor.JobWebhookURL = "http://127.0.0.1:1/hooks/mys3cr3t"
	f.actor.WebhookAttempts = 1
	err := f.actor.Handle(context.Background(), hungEvent("n1", t0))
	var texts []string
	if err != nil {
		texts = append(texts, err.Error())
	}
	for _, e := range f.logs.AllEntries() {
		texts = append(texts, e.Message)
		for _, v := range e.Data {
			if ev, ok := v.(error); ok {
				texts = append(texts, ev.Error())
			} else if s, ok := v.(string); ok {
				texts = append(texts, s)
			}
		}
	}
	if len(texts) == 0 {
		t.Fatal("nothing logged")
	}
	for _, s := range texts {
		if strings.Contains(s, "s3cr3t") || strings.Contains(s, "k3y") {
			t.Errorf("the log or error shows a webhook's secret: %q", s)
		}
	}
}
