package action

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

// TestRevisedDigestIsMarkedAndActsOnce: the episode's update (later
// evidence changed the cause or the culprits) says it is one in the
// comment, the webhook, the mail and the report, and does not take the
// hang action again: the first digest took it.
func TestRevisedDigestIsMarkedAndActsOnce(t *testing.T) {
	f := newFixture(t)
	f.actor.Control, f.actor.MaxRequeues = ControlRequeue, 5
	first := networkDigest()
	first.Cause, first.Culprits, first.Origin = digest.CauseUnknown, []digest.DigestCulprit{}, digest.OriginUnknown
	if err := f.actor.HandleDigest(context.Background(), first, true); err != nil {
		t.Fatal(err)
	}
	calls := len(f.slurm.calls)
	rev := networkDigest()
	rev.Origin, rev.Time, rev.Since, rev.Revises = digest.OriginCluster, t0.Add(3*time.Minute), t0.Add(-30*time.Minute), t0
	if err := f.actor.HandleDigest(context.Background(), rev, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.slurm.comment, "(revised), network: gpu04 (TransportErrors)") {
		t.Errorf("comment %q: want the revision marked", f.slurm.comment)
	}
	for _, c := range f.slurm.calls[calls:] {
		if strings.HasPrefix(c, "requeue") || strings.HasPrefix(c, "cancel") {
			t.Errorf("Slurm call %q after the revision: the hang action is taken once", c)
		}
	}
	hooks := f.hook.received()
	if len(hooks) != 2 || !strings.Contains(hooks[1].Text, "revised digest (replaces the one of 2026-11-29T10:30:00Z): network: gpu04") ||
		hooks[1].Report.Digest == nil || !hooks[1].Report.Digest.Revises.Equal(t0) {
		t.Fatalf("webhooks = %+v", hooks)
	}
	if len(f.mailer.argv) != 2 || f.mailer.argv[1][2] != "vigil: job 1234 hung (revised): network on gpu04" {
		t.Errorf("mail %q", f.mailer.argv)
	}
}
