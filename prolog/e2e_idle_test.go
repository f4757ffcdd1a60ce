package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/lifecycle"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// idleGrace is the validation partition's preemption GraceTime, seconds,
// with PreemptMode=CANCEL (REQUEUE runs without one).
const idleGrace = 10

// idleCluster is a cluster whose users' partition (batch, the default,
// PriorityTier 10) preempts vigil's validation partition (vigil,
// PriorityTier 1) with preemptMode (CANCEL or REQUEUE) and grace seconds
// of GraceTime: the slurm.conf lines docs/operations.md gives.
func idleCluster(t *testing.T, f slurmtest.Flavour, nodes int, preemptMode string, grace int) *slurmtest.Cluster {
	return slurmtest.Start(t, slurmtest.Options{Nodes: nodes, GPUsPerNode: 2, Root: f.Root,
		PreemptType: "preempt/partition_prio", PreemptMode: preemptMode,
		Partitions: []slurmtest.Partition{
			{Name: "batch", Default: true, PriorityTier: 10, PreemptMode: "OFF"},
			{Name: "vigil", PriorityTier: 1, PreemptMode: preemptMode, GraceTime: grace},
		}})
}

// idleConf is the [idle] section of the tests: the deep suite is the
// command check running script.
func idleConf(s e2eSetup, script string) string {
	return fmt.Sprintf(`[idle]
partition = "vigil"
checks = ["command"]
interval = "7d"
time_limit = "10m"
budget = "5m"
check_timeout = "4m"
state_dir = %q
output = %q

[checks.command]
command = ["/bin/sh", "-c", %q]
timeout = "4m"
`, filepath.Join(s.dir, "idle"), filepath.Join(s.dir, "idle-%N-%j.out"), script)
}

// sweepOnce runs vigil-prolog idle-sweep with the cluster's environment
// (which its jobs inherit) and returns its output and how long it took.
func sweepOnce(t *testing.T, c *slurmtest.Cluster, bin string, s e2eSetup) (string, time.Duration) {
	t.Helper()
	cmd := exec.Command(bin, "idle-sweep", "--config", s.config)
	cmd.Env = append(append(os.Environ(), c.Env...), "VIGIL_SLURM_BIN_DIR="+c.Client().BinDir, "VIGIL_STATE_DIR="+s.stateDir())
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	el := time.Since(t0)
	if err != nil {
		t.Fatalf("idle-sweep: %v\n%s", err, out)
	}
	return string(out), el
}

// submissions reads the sweep's ledger: the job of each node.
func submissions(t *testing.T, s e2eSetup) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dir, "idle", "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Submissions map[string]struct{ Job string } `json:"submissions"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for n, sub := range l.Submissions {
		out[n] = sub.Job
	}
	return out
}

// TestE2EIdleValidation: a sweep submits one validation job per idle node
// of the vigil partition; the deep suite (the command check, failing on
// one node) drains that node with the check's reason and passes on the
// others, which a second sweep within the interval leaves alone.
func TestE2EIdleValidation(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurmInTurn(t, testE2EIdleValidation)
}

func testE2EIdleValidation(t *testing.T, f slurmtest.Flavour) {
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	s := newSetup(t, "", "")
	c := idleCluster(t, f, 3, "CANCEL", idleGrace)
	bad := c.Nodes[1]
	s.write(t, "", idleConf(s, fmt.Sprintf(`test "$SLURMD_NODENAME" != %s && echo '{"ok": 1}'`, bad)))

	t0 := time.Now()
	out, took := sweepOnce(t, c, bin, s)
	t.Logf("first sweep (%.2fs):\n%s", took.Seconds(), out)
	jobs := submissions(t, s)
	if len(jobs) != 3 || !strings.Contains(out, "submitted: 3 of 3 nodes") {
		t.Fatalf("submitted %v, want one job per node", jobs)
	}
	for _, n := range c.Nodes {
		j := c.JobInfo(t, jobs[n])
		if j.Name != "vigil-idle-"+n || j.Partition != "vigil" {
			t.Errorf("job %s: name %q partition %q", jobs[n], j.Name, j.Partition)
		}
	}
	for _, n := range c.Nodes {
		c.WaitJob(t, jobs[n], 90*time.Second, "COMPLETED", "FAILED", "CANCELLED", "PREEMPTED")
	}
	t.Logf("validation jobs ended %.2fs after the sweep started", time.Since(t0).Seconds())
	drained := c.WaitNode(t, bad, 30*time.Second, func(n slurm.Node) bool { return n.Drained() })
	if drained.Reason != "vigil: command CommandFailed" {
		t.Errorf("drain reason %q, want vigil: command CommandFailed", drained.Reason)
	}
	recs, errs := lifecycle.ReadValidations(filepath.Join(s.dir, "idle"))
	for _, n := range c.Nodes {
		want := "pass"
		if n == bad {
			want = "fail"
		}
		if v := recs[n]; v.Outcome != want || v.Job != jobs[n] || strings.Join(v.Checks, ",") != "command" {
			t.Errorf("%s: record %+v (errors %v), want %s by job %s", n, v, errs, want, jobs[n])
		}
		if n != bad {
			if st := nodeState(t, c, n); st.Drained() {
				t.Errorf("%s passed and is drained: %+v", n, st)
			}
		}
	}
	var validate int
	for _, r := range s.readReports(t) {
		if r.Mode == "validate" {
			validate++
			if r.Node == bad && (r.Action.Kind != report.ActionDrain || !r.Action.Done || r.ExitCode != 1) {
				t.Errorf("report of %s: %+v", bad, r.Action)
			}
		}
	}
	if validate != 3 {
		t.Errorf("%d validate reports, want 3", validate)
	}

	out, took = sweepOnce(t, c, bin, s)
	t.Logf("second sweep (%.2fs):\n%s", took.Seconds(), out)
	if !strings.Contains(out, "submitted: 0 of 3 nodes") || !strings.Contains(out, bad+"  skip    drained") {
		t.Errorf("second sweep submitted again or did not see the drain")
	}
	for _, n := range c.Nodes {
		if n != bad && !strings.Contains(out, n+"  skip    validated ") {
			t.Errorf("second sweep: %s is not skipped as validated", n)
		}
	}
	if again := submissions(t, s); fmt.Sprint(again) != fmt.Sprint(jobs) {
		t.Errorf("ledger %v after the second sweep, want %v", again, jobs)
	}
}

