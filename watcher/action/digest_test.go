package action

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/watcher/hang"
)

func networkDigest() hang.DigestEvent {
	return hang.DigestEvent{Time: t0, Job: "1234", Event: hang.EventDigest, Cause: hang.CauseNetwork,
		Culprits: []hang.DigestCulprit{{Host: "gpu04", Reason: hang.DigestTransportErrors,
			Evidence: map[string]any{"lines": []string{"NCCL WARN NET/IB : Got completion from peer 10.0.0.3<45123> with status=12"}}}},
		Hint:  "NCCL reported transport errors on the links of gpu04: ask the admins to check that host's port and cable; raise NCCL_IB_TIMEOUT (e.g. 22).",
		Hosts: []string{"gpu01", "gpu02", "gpu03", "gpu04"}}
}

func TestDigestNotifiesOnceFromTheCoordinator(t *testing.T) {
	f := newFixture(t)
	if err := f.actor.HandleDigest(context.Background(), networkDigest(), true); err != nil {
		t.Fatal(err)
	}
	want := "my run; vigil: hung since 2026-11-29T10:00:00Z, network: gpu04 (TransportErrors) — check its port and cable; NCCL_IB_TIMEOUT=22"
	if f.slurm.comment != want {
		t.Errorf("comment =\n%q\nwant\n%q", f.slurm.comment, want)
	}
	hooks := f.hook.received()
	if len(hooks) != 1 || hooks[0].Digest == nil || hooks[0].Digest.Cause != "network" || hooks[0].Digest.Culprits[0].Host != "gpu04" ||
		!strings.Contains(hooks[0].Text, "is hung (4 hosts) since 2026-11-29T10:00:00Z: network: gpu04 (TransportErrors). NCCL reported") {
		t.Fatalf("webhooks = %+v", hooks)
	}
	if len(f.mailer.argv) != 1 || f.mailer.argv[0][2] != "vigil: job 1234 hung: network on gpu04" ||
		!strings.Contains(f.mailer.stdin[0], "Cause:    network\nCulprits: gpu04 (TransportErrors)") {
		t.Errorf("mail %q %q", f.mailer.argv, f.mailer.stdin)
	}
	reps := f.reports(t)
	if len(reps) != 1 {
		t.Fatalf("reports %v", reps)
	}
	r, err := hangreport.ReadReport(reps[0])
	if err != nil {
		t.Fatal(err)
	}
	if r.Event != EventHung || r.Host != "n1" || r.Digest == nil || !r.Blames("gpu04") || r.Blames("n1") || r.Blames("gpu01") {
		t.Errorf("report %+v: want hung, about n1, blaming gpu04 only", r)
	}
}

func TestDigestRecordedOnlyElsewhere(t *testing.T) {
	f := newFixture(t)
	if err := f.actor.HandleDigest(context.Background(), networkDigest(), false); err != nil {
		t.Fatal(err)
	}
	if len(f.hook.received()) != 0 || len(f.mailer.argv) != 0 || f.slurm.count("comment") != 0 {
		t.Errorf("a node that does not announce: hooks %v, mail %v, calls %v", f.hook.received(), f.mailer.argv, f.slurm.calls)
	}
	if reps := f.reports(t); len(reps) != 1 {
		t.Errorf("reports %v, want the digest's (for the epilog of this node)", reps)
	}
	f = newFixture(t)
	d := networkDigest()
	d.Cause, d.Culprits = hang.CauseUnknown, nil
	if err := f.actor.HandleDigest(context.Background(), d, false); err != nil {
		t.Fatal(err)
	}
	if reps := f.reports(t); len(reps) != 0 {
		t.Errorf("reports %v, want none: a digest that blames nobody is only logged where it is not announced", reps)
	}
}

func TestQuietNodeLeavesTheHangToTheCoordinator(t *testing.T) {
	f := newFixture(t)
	f.actor.Quiet = func() bool { return true }
	ctx := context.Background()
	if err := f.actor.Handle(ctx, hungEvent("n1", t0)); err != nil {
		t.Fatal(err)
	}
	rec := hang.Event{Time: t0.Add(time.Hour), Host: "n1", Job: "1234", Event: EventRecovered, Reason: "IOProgress"}
	if err := f.actor.Handle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if len(f.hook.received()) != 0 || len(f.mailer.argv) != 0 || len(f.slurm.calls) != 0 || len(f.reports(t)) != 0 {
		t.Errorf("quiet node acted: hooks %v, mail %v, calls %v, reports %v", f.hook.received(), f.mailer.argv, f.slurm.calls, f.reports(t))
	}
}

func TestDigestCommentFitsAndKeepsTheUsersPart(t *testing.T) {
	d := &hangreport.Digest{Cause: hang.CauseRankFailed}
	for i := range 40 {
		d.Culprits = append(d.Culprits, hangreport.DigestCulprit{Host: "gpu" + strings.Repeat("0", 3) + string(rune('a'+i%26)), Reason: "ProcessesGone"})
	}
	got := DigestComment("run 7; vigil: hung since 2026-11-29T09:00:00Z on n1", d, t0, "")
	user, note := SplitComment(got)
	if user != "run 7" || len(note) > MaxCommentNote || !strings.HasSuffix(note, "...") || !strings.HasPrefix(note, "vigil: hung since 2026-11-29T10:30:00Z, rank-failed: gpu000a (ProcessesGone)") {
		t.Errorf("comment %q: user %q, note of %d bytes", got, user, len(note))
	}
	if got := DigestComment("", &hangreport.Digest{Cause: hang.CauseUnknown}, t0, ""); got != "vigil: hung since 2026-11-29T10:30:00Z, unknown: no host stands out — see the job's output; py-spy dump a rank" {
		t.Errorf("unknown: %q", got)
	}
	if got := truncate("ab—cd", 6); got != "ab..." {
		t.Errorf("truncate on a rune boundary: %q", got)
	}
}

func TestJobRecoveredFromTheCoordinator(t *testing.T) {
	f := newFixture(t)
	f.slurm.comment = "my run; vigil: hung since 2026-11-29T10:00:00Z, network: gpu04 (TransportErrors)"
	if err := f.actor.HandleJobRecovered(context.Background(), t0.Add(time.Hour), t0, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if want := "my run; vigil: recovered at 2026-11-29T11:30:00Z (hung since 2026-11-29T10:00:00Z)"; f.slurm.comment != want {
		t.Errorf("comment %q, want %q", f.slurm.comment, want)
	}
	if h := f.hook.received(); len(h) != 1 || h[0].Event != EventRecovered || h[0].Reason != "JobRecovered" {
		t.Errorf("webhooks %+v, want one recovered", h)
	}
}
