package action

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

// silentDigest is the digest of a hang of n1..n4 in which n3's watcher
// fell silent (the cluster's: the node may be gone).
func silentDigest() digest.DigestEvent {
	return digest.DigestEvent{Time: t0, Job: "1234", Event: digest.EventDigest, Cause: digest.CauseRankFailed, Origin: digest.OriginCluster,
		Culprits: []digest.DigestCulprit{{Host: "n3", Reason: digest.CulpritStaleSamples,
			Evidence: map[string]any{"message": "latest sample 9s older than its peers'"}}},
		Hint: "n3's watcher fell silent.", Hosts: []string{"n1", "n2", "n3", "n4"}}
}

// changes are the calls that change the job, in order.
func (f *fakeSlurm) changes() []string {
	var out []string
	for _, c := range f.calls {
		if !strings.HasPrefix(c, "job ") && c != "nodes" && !strings.HasPrefix(c, "comment ") {
			out = append(out, c)
		}
	}
	return out
}

func excludeFixture(t *testing.T) *fixture {
	f := newFixture(t)
	f.actor.Control, f.actor.MaxRequeues = ControlRequeueExclude, 1
	return f
}

// TestRequeueExclude: the coordinator requeues the hung job without the
// digest's culprit, keeping the job's own exclusions: requeuehold, then
// the new ExcNodeList, then release, after the report, the comment, the
// webhook and the mail have said so.
func TestRequeueExclude(t *testing.T) {
	f := excludeFixture(t)
	f.slurm.fields = map[string]string{"NumNodes": "3", "NodeList": "n[1-3]", "ExcNodeList": "n5"}
	if err := f.actor.HandleDigest(context.Background(), silentDigest(), true); err != nil {
		t.Fatal(err)
	}
	want := []string{"requeuehold 1234", "exclude 1234 n3,n5", "release 1234"}
	if got := f.slurm.changes(); !slices.Equal(got, want) {
		t.Errorf("job changes %q, want %q", got, want)
	}
	last := slices.IndexFunc(f.slurm.calls, func(c string) bool { return strings.HasPrefix(c, "comment ") })
	if first := slices.Index(f.slurm.calls, "requeuehold 1234"); last < 0 || last > first {
		t.Errorf("calls %q: the comment is set before the job is requeued", f.slurm.calls)
	}
	if want := "my run; vigil: hung since 2026-11-29T10:00:00Z, rank-failed: n3 (StaleSamples) — requeued without n3"; f.slurm.comment != want {
		t.Errorf("comment %q, want %q", f.slurm.comment, want)
	}
	r := f.onlyReport(t)
	if !slices.Contains(r.Actions, "requeue-exclude: requeued without n3") || !slices.Equal(r.Excluded, []string{"n3"}) {
		t.Errorf("report actions %q, excluded %q", r.Actions, r.Excluded)
	}
	hooks := f.hook.received()
	if len(hooks) != 1 || !strings.HasSuffix(hooks[0].Text, " Requeued without n3.") || !slices.Equal(hooks[0].Excluded, []string{"n3"}) {
		t.Errorf("webhooks %+v, want one saying the job is requeued without n3", hooks)
	}
	if len(f.mailer.stdin) != 1 || !strings.Contains(f.mailer.stdin[0], "Requeued without n3.\n") ||
		!strings.Contains(f.mailer.stdin[0], "Actions:  log, report, comment, webhook, mail, requeue-exclude: requeued without n3\n") {
		t.Errorf("mail %q", f.mailer.stdin)
	}
	if !logged(f, "the hung job is requeued without n3") {
		t.Errorf("no log line says the job is requeued without n3")
	}
}

