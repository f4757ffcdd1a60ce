package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// TestE2EForgedHangReport: vigil-epilog as Slurm's Epilog on a two-node
// job of an unprivileged user (uid 65534) who writes, as that user, a
// vigil-watch hang report naming the second node into the job's working
// directory (vigil-watch runs as the job's user: its reports are the
// user's files). The epilog of the second node notes the report and runs
// nothing more than the health facts: the performance probe (the disk
// check, pointed at a missing directory, which would fail) does not run
// and neither node is drained.
func TestE2EForgedHangReport(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, testE2EForgedHangReport)
}

func testE2EForgedHangReport(t *testing.T, f slurmtest.Flavour) {
	scontrol, err := exec.LookPath("scontrol")
	if err != nil {
		for _, d := range []string{"/usr/bin", "/usr/local/bin"} {
			if _, serr := os.Stat(filepath.Join(d, "scontrol")); serr == nil {
				scontrol = filepath.Join(d, "scontrol")
			}
		}
	}
	if scontrol == "" {
		t.Fatal("scontrol not found: install the Debian package slurm-client")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/epilog")
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	reports := filepath.Join(dir, "reports")
	conf := filepath.Join(dir, "vigil.toml")
	body := fmt.Sprintf(`[prolog]
checks = ["fault-inject", "disk"]
retries = 0
budget = "30s"
report_dir = %q
run_dir = %q
slurm_bin_dir = %q
[checks.fault-inject]
mode = "pass"
[checks.disk]
path = %q
`, reports, filepath.Join(dir, "run"), filepath.Dir(scontrol), filepath.Join(dir, "no-such-scratch"))
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "vigil-epilog.sh")
	if err := os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nexport VIGIL_STATE_DIR=%s\nexec %s --config %s \"$@\"\n", filepath.Join(dir, "state"), bin, conf)), 0o755); err != nil {
		t.Fatal(err)
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, Epilog: wrapper, Root: f.Root})
	first, second := c.Nodes[0], c.Nodes[1]

	// Held, so the hang report is in the job's working directory before
	// the job (and its epilog) runs. The job runs in c.Dir/jobs.
	job := c.Sbatch(t, "echo done\n", "--nodes=2", "--hold", "--uid=65534", "--gid=65534")
	hang := hangreport.Report{V: hangreport.ReportVersion, Event: hangreport.EventHung, Job: job, Host: first,
		Time: time.Now().UTC(), Since: time.Now().UTC().Add(-time.Minute), Window: "1m0s", Reason: "FlatUsageStuckCollective",
		Flat: []string{"io"}, Culprits: []string{second}, Actions: []string{"log", "report"}}
	b, err := json.Marshal(hang)
	if err != nil {
		t.Fatal(err)
	}
	hangPath := filepath.Join(c.Dir, "jobs", hangreport.Name(job, first, hang.Time))
	forge := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", `cat > "$1"`, "sh", hangPath)
	forge.Stdin = strings.NewReader(string(b))
	if out, err := forge.CombinedOutput(); err != nil {
		t.Fatalf("writing the report as uid 65534: %v\n%s", err, out)
	}
	if out, err := c.Command(t, "scontrol", "release", job); err != nil {
		t.Fatalf("scontrol release: %v\n%s", err, out)
	}
	c.WaitJob(t, job, 60*time.Second, "COMPLETED")

	// Both epilogs leave a report: health facts only, nothing drained.
	var reps map[string]report.Report
	deadline := time.Now().Add(30 * time.Second)
	for {
		reps = readReports(t, reports)
		if len(reps) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(reps) != 2 {
		t.Fatalf("epilog reports %+v", reps)
	}
	checks := func(r report.Report) string {
		var s []string
		for _, res := range r.Results {
			s = append(s, res.Check)
		}
		return strings.Join(s, ",")
	}
	if r := reps[second]; checks(r) != "fault-inject" || r.Action.Kind != report.ActionNone ||
		!strings.Contains(strings.Join(r.Notes, "\n"), "recheck: named as culprit by vigil-watch in "+hangPath+"; a hang report is written by the job's own processes, so it runs nothing more") {
		t.Errorf("%s's report: checks %s, action %+v, notes %q", second, checks(r), r.Action, r.Notes)
	}
	if r := reps[first]; checks(r) != "fault-inject" || r.Action.Kind != report.ActionNone {
		t.Errorf("%s's report: checks %s, action %+v, notes %q", first, checks(r), r.Action, r.Notes)
	}
	for _, node := range c.Nodes {
		if n := c.WaitNode(t, node, 10*time.Second, func(slurm.Node) bool { return true }); n.Drained() {
			t.Errorf("%s drained: %q", node, n.Reason)
		}
	}
}

// readReports reads the epilog reports in dir, keyed by node.
func readReports(t *testing.T, dir string) map[string]report.Report {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	out := map[string]report.Report{}
	for _, p := range m {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r report.Report
		if err := json.Unmarshal(b, &r); err != nil {
			continue // being written
		}
		if r.Mode == "epilog" {
			out[r.Node] = r
		}
	}
	return out
}
