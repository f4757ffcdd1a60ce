package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestE2EGuardOneBigJob: a check that fails on every node of one 5-node
// job (a threshold meant for another SKU) drains nobody: the prologs of
// the job start together, so none sees the others drained, but the
// cross-node phase counts the job's failures before anyone drains. One
// alert goes out and the job runs. A fault on one node of five still
// drains that node.
func TestE2EGuardOneBigJob(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	hooks := &hookSink{}
	srv := httptest.NewServer(hooks)
	defer srv.Close()
	marks := t.TempDir()
	port := slurmtest.FreePort(t, slurmtest.MeetingPorts)
	s := newSetup(t, `checks = ["command", "net-connect"]
budget = "60s"
check_timeout = "20s"`, fmt.Sprintf(`[checks.command]
command = ["sh", "-c", "test ! -e %s/fail-$SLURMD_NODENAME"]
[checks.net-connect]
port = %d
join = "5s"
connect_timeout = "1s"
[notify]
secrets_file = %q
`, marks, port, adminSecrets(t, srv.URL)))
	wrapper := s.wrapper(t, bin, "VIGIL_REPORT_DIR="+s.reports+"/$SLURMD_NODENAME")
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 5, NodeAddrs: true, Prolog: wrapper, PrologFlags: "Alloc"})
	for _, n := range c.Nodes {
		if err := os.WriteFile(filepath.Join(marks, "fail-"+n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	job := c.Sbatch(t, "echo ran\n", "-N", "5")
	c.WaitJob(t, job, 60*time.Second, "COMPLETED")
	for _, n := range c.Nodes {
		if st := nodeState(t, c, n); st.Drained() {
			t.Errorf("%s drained although its whole job failed the same check: %s", n, st.Reason)
		}
	}
	guarded := 0
	for _, r := range nodeReports(t, s) {
		if r.Job != job {
			continue
		}
		for _, g := range r.Guarded {
			if g.Check == "command" && g.Drained == 5 {
				guarded++
			}
		}
	}
	if guarded != 5 {
		t.Errorf("%d of 5 reports say command was guarded with 5 failing nodes", guarded)
	}
	var alerts []string
	for _, b := range hooks.take() {
		if event(b) == "guard" {
			text, _ := b["text"].(string)
			alerts = append(alerts, text)
		}
	}
	if len(alerts) != 1 || !strings.Contains(alerts[0], "failing it in this job now") {
		t.Errorf("guard alerts %q, want exactly one that names the job's count", alerts)
	} else {
		t.Logf("alert: %s", alerts[0])
	}

	// A real fault on one node of five.
	for _, n := range c.Nodes[1:] {
		os.Remove(filepath.Join(marks, "fail-"+n))
	}
	faultRun(t, c, s, 5-1, c.Nodes[0], "vigil: command CommandFailed")
}