// TestRequeueExcludeFallsBack: where excluding is not safe or not
// possible, the job is requeued as it is or left alone, and the report
// says which and why.
func TestRequeueExcludeFallsBack(t *testing.T) {
	nodes := func(states ...string) []slurm.Node {
		var out []slurm.Node
		for i, s := range states {
			part := "debug"
			if p, st, ok := strings.Cut(s, ":"); ok {
				part, s = p, st
			}
			out = append(out, fakeNode("n"+string(rune('1'+i)), s, part))
		}
		return out
	}
	unknown := silentDigest()
	unknown.Cause, unknown.Culprits, unknown.Origin = digest.CauseUnknown, nil, digest.OriginUnknown
	own := silentDigest()
	own.Culprits[0].Reason, own.Origin = digest.CulpritProcessesGone, digest.OriginJob
	for _, tc := range []struct {
		name    string
		d       digest.DigestEvent
		setup   func(f *fixture)
		changes []string
		action  string // the report's requeue-exclude entry
		comment string // the end of the comment
	}{
		{"too few nodes left", silentDigest(), func(f *fixture) { f.slurm.nodes = nodes("IDLE", "ALLOCATED", "ALLOCATED", "ALLOCATED", "IDLE+DRAIN") },
			[]string{"requeue 1234"}, "requeue-exclude: requeued as it is (without n3, partition debug has 3 usable nodes for a 4-node job)", "— requeued as it is"},
		{"the job's own exclusions leave too few", silentDigest(), func(f *fixture) { f.slurm.fields = map[string]string{"ExcNodeList": "n5"} },
			[]string{"requeue 1234"}, "requeue-exclude: requeued as it is (without n3, partition debug has 3 usable nodes for a 4-node job)", "— requeued as it is"},
		{"a down node does not count", silentDigest(), func(f *fixture) { f.slurm.nodes = nodes("IDLE", "IDLE", "IDLE", "IDLE", "DOWN") },
			[]string{"requeue 1234"}, "requeue-exclude: requeued as it is (without n3, partition debug has 3 usable nodes for a 4-node job)", "— requeued as it is"},
		{"nodes of other partitions do not count", silentDigest(), func(f *fixture) { f.slurm.nodes = nodes("IDLE", "IDLE", "IDLE", "IDLE", "gpu:IDLE") },
			[]string{"requeue 1234"}, "requeue-exclude: requeued as it is (without n3, partition debug has 3 usable nodes for a 4-node job)", "— requeued as it is"},
		{"a powered-down node counts", silentDigest(), func(f *fixture) { f.slurm.nodes = nodes("IDLE", "IDLE", "IDLE", "IDLE", "IDLE+POWERED_DOWN") },
			[]string{"requeuehold 1234", "exclude 1234 n3", "release 1234"}, "requeue-exclude: requeued without n3", "— requeued without n3"},
		{"the job asks for the culprit", silentDigest(), func(f *fixture) { f.slurm.fields = map[string]string{"ReqNodeList": "n[1-4]"} },
			[]string{"requeue 1234"}, "requeue-exclude: requeued as it is (the job asks for n3 by name)", "— requeued as it is"},
		{"no culprit", unknown, nil,
			[]string{"requeue 1234"}, "requeue-exclude: requeued as it is (no host stands out)", "— requeued as it is"},
		{"the job's own trouble", own, nil,
			[]string{"requeue 1234"}, "requeue-exclude: requeued as it is (the hang looks like the job's own: no host to leave out)", "— requeued as it is"},
		{"the job's own trouble kept running", own, func(f *fixture) { f.actor.KeepOwnFailures = true },
			nil, "requeue-exclude: left running (the hang looks like the job's own ([policy] requeue_own_failures = false): it would fail again on any node)", "— left running"},
		{"limit reached", silentDigest(), func(f *fixture) { f.slurm.restarts = 1 },
			nil, "requeue-exclude: left running (requeue limit reached: 1 restarts, max_requeues 1)", "— left running"},
		{"limit from the environment", silentDigest(), func(f *fixture) { f.actor.RestartCount = 1 },
			nil, "requeue-exclude: left running (requeue limit reached: 1 restarts, max_requeues 1)", "— left running"},
		{"never with max_requeues 0", silentDigest(), func(f *fixture) { f.actor.MaxRequeues = 0 },
			nil, "requeue-exclude: left running (requeue limit reached: 0 restarts, max_requeues 0)", "— left running"},
		{"the job no longer runs", silentDigest(), func(f *fixture) { f.slurm.fields = map[string]string{"JobState": "COMPLETING"} },
			nil, "requeue-exclude: not requeued (the job is COMPLETING, no longer running)", "— not requeued"},
		{"the job cannot be read", silentDigest(), func(f *fixture) { f.slurm.jobErr = errors.New("scontrol: timed out") },
			[]string{"requeue 1234"}, "requeue-exclude: requeued as it is (the job could not be read to exclude n3)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := excludeFixture(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			err := f.actor.HandleDigest(context.Background(), tc.d, true)
			if err != nil && f.slurm.jobErr == nil {
				t.Fatal(err)
			}
			if got := f.slurm.changes(); !slices.Equal(got, tc.changes) {
				t.Errorf("job changes %q, want %q", got, tc.changes)
			}
			r := f.onlyReport(t)
			if !slices.Contains(r.Actions, tc.action) {
				t.Errorf("report actions %q, want %q", r.Actions, tc.action)
			}
			if tc.comment != "" && !strings.HasSuffix(f.slurm.comment, tc.comment) {
				t.Errorf("comment %q, want it to end %q", f.slurm.comment, tc.comment)
			}
			if len(tc.changes) == 1 && len(r.Excluded) != 0 {
				t.Errorf("report excludes %q, but the job is requeued as it is", r.Excluded)
			}
		})
	}
}

