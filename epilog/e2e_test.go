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

// TestE2ECulpritRecheck: vigil-epilog as Slurm's Epilog on a two-node job
// whose working directory holds a vigil-watch hang report naming the second
// node. The second node's epilog runs the full suite, where a performance
// probe (the disk check, pointed at a missing directory) fails, and drains
// it; the first node gets the health facts only and stays up.
func TestE2ECulpritRecheck(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, testE2ECulpritRecheck)
}

func testE2ECulpritRecheck(t *testing.T, f slurmtest.Flavour) {
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
	job := c.Sbatch(t, "echo done\n", "--nodes=2", "--hold")
	hang := hangreport.Report{V: hangreport.ReportVersion, Event: hangreport.EventHung, Job: job, Host: first,
		Time: time.Now().UTC(), Since: time.Now().UTC().Add(-time.Minute), Window: "1m0s", Reason: "FlatUsageStuckCollective",
		Flat: []string{"io"}, Culprits: []string{second}, Actions: []string{"log", "report"}}
	b, err := json.Marshal(hang)
	if err != nil {
		t.Fatal(err)
	}
	hangPath := filepath.Join(c.Dir, "jobs", hangreport.Name(job, first, hang.Time))
	if err := os.WriteFile(hangPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := c.Command(t, "scontrol", "release", job); err != nil {
		t.Fatalf("scontrol release: %v\n%s", err, out)
	}
	c.WaitJob(t, job, 60*time.Second, "COMPLETED")
	n := c.WaitNode(t, second, 60*time.Second, func(n slurm.Node) bool { return n.Drained() })
	if !strings.HasPrefix(n.Reason, "vigil: disk DiskPathMissing") {
		t.Fatalf("%s drained with reason %q", second, n.Reason)
	}

	// Both epilogs leave a report; the first node's says health facts only.
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
	if r := reps[second]; checks(r) != "fault-inject,disk" || r.Action.Kind != report.ActionDrain ||
		!strings.Contains(strings.Join(r.Notes, "\n"), "recheck: named as culprit by vigil-watch in "+hangPath) {
		t.Errorf("%s's report: checks %s, action %+v, notes %q", second, checks(r), r.Action, r.Notes)
	}
	if r := reps[first]; checks(r) != "fault-inject" || r.Action.Kind != report.ActionNone {
		t.Errorf("%s's report: checks %s, action %+v, notes %q", first, checks(r), r.Action, r.Notes)
	}
	c.WaitNode(t, first, 10*time.Second, func(n slurm.Node) bool { return !n.Drained() })
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
