package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/lifecycle/notice"
	"github.com/vigil-hpc/vigil/lifecycle/record"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// statusSetup starts a 2-node cluster whose prolog reads one config per
// node (DIR/<node>.toml), so that one node can fail while the other passes.
func statusSetup(t *testing.T) (*slurmtest.Cluster, e2eSetup, func(node string, fail bool)) {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	s := newSetup(t, "", "")
	wrapper := filepath.Join(s.dir, "vigil-prolog.sh")
	// A failing node waits a second before it starts (DIR/<node>.delay), so
	// that its failure comes after the first node's "passed": the two
	// writers do not read and write the comment at the same instant (see
	// the race described in lifecycle/notice/jobcomment.go).
	script := fmt.Sprintf("#!/bin/sh\nexport VIGIL_STATE_DIR=%s/state-$SLURMD_NODENAME\n"+
		"export VIGIL_REPORT_DIR=%s/$SLURMD_NODENAME\n[ -e %s/$SLURMD_NODENAME.delay ] && sleep 1\n"+
		"exec %s --config %s/$SLURMD_NODENAME.toml\n", s.dir, s.reports, s.dir, bin, s.dir)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(node string, fail bool) {
		extra := ""
		if fail {
			extra = "[checks.gpu-count]\nexpected = 1\n"
			if err := os.WriteFile(filepath.Join(s.dir, node+".delay"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		conf := fmt.Sprintf("[prolog]\nsuite = \"health\"\nchecks = [\"gpu-count\"]\nbudget = \"60s\"\ncheck_timeout = \"20s\"\n"+
			"textfile = \"\"\nrun_dir = %q\nslurm_bin_dir = %q\nresult_dir = \"workdir\"\n%s",
			filepath.Join(s.dir, "run-"+node), scontrolDir(t), extra)
		if err := os.WriteFile(filepath.Join(s.dir, node+".toml"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, Prolog: wrapper, PrologFlags: "Alloc"})
	for _, n := range c.Nodes {
		write(n, false)
	}
	return c, s, write
}

// readResult reads a node's result file in the job's working directory.
func readResult(t *testing.T, c *slurmtest.Cluster, job, node string) record.JobResult {
	t.Helper()
	path := filepath.Join(c.Dir, "jobs", record.JobResultName(job, node))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("result file: %v", err)
	}
	var jr record.JobResult
	if err := json.Unmarshal(b, &jr); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return jr
}

// TestE2EJobStatus: a passing 2-node job ends with "vigil: passed (N s)"
// after the user's comment; a job whose second node fails a check shows
// "vigil: <node> failed gpu-count (GPUCountMismatch); job requeued" with
// the user's comment kept, and every node leaves its result file in the
// job's working directory.
func TestE2EJobStatus(t *testing.T) {
	c, s, write := statusSetup(t)
	first := notice.FirstNode(c.Nodes, "")
	second := c.Nodes[0]
	if second == first {
		second = c.Nodes[1]
	}

	job := c.Sbatch(t, "echo ok\n", "-N", "2", "--comment=my note")
	c.WaitJob(t, job, 60*time.Second, "COMPLETED")
	comment := c.JobInfo(t, job).Comment
	t.Logf("job %s: %s", job, comment)
	if !regexp.MustCompile(`^my note; vigil: passed \(\d+ s\)$`).MatchString(comment) {
		t.Errorf("passing job's comment %q, want \"my note; vigil: passed (N s)\"", comment)
	}
	for _, n := range c.Nodes {
		if jr := readResult(t, c, job, n); jr.Verdict != "pass" || jr.Requeued || jr.Node != n {
			t.Errorf("result of %s: %+v", n, jr)
		}
	}

	write(second, true)
	// Slurm here starts the batch script once the batch host's prolog is
	// done, and refuses comment updates ("Job has already finished") from
	// a job that ended before the failing prolog requeued it: the job
	// runs long enough for the failing node to write.
	job = c.Sbatch(t, "sleep 20\n", "-N", "2", "--comment=keep me")
	c.WaitNode(t, second, 60*time.Second, func(n slurm.Node) bool { return n.Drained() })
	c.WaitJob(t, job, 30*time.Second, "PENDING")
	want := "keep me; vigil: " + second + " failed gpu-count (GPUCountMismatch); job requeued"
	deadline := time.Now().Add(10 * time.Second)
	for comment = c.JobInfo(t, job).Comment; comment != want && time.Now().Before(deadline); comment = c.JobInfo(t, job).Comment {
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("job %s: %s", job, comment)
	if comment != want {
		t.Errorf("failing job's comment %q, want %q", comment, want)
		for _, r := range nodeReports(t, s) {
			t.Logf("report of %s job %s: exit %d, start %s, duration %s, notes %q", r.Node, r.Job, r.ExitCode,
				r.Start.Format("15:04:05.000"), r.Duration, r.Notes)
		}
	}
	jr := readResult(t, c, job, second)
	if jr.Verdict != "fail" || !jr.Requeued || len(jr.Failed) != 1 || jr.Failed[0].Check != "gpu-count" ||
		jr.Failed[0].Reason != "GPUCountMismatch" {
		t.Errorf("result of %s: %+v", second, jr)
	}
	if jr := readResult(t, c, job, first); jr.Verdict != "pass" {
		t.Errorf("result of %s: %+v", first, jr)
	}
	if out, err := c.Command(t, "scontrol", "show", "job", job); err != nil || !strings.Contains(out, want) {
		t.Errorf("scontrol show job %s (%v):\n%s", job, err, out)
	}
}