// TestRequeueExcludeRefused: when Slurm refuses the new ExcNodeList, the
// held job is released as it is, and the error says so.
func TestRequeueExcludeRefused(t *testing.T) {
	f := excludeFixture(t)
	f.slurm.excErr = slurm.ErrJobNotPending
	err := f.actor.HandleDigest(context.Background(), silentDigest(), true)
	if !errors.Is(err, slurm.ErrJobNotPending) || !strings.Contains(err.Error(), "requeued as it is") {
		t.Errorf("err = %v, want the refusal, saying the job is requeued as it is", err)
	}
	if want := []string{"requeuehold 1234", "exclude 1234 n3", "release 1234"}; !slices.Equal(f.slurm.changes(), want) {
		t.Errorf("job changes %q, want %q: a held job is always released", f.slurm.changes(), want)
	}
}

// TestRequeueExcludeDryRun: a dry run reads the job and the nodes, changes
// nothing, and says what it would run.
func TestRequeueExcludeDryRun(t *testing.T) {
	f := excludeFixture(t)
	f.actor.DryRun = true
	f.slurm.fields = map[string]string{"NumNodes": "3", "ExcNodeList": "n5"}
	if err := f.actor.HandleDigest(context.Background(), silentDigest(), true); err != nil {
		t.Fatal(err)
	}
	if got := f.slurm.changes(); len(got) != 0 || f.slurm.count("comment") != 0 {
		t.Errorf("dry run changed the job: %q", f.slurm.calls)
	}
	if !logged(f, "dry run: would requeue the job without n3: scontrol requeuehold 1234, scontrol update JobId=1234 ExcNodeList=n[3,5], scontrol release 1234") {
		t.Errorf("the dry run did not say what it would run")
	}
	if !logged(f, "dry run: would set the job's comment") {
		t.Errorf("the dry run did not say the comment it would set")
	}
}

// TestRequeueExcludeLoneWatcher: a lone watcher's hung event excludes the
// culprits its evidence names; without any (its own host only, which is
// no evidence), the job is requeued as it is.
func TestRequeueExcludeLoneWatcher(t *testing.T) {
	for _, tc := range []struct {
		name     string
		culprits any
		changes  []string
	}{
		{"named", []digest.Culprit{{Host: "n2", Reason: digest.CulpritProcessesGone}}, []string{"requeuehold 1234", "exclude 1234 n2", "release 1234"}},
		{"none named", nil, []string{"requeue 1234"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := excludeFixture(t)
			ev := hungEvent("n1", t0)
			if tc.culprits != nil {
				ev.Evidence["culprits"] = tc.culprits
			}
			if err := f.actor.Handle(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			if got := f.slurm.changes(); !slices.Equal(got, tc.changes) {
				t.Errorf("job changes %q, want %q", got, tc.changes)
			}
		})
	}
}

// TestRequeueExcludeMemberReport: a node that does not announce the
// digest records what is configured, and changes nothing.
func TestRequeueExcludeMemberReport(t *testing.T) {
	f := excludeFixture(t)
	if err := f.actor.HandleDigest(context.Background(), silentDigest(), false); err != nil {
		t.Fatal(err)
	}
	if len(f.slurm.calls) != 0 {
		t.Errorf("a member called Slurm: %q", f.slurm.calls)
	}
	if r := f.onlyReport(t); !slices.Contains(r.Actions, "requeue-exclude (at most 1 restarts)") || !r.Blames("n3") {
		t.Errorf("member's report %+v", r)
	}
}
