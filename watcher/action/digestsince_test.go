package action

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A digest's "hung since" is its Since, the last progress of the first
// host to stall, not the digest's time minus the window (issue 19 item 8):
// in the report, the comment, the webhook and the recovered notice.
func TestDigestHungSinceIsTheLastProgress(t *testing.T) {
	since := t0.Add(-31*time.Minute - 20*time.Second) // 09:58:40, not t0 - window (10:00)
	f := newFixture(t)
	d := networkDigest()
	d.Since = since
	ctx := context.Background()
	if err := f.actor.HandleDigest(ctx, d, true); err != nil {
		t.Fatal(err)
	}
	if want := "my run; vigil: hung since 2026-11-29T09:58:40Z, network: gpu04"; !strings.HasPrefix(f.slurm.comment, want) {
		t.Errorf("comment %q, want it to begin %q", f.slurm.comment, want)
	}
	hooks := f.hook.received()
	if len(hooks) != 1 || !strings.Contains(hooks[0].Text, "since 2026-11-29T09:58:40Z") {
		t.Errorf("webhooks %+v, want one hung since 09:58:40", hooks)
	}
	r := f.onlyReport(t)
	if !r.Since.Equal(since) {
		t.Errorf("report since %v, want %v", r.Since, since)
	}
	if err := f.actor.HandleJobRecovered(ctx, t0.Add(time.Hour), t0, since); err != nil {
		t.Fatal(err)
	}
	if want := "my run; vigil: recovered at 2026-11-29T11:30:00Z (hung since 2026-11-29T09:58:40Z)"; f.slurm.comment != want {
		t.Errorf("comment %q, want %q", f.slurm.comment, want)
	}
}
