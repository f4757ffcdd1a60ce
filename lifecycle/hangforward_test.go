package lifecycle

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/notify/notifytest"
	"github.com/vigil-hpc/vigil/slurm"
)

// writeDigestReport writes a digest report of job 1234 as the job's
// watcher on host writes it (coordinator: it announced the digest).
func writeDigestReport(t *testing.T, dir, host string, at time.Time, coordinator bool, hint string) string {
	t.Helper()
	r := hangreport.Report{V: hangreport.ReportVersion, Event: hangreport.EventHung, Job: "1234", User: "alice", Host: host,
		Time: at, Since: at.Add(-10 * time.Minute), Window: "10m0s", Reason: "network", Flat: []string{}, Culprits: []string{"n2"},
		Actions: []string{"log", "report"}, Coordinator: coordinator,
		Digest: &hangreport.Digest{Cause: "network", Origin: hangreport.OriginCluster, Hint: hint,
			Culprits: []hangreport.DigestCulprit{{Host: "n2", Reason: "TransportErrors"}}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, hangreport.Name("1234", host, at))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEpilogForwardsCoordinatorDigest: the epilog on the node whose
// watcher announced the job's digest posts it once to the admins'
// [notify] webhook (from the secrets file), marked as the job's watcher's
// report, the newest of several; the epilog of another node, whose reports
// are members' or name another host, posts nothing. No report or note
// holds the webhook's secret path, and a user's long hint is cut.
func TestEpilogForwardsCoordinatorDigest(t *testing.T) {
	url, hooks := notifytest.Recorder(t)
	secret := url + "/services/T0/s3cr3t"
	t0 := time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		node string
		want int
	}{
		{"the coordinator's node", "n1", 1},
		{"a member's node", "n2", 0},
		{"a node without reports", "n3", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hangs := t.TempDir()
			writeDigestReport(t, hangs, "n1", t0, true, "old")
			newest := writeDigestReport(t, hangs, "n1", t0.Add(time.Hour), true, strings.Repeat("h", 5000))
			writeDigestReport(t, hangs, "n2", t0.Add(time.Hour), false, "member")
			_, conf := setup(t, fmt.Sprintf("checks = [\"t-pass\"]\nretries = 0\n[watch]\nreport_dir = %q\n[notify]\nsecrets_file = %q\n",
				hangs, secretsFile(t, secret)))
			before := len(hooks("1234"))
			fs := &fakeSlurm{node: slurm.Node{Name: tc.node, State: "IDLE"}}
			out := runWith(t, conf, decide.ModeEpilog, fs, env{"SLURM_JOB_ID": "1234"}, func(o *Options) { o.Node = tc.node })
			got := hooks("1234")[before:]
			if len(got) != tc.want {
				t.Fatalf("%d webhooks, want %d: %+v", len(got), tc.want, got)
			}
			disk, err := os.ReadFile(out.ReportPath)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(disk), "s3cr3t") || strings.Contains(strings.Join(out.Report.Notes, "\n"), "s3cr3t") {
				t.Errorf("the report holds the webhook's secret path:\n%s", disk)
			}
			if tc.want == 0 {
				if len(out.Report.Notices) != 0 {
					t.Errorf("notices %+v, want none", out.Report.Notices)
				}
				return
			}
			b := got[0].Body
			text, _ := b["text"].(string)
			if b["from"] != "job-watcher" || b["node"] != "n1" || !strings.Contains(text, "reported by the job's watcher") ||
				!strings.Contains(text, newest) || !strings.Contains(text, "n2 (TransportErrors)") ||
				!strings.Contains(text, "1 earlier digest report(s)") || len(text) > 1500 {
				t.Errorf("body %v: want the newest digest from the job's watcher, cut", b)
			}
			if n := out.Report.Notices; len(n) != 1 || n[0].Kind != "hang-digest" || !n[0].Sent || n[0].To != "webhook" {
				t.Errorf("notices %+v: want one sent hang-digest notice", n)
			}
		})
	}
}
