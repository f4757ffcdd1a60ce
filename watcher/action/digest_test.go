package action

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

func networkDigest() digest.DigestEvent {
	return digest.DigestEvent{Time: t0, Job: "1234", Event: digest.EventDigest, Cause: digest.CauseNetwork,
		Culprits: []digest.DigestCulprit{{Host: "gpu04", Reason: digest.DigestTransportErrors,
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
	r := f.onlyReport(t)
	if r.Event != hang.EventHung || r.Host != "n1" || r.Digest == nil || !r.Blames("gpu04") || r.Blames("n1") || r.Blames("gpu01") {
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
	d.Cause, d.Culprits = digest.CauseUnknown, nil
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
	rec := hang.Event{Time: t0.Add(time.Hour), Host: "n1", Job: "1234", Event: hang.EventRecovered, Reason: "IOProgress"}
	if err := f.actor.Handle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if len(f.hook.received()) != 0 || len(f.mailer.argv) != 0 || len(f.slurm.calls) != 0 || len(f.reports(t)) != 0 {
		t.Errorf("quiet node acted: hooks %v, mail %v, calls %v, reports %v", f.hook.received(), f.mailer.argv, f.slurm.calls, f.reports(t))
	}
}

func TestDigestCommentFitsAndKeepsTheUsersPart(t *testing.T) {
	d := &hangreport.Digest{Cause: digest.CauseRankFailed}
	for i := range 40 {
		d.Culprits = append(d.Culprits, hangreport.DigestCulprit{Host: "gpu" + strings.Repeat("0", 3) + string(rune('a'+i%26)), Reason: "ProcessesGone"})
	}
	got := DigestComment("run 7; vigil: hung since 2026-11-29T09:00:00Z on n1", d, t0, "", "")
	user, note := SplitComment(got)
	if user != "run 7" || len(note) > MaxCommentNote || !strings.HasSuffix(note, "...") || !strings.HasPrefix(note, "vigil: hung since 2026-11-29T10:30:00Z, rank-failed: gpu000a (ProcessesGone)") {
		t.Errorf("comment %q: user %q, note of %d bytes", got, user, len(note))
	}
	if got := DigestComment("", &hangreport.Digest{Cause: digest.CauseUnknown}, t0, "", ""); got != "vigil: hung since 2026-11-29T10:30:00Z, unknown: no host stands out — see the job's output; py-spy dump a rank" {
		t.Errorf("unknown: %q", got)
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
	if h := f.hook.received(); len(h) != 1 || h[0].Event != hang.EventRecovered || h[0].Reason != "JobRecovered" {
		t.Errorf("webhooks %+v, want one recovered", h)
	}
}

func killedDigest(event string) digest.DigestEvent {
	return digest.DigestEvent{Time: t0, Since: t0.Add(-2 * time.Second), Job: "1234", Event: event, Cause: digest.CauseRankFailed,
		Origin:   digest.OriginJob,
		Culprits: []digest.DigestCulprit{{Host: "gpu02", Reason: digest.DigestRankKilled, Evidence: map[string]any{"lines": []string{"srun: error: gpu02: task 1: Killed"}}}},
		Hint:     "A rank on gpu02 was the first to fail.", Hosts: []string{"gpu01", "gpu02", "gpu03"}}
}

// TestFailedJobDigest: the digest of a failed job goes to a report of
// event failed, one webhook and one mail that say the job failed and
// whose the trouble looks like; the job's comment is left alone (Slurm
// refuses comments on a finished job) and no hang action is taken.
func TestFailedJobDigest(t *testing.T) {
	f := newFixture(t)
	f.actor.Control = ControlRequeue
	f.actor.MaxRequeues = 5
	if err := f.actor.HandleDigest(context.Background(), killedDigest(digest.EventFailed), true); err != nil {
		t.Fatal(err)
	}
	if f.slurm.comment != "my run" {
		t.Errorf("comment %q: a finished job's comment is left alone", f.slurm.comment)
	}
	for _, c := range f.slurm.calls {
		if strings.HasPrefix(c, "requeue") || strings.HasPrefix(c, "cancel") {
			t.Errorf("Slurm calls %v: no hang action on a failed job", f.slurm.calls)
		}
	}
	hooks := f.hook.received()
	want := "vigil: job 1234 (alice) failed (3 hosts) at 2026-11-29T10:29:58Z: rank-failed: gpu02 (RankKilled). A rank on gpu02 was the first to fail. It looks like the job's own."
	if len(hooks) != 1 || hooks[0].Text != want || hooks[0].Event != digest.EventFailed || hooks[0].Digest.Origin != digest.OriginJob {
		t.Fatalf("webhooks %+v, want one: %q", hooks, want)
	}
	r := f.onlyReport(t)
	if acts := strings.Join(r.Actions, ","); r.Event != hangreport.EventFailed || !r.Blames("gpu02") || acts != "log,report,webhook,mail" {
		t.Errorf("report %+v: want event failed, blaming gpu02, actions log, report, webhook and mail", r)
	}
}

// TestOwnFailureNotRequeued: with [policy] requeue_own_failures = false, a
// hang whose digest says it is the job's own is announced and not
// requeued; one that looks like the cluster's is requeued.
func TestOwnFailureNotRequeued(t *testing.T) {
	for _, tt := range []struct {
		name     string
		d        digest.DigestEvent
		requeued bool
	}{
		{"the job's own", killedDigest(digest.EventDigest), false},
		{"the cluster's", func() digest.DigestEvent { d := networkDigest(); d.Origin = digest.OriginCluster; return d }(), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.actor.Control, f.actor.MaxRequeues, f.actor.KeepOwnFailures = ControlRequeue, 5, true
			if err := f.actor.HandleDigest(context.Background(), tt.d, true); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(strings.Join(f.slurm.calls, ","), "requeue 1234"); got != tt.requeued {
				t.Errorf("Slurm calls %v: requeued %v, want %v", f.slurm.calls, got, tt.requeued)
			}
			if len(f.hook.received()) != 1 {
				t.Errorf("webhooks %v, want one", f.hook.received())
			}
		})
	}
}

// TestPulseDigestSaysHowAndSilencesTheWindowVerdict: a digest the job's
// pulse gave says so in the comment, the webhook, the mail and the
// report; the node's own window verdict that follows is only logged, and
// the job's recovery ends that.
func TestPulseDigestSaysHowAndSilencesTheWindowVerdict(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := networkDigest()
	d.Since = t0.Add(-4 * time.Minute)
	d.Detection = &digest.Detection{By: digest.DetectedPulse, LastProgress: d.Since, AfterProgressS: 240, CadenceS: 60, Beats: 30}
	if err := f.actor.HandleDigest(ctx, d, true); err != nil {
		t.Fatal(err)
	}
	if want := "vigil: hung since 2026-11-29T10:26:00Z (pulse), network: gpu04"; !strings.Contains(f.slurm.comment, want) {
		t.Errorf("comment %q lacks %q", f.slurm.comment, want)
	}
	hooks := f.hook.received()
	if len(hooks) != 1 || !strings.Contains(hooks[0].Text, "Detected by pulse: 4m after the last progress (cadence 1m).") {
		t.Fatalf("webhooks = %+v", hooks)
	}
	if len(f.mailer.stdin) != 1 || !strings.Contains(f.mailer.stdin[0], "How:      pulse: 4m after the last progress") {
		t.Errorf("mail %q", f.mailer.stdin)
	}
	if r := f.onlyReport(t); r.Digest.DetectedBy != "pulse" || !r.Digest.LastProgress.Equal(d.Since) {
		t.Errorf("report digest %+v", r.Digest)
	}
	if err := f.actor.Handle(ctx, hungEvent("n1", t0.Add(30*time.Minute))); err != nil {
		t.Fatal(err)
	}
	if n := len(f.hook.received()); n != 1 {
		t.Errorf("%d webhooks after the window verdict, want still 1", n)
	}
	if err := f.actor.HandleJobRecovered(ctx, t0.Add(40*time.Minute), d.Time, d.Since); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.slurm.comment, "recovered at") || f.actor.jobHang {
		t.Errorf("after recovery: comment %q, jobHang %v", f.slurm.comment, f.actor.jobHang)
	}
}
