package lifecycle

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// fleetFake is fakeSlurm with the fleet-wide calls: the other nodes are
// given, this node is the fakeSlurm's own.
type fleetFake struct {
	fakeSlurm
	others []slurm.Node
}

func (f *fleetFake) Nodes(ctx context.Context) ([]slurm.Node, error) {
	f.calls = append(f.calls, "nodes")
	return append([]slurm.Node{f.node}, f.others...), nil
}

func (f *fleetFake) SetNodeComment(ctx context.Context, node, comment string) error {
	f.calls = append(f.calls, "comment "+node+" "+comment)
	return nil
}

func (f *fleetFake) Config(ctx context.Context) (map[string]string, error) {
	return map[string]string{"MailProg": "/bin/false"}, nil
}

// drainedOthers are n nodes drained by vigil for check a minute ago.
func drainedOthers(n int, check string) []slurm.Node {
	var out []slurm.Node
	for i := range n {
		out = append(out, slurm.Node{Name: fmt.Sprintf("x%d", i), State: "IDLE", Flags: []string{"DRAIN"},
			Reason: "vigil: " + check + " Broken", ReasonTime: time.Now().Add(-time.Minute)})
	}
	return out
}

func idleOthers(n int) []slurm.Node {
	var out []slurm.Node
	for i := range n {
		out = append(out, slurm.Node{Name: fmt.Sprintf("y%d", i), State: "IDLE"})
	}
	return out
}

// runFleet runs the checks against a fleetFake with [notify] and [guard].
func runFleet(t *testing.T, f *fleetFake, checks, sections string, dry bool) Outcome {
	t.Helper()
	_, conf := setup(t, "checks = ["+checks+"]\n"+sections)
	o := Options{Program: "vigil-test", Mode: decide.ModeProlog, ConfigPath: conf, ConfigExplicit: true, Node: "n1",
		Lookup: env{}.lookup, Slurm: f, Log: quietLog(), Root: t.TempDir(), DryRun: dry}
	return Run(context.Background(), o)
}

// TestNotifyFailureChangesNothing: a webhook that answers 500 and a mail
// program that fails leave the drain and the exit code as they are, and the
// report records both failures.
func TestNotifyFailureChangesNothing(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv.Close()
	f := &fleetFake{fakeSlurm: fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, others: idleOthers(20)}
	out := runFleet(t, f, `"t-fail"`, fmt.Sprintf("[notify]\nsecrets_file = %q\nwebhook_attempts = 1\nmail = [\"ops\"]\n", secretsFile(t, srv.URL)), false)
	r := out.Report
	if out.ExitCode != decide.ExitFail || r.Action.Kind != report.ActionDrain || !r.Action.Done {
		t.Fatalf("exit %d, action %+v: want a done drain, exit 1", out.ExitCode, r.Action)
	}
	if posts.Load() != 1 || len(r.Notices) != 2 || r.Notices[0].Sent || r.Notices[1].Sent ||
		!strings.Contains(r.Notices[0].Error, "500") || r.Notices[1].To != "mail:ops" {
		t.Errorf("posts %d, notices %+v: want two failed notices (webhook 500, mail:ops)", posts.Load(), r.Notices)
	}
}

// TestNotifyDryRun: a dry run sends nothing and says it would notify.
func TestNotifyDryRun(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1) }))
	defer srv.Close()
	f := &fleetFake{fakeSlurm: fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}}
	out := runFleet(t, f, `"t-fail"`, fmt.Sprintf("[notify]\nsecrets_file = %q\n", secretsFile(t, srv.URL)), true)
	if posts.Load() != 0 || len(out.Report.Notices) != 0 || len(f.calls) != 0 {
		t.Errorf("dry run: %d posts, notices %+v, calls %v", posts.Load(), out.Report.Notices, f.calls)
	}
	if !strings.Contains(strings.Join(out.Report.Notes, "\n"), "would notify") {
		t.Errorf("notes %q lack \"would notify\"", out.Report.Notes)
	}
}

// TestGuardRun: with 3 of 10 nodes drained for t-fail (this one counted),
// above max_share 0.2 and min_nodes 1, t-fail does not drain; a second
// failed check still does; a guarded check never lifts an earlier drain.
func TestGuardRun(t *testing.T) {
	guard := "[guard]\nmax_share = 0.2\nmin_nodes = 1\n"
	others := append(drainedOthers(2, "t-fail"), idleOthers(7)...)

	f := &fleetFake{fakeSlurm: fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, others: others}
	out := runFleet(t, f, `"t-fail"`, guard, false)
	r := out.Report
	if out.ExitCode != decide.ExitOK || f.node.Drained() || len(r.Guarded) != 1 || r.Guarded[0].Drained != 3 || r.Guarded[0].Nodes != 10 {
		t.Errorf("guarded only: exit %d, node %+v, guarded %+v: want exit 0, not drained, 3 of 10", out.ExitCode, f.node, r.Guarded)
	}

	f = &fleetFake{fakeSlurm: fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, others: others}
	out = runFleet(t, f, `"t-fail", "t-perf-fail"`, guard, false)
	if out.ExitCode != decide.ExitFail || !strings.HasPrefix(f.node.Reason, "vigil: t-perf-fail ") || strings.Contains(f.node.Reason, "t-fail ") {
		t.Errorf("guarded and another failure: exit %d, reason %q: want drained for t-perf-fail alone", out.ExitCode, f.node.Reason)
	}

	earlier := slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "vigil: t-fail Broken gpu0"}
	f = &fleetFake{fakeSlurm: fakeSlurm{node: earlier}, others: others}
	out = runFleet(t, f, `"t-fail"`, guard, false)
	if out.ExitCode != decide.ExitFail || !f.node.Drained() || out.Report.Action.Kind != report.ActionStay {
		t.Errorf("guarded on a drained node: exit %d, action %+v, node %+v: want stay, exit 1", out.ExitCode, out.Report.Action, f.node)
	}
}