// TestE2EIdleValidationYieldsToUsers: a user's job submitted to a node
// while vigil validates it starts within the partition's GraceTime and a
// margin: Slurm preempts the validation job, whose run stops at once,
// drains nothing and records itself interrupted. With PreemptMode=CANCEL
// and a GraceTime, Slurm signals the job's step, the run ends within the
// grace and the next sweep validates the node again once it is idle; with
// REQUEUE and no GraceTime, Slurm puts the job back in the queue and the
// sweep submits no other beside it.
func TestE2EIdleValidationYieldsToUsers(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurmInTurn(t, func(t *testing.T, f slurmtest.Flavour) {
		for _, mode := range []string{"CANCEL", "REQUEUE"} {
			t.Run(mode, func(t *testing.T) { testE2EIdleValidationYieldsToUsers(t, f, mode) })
		}
	})
}

func testE2EIdleValidationYieldsToUsers(t *testing.T, f slurmtest.Flavour, mode string) {
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	s := newSetup(t, "", "")
	grace := idleGrace
	if mode == "REQUEUE" {
		grace = 0
	}
	c := idleCluster(t, f, 1, mode, grace)
	node := c.Nodes[0]
	started := filepath.Join(s.dir, "deep-started")
	s.write(t, "", idleConf(s, "touch "+started+"; exec sleep 300"))

	out, _ := sweepOnce(t, c, bin, s)
	val := submissions(t, s)[node]
	if val == "" {
		t.Fatalf("no validation job:\n%s", out)
	}
	c.WaitJob(t, val, 60*time.Second, "RUNNING")
	waitFile(t, c, started, val)

	submit := time.Now()
	user := c.Sbatch(t, "date +%s.%N\n", "-p", "batch", "-w", node)
	c.WaitJob(t, user, time.Duration(grace+30)*time.Second, "COMPLETED")
	sec, err := strconv.ParseFloat(strings.TrimSpace(c.JobOutput(user)), 64)
	if err != nil {
		t.Fatalf("user job output %q: %v", c.JobOutput(user), err)
	}
	delay := time.Unix(0, int64(sec*1e9)).Sub(submit)
	t.Logf("PreemptMode=%s: user job %s started %.2fs after its submission (GraceTime %ds); validation job %s: %s",
		mode, user, delay.Seconds(), grace, val, c.JobInfo(t, val).State)
	if margin := 10 * time.Second; delay > time.Duration(grace)*time.Second+margin {
		t.Errorf("the user's job waited %v, more than GraceTime %ds + %v", delay, grace, margin)
	}
	v := waitRecord(t, s, node)
	if v.Outcome != lifecycle.OutcomeInterrupted || v.Job != val {
		t.Errorf("record %+v, want interrupted by job %s", v, val)
	}
	if n := nodeState(t, c, node); n.Drained() {
		t.Errorf("the preempted validation drained %s: %+v", node, n)
	}

	if mode == "REQUEUE" {
		c.WaitJob(t, val, 30*time.Second, "PENDING")
		if j := c.JobInfo(t, val); j.Restarts < 1 {
			t.Errorf("validation job %s not requeued: %+v", val, j)
		}
		out, _ = sweepOnce(t, c, bin, s)
		if !strings.Contains(out, "validation job "+val+" is pending") || !strings.Contains(out, "submitted: 0 of 1 nodes") {
			t.Errorf("the sweep submitted beside the requeued job:\n%s", out)
		}
		return
	}
	if st := c.WaitJob(t, val, 30*time.Second, "PREEMPTED", "CANCELLED", "COMPLETED", "FAILED"); st == "RUNNING" {
		t.Errorf("validation job %s still %s", val, st)
	}
	c.WaitNode(t, node, 30*time.Second, func(n slurm.Node) bool { return n.State == "IDLE" && len(n.Flags) == 0 })
	out, _ = sweepOnce(t, c, bin, s)
	if again := submissions(t, s)[node]; again == val || again == "" || !strings.Contains(out, node+"  submitted job "+again+"  not validated yet") {
		t.Errorf("after the interrupted validation, the next sweep did not validate %s again (job %q):\n%s", node, again, out)
	}
}

// waitFile waits until path exists (the deep suite started) or fails the
// test with the validation job.
func waitFile(t *testing.T, c *slurmtest.Cluster, path, job string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deep suite did not start\n%s", c.Dump(job))
		}
	}
}

// waitRecord waits for the node's validation record (the run writes it as
// it stops).
func waitRecord(t *testing.T, s e2eSetup, node string) lifecycle.Validation {
	t.Helper()
	var v lifecycle.Validation
	for deadline := time.Now().Add(20 * time.Second); v.Outcome == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		recs, _ := lifecycle.ReadValidations(filepath.Join(s.dir, "idle"))
		v = recs[node]
	}
	return v
}
