package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// e2eSetup is a config directory with reports and textfile paths inside it
// (textfile is the prolog's, in the config's textfile_dir).
type e2eSetup struct {
	dir, config, reports, textfile string
}

func newSetup(t *testing.T, prolog string, extra string) e2eSetup {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := e2eSetup{dir: dir, config: filepath.Join(dir, "vigil.toml"), reports: filepath.Join(dir, "reports"),
		textfile: filepath.Join(dir, "metrics", report.TextfileName("prolog"))}
	s.write(t, prolog, extra)
	return s
}

// write (re)writes the config: [prolog] lines given plus the paths.
func (s e2eSetup) write(t *testing.T, prolog, extra string) {
	t.Helper()
	conf := fmt.Sprintf("[prolog]\nreport_dir = %q\ntextfile_dir = %q\nrun_dir = %q\nslurm_bin_dir = %q\n%s\n%s\n",
		s.reports, filepath.Dir(s.textfile), filepath.Join(s.dir, "run"), scontrolDir(t), prolog, extra)
	if err := os.WriteFile(s.config, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wrapper writes a script that runs bin with --config, as slurm.conf's
// Prolog= takes a program without arguments.
func (s e2eSetup) wrapper(t *testing.T, bin string, env ...string) string {
	t.Helper()
	p := filepath.Join(s.dir, "vigil-prolog.sh")
	exports := ""
	for _, e := range env {
		exports += "export " + e + "\n"
	}
	// The record paths of the last valid config are kept with the setup,
	// not in the machine's /var/lib/vigil.
	exports += "export VIGIL_STATE_DIR=" + s.stateDir() + "\n"
	script := fmt.Sprintf("#!/bin/sh\n%sexec %s --config %s \"$@\"\n", exports, bin, s.config)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// stateDir is the setup's VIGIL_STATE_DIR.
func (s e2eSetup) stateDir() string { return filepath.Join(s.dir, "state") }

func scontrolDir(t *testing.T) string {
	t.Helper()
	for _, d := range []string{"/usr/bin", "/usr/local/bin"} {
		if _, err := os.Stat(filepath.Join(d, "scontrol")); err == nil {
			return d
		}
	}
	p, err := exec.LookPath("scontrol")
	if err != nil {
		t.Fatal("scontrol not found: install the Debian package slurm-client")
	}
	return filepath.Dir(p)
}

// reports reads every JSON report in the setup's report directory.
func (s e2eSetup) readReports(t *testing.T) []report.Report {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(s.reports, "*.json"))
	var out []report.Report
	for _, p := range m {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r report.Report
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, r)
	}
	return out
}

// waitReports reads the reports until one satisfies ok or 20 s pass: a run
// writes its report after it has drained the node and notified, so a test
// that saw the drain may look before the report is there.
func (s e2eSetup) waitReports(t *testing.T, ok func(report.Report) bool) []report.Report {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		reps := s.readReports(t)
		for _, r := range reps {
			if ok(r) {
				return reps
			}
		}
		if time.Now().After(deadline) {
			return reps
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runAs runs the binary as a health run for node with the cluster's
// environment and its Slurm clients (the config's slurm_bin_dir is where
// slurmd finds them, which for a cluster from a root is inside the root).
func runAs(t *testing.T, c *slurmtest.Cluster, bin string, args ...string) (string, int, time.Duration) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), c.Env...), "VIGIL_SLURM_BIN_DIR="+c.Client().BinDir)
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	el := time.Since(t0)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return string(out), code, el
}

func nodeState(t *testing.T, c *slurmtest.Cluster, name string) slurm.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := c.Client().Node(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

const adminReason = "admin: fan replaced, burn-in pending"

// TestE2EDrainAndResume: a config that expects 1 GPU on a node without any
// drains the node through the prolog, the job is requeued; after the config
// is fixed a health run resumes the node and the job runs. A node an admin
// drained keeps the admin's reason throughout.
func TestE2EDrainAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurmInTurn(t, testE2EDrainAndResume)
}

func testE2EDrainAndResume(t *testing.T, f slurmtest.Flavour) {
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	s := newSetup(t, `suite = "health"
checks = ["gpu-count"]
budget = "60s"
check_timeout = "20s"`, "[checks.gpu-count]\nexpected = 1\n")
	// slurmd runs the health mode every 5 seconds from the start. Its config
	// has an unknown key for now, a config error: such runs change nothing
	// (but record themselves) until the config is fixed below.
	healthConf := filepath.Join(s.dir, "health.toml")
	if err := os.WriteFile(healthConf, []byte(fmt.Sprintf("[prolog]\nreport_dir = %q\ntextfile_dir = %q\nnot_fixed_yet = true\n",
		s.reports, filepath.Dir(s.textfile))), 0o644); err != nil {
		t.Fatal(err)
	}
	health := filepath.Join(s.dir, "vigil-health.sh")
	if err := os.WriteFile(health, []byte(fmt.Sprintf("#!/bin/sh\nexport VIGIL_STATE_DIR=%s\nexec %s --health --config %s\n", s.stateDir(), bin, healthConf)), 0o755); err != nil {
		t.Fatal(err)
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, Prolog: s.wrapper(t, bin), PrologFlags: "Alloc",
		HealthCheckProgram: health, HealthCheckInterval: 5, Root: f.Root})
	good, admin := c.Nodes[0], c.Nodes[1]
	if out, err := c.Command(t, "scontrol", "update", "NodeName="+admin, "State=DRAIN", "Reason="+adminReason); err != nil {
		t.Fatalf("admin drain: %v\n%s", err, out)
	}
	checkAdmin := func(when string) {
		t.Helper()
		n := nodeState(t, c, admin)
		if !n.Drained() || n.Reason != adminReason {
			t.Fatalf("%s: admin-drained node is %+v", when, n)
		}
	}

	job := c.Sbatch(t, "echo ran on $SLURMD_NODENAME\n")
	n := c.WaitNode(t, good, 60*time.Second, func(n slurm.Node) bool { return n.Drained() })
	if !strings.HasPrefix(n.Reason, "vigil: gpu-count GPUCountMismatch") {
		t.Fatalf("drain reason %q, want vigil: gpu-count GPUCountMismatch", n.Reason)
	}
	sinfo, err := c.Command(t, "sinfo", "-R", "-h", "-o", "%N|%E")
	if err != nil || !strings.Contains(sinfo, good+"|vigil: gpu-count GPUCountMismatch") || !strings.Contains(sinfo, admin+"|"+adminReason) {
		t.Fatalf("sinfo -R:\n%s (%v)", sinfo, err)
	}
	// The job went back to the queue instead of running.
	info := c.JobInfo(t, job)
	if info.State != "PENDING" || info.Restarts < 1 {
		// The requeue may still be in flight.
		c.WaitJob(t, job, 30*time.Second, "PENDING")
		info = c.JobInfo(t, job)
	}
	if info.Restarts < 1 {
		t.Errorf("job %s not requeued: %+v", job, info)
	}
	checkAdmin("after the failing prolog")

	// The report and the textfile are on disk.
	var r report.Report
	for _, rep := range s.readReports(t) {
		if rep.Mode == "prolog" {
			r = rep
		}
	}
	if r.Mode == "" {
		t.Fatalf("no prolog report in %s", s.reports)
	}
	if r.Node != good || r.Job != job || r.Verdict != "fail" || r.Action.Kind != report.ActionDrain || !r.Action.Done || r.ExitCode != 1 {
		t.Errorf("report: %+v", r)
	}
	prom, err := os.ReadFile(s.textfile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prom), `vigil_check_status{mode="prolog",check="gpu-count",device="",reason="GPUCountMismatch",status="fail"} 1`) {
		t.Errorf("textfile:\n%s", prom)
	}

	// Fix the config: no GPUs expected (the node's gres has none). The next
	// HealthCheckProgram run resumes the node vigil drained.
	s.write(t, `suite = "health"
checks = ["gpu-count"]`, "")
	b, err := os.ReadFile(s.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(healthConf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c.WaitNode(t, good, 30*time.Second, func(n slurm.Node) bool { return !n.Drained() })
	// The run writes its report after it resumed the node: wait for it.
	resumed := false
	for deadline := time.Now().Add(15 * time.Second); !resumed && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, r := range s.readReports(t) {
			resumed = resumed || (r.Mode == "health" && r.Node == good && r.Action.Kind == report.ActionResume && r.Action.Done)
		}
	}
	if !resumed {
		t.Errorf("no health report says it resumed %s", good)
	}
	// A health run on the admin's node leaves it alone.
	out, code, _ := runAs(t, c, bin, "--health", "--node", admin, "--config", s.config)
	if code != 0 || !strings.Contains(out, "held by someone else") {
		t.Fatalf("health run on the admin's node, exit %d:\n%s", code, out)
	}
	checkAdmin("after health runs")

	// vigil requeued the job unheld ([prolog] max_requeues); Slurm delays a
	// requeued job's begin time: start it now and it runs on the resumed
	// node.
	if info := c.JobInfo(t, job); strings.Contains(strings.ToLower(info.Reason), "held") {
		t.Errorf("job %s held (%s), want it requeued unheld by vigil", job, info.Reason)
	}
	if out, err := c.Command(t, "scontrol", "update", "JobId="+job, "StartTime=now"); err != nil {
		t.Fatalf("start now: %v\n%s", err, out)
	}
	c.WaitJob(t, job, 60*time.Second, "COMPLETED")
	if got := c.JobOutput(job); !strings.Contains(got, "ran on "+good) {
		t.Errorf("job output %q", got)
	}
	checkAdmin("at the end")
}

// TestE2EHangCrashBudget: a hung check is killed at its deadline and the
// prolog returns inside its budget; a crashing checker gives unknown and
// no drain; a run whose budget runs out drains with a budget reason.
func TestE2EHangCrashBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	hang := newSetup(t, `checks = ["fault-inject"]
check_timeout = "2s"
budget = "30s"`, "[checks.fault-inject]\nmode = \"hang\"\n")
	pidfile := filepath.Join(hang.dir, "grandchild.pid")
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, PrologFlags: "Alloc",
		Prolog: hang.wrapper(t, bin, "VIGIL_FAULT_PIDFILE="+pidfile)})
	first, second := c.Nodes[0], c.Nodes[1]

	t.Run("crash is unknown and never drains", func(t *testing.T) {
		s := newSetup(t, `checks = ["fault-inject"]`, "[checks.fault-inject]\nmode = \"crash\"\n")
		out, code, _ := runAs(t, c, bin, "--node", second, "--config", s.config)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		reps := s.readReports(t)
		if len(reps) != 1 || len(reps[0].Results) != 1 {
			t.Fatalf("reports: %+v", reps)
		}
		res := reps[0].Results[0]
		if res.Status != "unknown" || res.Reason != "CheckCrashed" || reps[0].Action.Kind != report.ActionNone {
			t.Fatalf("result %+v, action %+v", res, reps[0].Action)
		}
		if n := nodeState(t, c, second); n.Drained() {
			t.Fatalf("crash drained the node: %+v", n)
		}
	})

	t.Run("invalid config never drains", func(t *testing.T) {
		// A valid run first says where records go; then the file breaks.
		s := newSetup(t, `checks = ["fault-inject"]`, "[checks.fault-inject]\nmode = \"pass\"\n")
		if out, code, _ := runAs(t, c, bin, "--node", second, "--config", s.config); code != 0 {
			t.Fatalf("valid run: exit %d:\n%s", code, out)
		}
		if err := os.RemoveAll(s.reports); err != nil {
			t.Fatal(err)
		}
		s.write(t, `checks = ["fault-inject"]
retries = "two"`, "[checks.fault-inject]\nmode = \"fail\"\n")
		out, code, _ := runAs(t, c, bin, "--node", second, "--config", s.config)
		if code != 0 || !strings.Contains(out, "INVALID CONFIG") || !strings.Contains(out, "prolog.retries") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if n := nodeState(t, c, second); n.Drained() {
			t.Fatalf("invalid config drained the node: %+v", n)
		}
		prom, err := os.ReadFile(s.textfile)
		if err != nil || !strings.Contains(string(prom), `vigil_config_valid{mode="prolog"} 0`) {
			t.Fatalf("textfile (%v):\n%s", err, prom)
		}
		if reps := s.readReports(t); len(reps) != 1 || reps[0].Config.Valid || len(reps[0].Config.Errors) == 0 {
			t.Fatalf("reports %+v", reps)
		}
	})

	t.Run("budget expiry drains inside the budget", func(t *testing.T) {
		s := newSetup(t, `checks = ["fault-inject"]
check_timeout = "1m"
budget = "3s"`, "[checks.fault-inject]\nmode = \"hang\"\n")
		out, code, el := runAs(t, c, bin, "--node", second, "--config", s.config)
		if code != 1 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		reps := s.readReports(t)
		if len(reps) != 1 || !reps[0].BudgetExpired || reps[0].Duration >= 3*time.Second {
			t.Fatalf("run took %v inside, budget 3s: %+v", reps[0].Duration, reps)
		}
		// From outside, allow for starting the process on a loaded machine.
		if el > 3*time.Second+5*time.Second {
			t.Errorf("took %v with a 3s budget", el)
		}
		n := nodeState(t, c, second)
		if !n.Drained() || n.Reason != "vigil: budget BudgetExpired" {
			t.Fatalf("node %+v", n)
		}
	})

	t.Run("budget expiry with hold holds the job and leaves the node", func(t *testing.T) {
		hang.write(t, `checks = ["fault-inject"]
check_timeout = "1m"
budget = "3s"
on_budget_expiry = "hold"`, "[checks.fault-inject]\nmode = \"hang\"\n")
		defer hang.write(t, `checks = ["fault-inject"]
check_timeout = "2s"
budget = "30s"`, "[checks.fault-inject]\nmode = \"hang\"\n")
		job := c.Sbatch(t, "true\n")
		deadline := time.Now().Add(60 * time.Second)
		var info slurm.JobInfo
		for time.Now().Before(deadline) {
			info = c.JobInfo(t, job)
			if info.State == "PENDING" && info.Restarts > 0 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if info.State != "PENDING" || info.Restarts == 0 || !strings.Contains(strings.ToLower(info.Reason), "held") {
			t.Fatalf("job %s: state %s reason %q restarts %d", job, info.State, info.Reason, info.Restarts)
		}
		if n := nodeState(t, c, first); n.Drained() {
			t.Fatalf("hold drained the node: %+v", n)
		}
		if out, err := c.Command(t, "scancel", job); err != nil {
			t.Fatalf("scancel: %v\n%s", err, out)
		}
	})

	t.Run("hung check fails at its deadline under Slurm", func(t *testing.T) {
		job := c.Sbatch(t, "true\n")
		n := c.WaitNode(t, first, 60*time.Second, func(n slurm.Node) bool { return n.Drained() })
		if n.Reason != "vigil: fault-inject CheckTimedOut" {
			t.Fatalf("drain reason %q", n.Reason)
		}
		reps := hang.waitReports(t, func(r report.Report) bool { return r.Job == job })
		if len(reps) == 0 {
			t.Fatal("no report")
		}
		r := reps[len(reps)-1]
		if r.Job != job || len(r.Results) != 1 || r.Results[0].Reason != "CheckTimedOut" {
			t.Fatalf("report %+v", r)
		}
		// Killed at the 2s deadline; the slack is for a loaded machine.
		if d := r.Results[0].Duration; d < 2*time.Second || d > 2*time.Second+5*time.Second {
			t.Errorf("hung check killed after %v, deadline 2s", d)
		}
		if r.Duration > 30*time.Second {
			t.Errorf("prolog took %v, budget 30s", r.Duration)
		}
		b, err := os.ReadFile(pidfile)
		if err != nil {
			t.Fatalf("the hang left no pid file: %v", err)
		}
		pid := strings.TrimSpace(string(b))
		if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z") {
			t.Errorf("the hung check's grandchild %s survived: %s", pid, st)
		}
	})
}

// TestE2EEpilogDrains: vigil-epilog as Slurm's Epilog re-checks the node
// after a job: the job completes, the node is drained with vigil's reason,
// and vigil's per-job directory is removed.
func TestE2EEpilogDrains(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/epilog")
	s := newSetup(t, `checks = ["gpu-count"]`, "[checks.gpu-count]\nexpected = 1\n")
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1, Epilog: s.wrapper(t, bin)})
	node := c.Nodes[0]
	// Leave a per-job file as the prolog would have.
	jobDir := filepath.Join(s.dir, "run", "jobs", "1")
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		t.Fatal(err)
	}
	job := c.Sbatch(t, "echo done\n")
	if job != "1" {
		t.Fatalf("first job of a fresh cluster is %s, not 1", job)
	}
	c.WaitJob(t, job, 60*time.Second, "COMPLETED")
	n := c.WaitNode(t, node, 60*time.Second, func(n slurm.Node) bool { return n.Drained() })
	if n.Reason != "vigil: gpu-count GPUCountMismatch" {
		t.Fatalf("drain reason %q", n.Reason)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(jobDir); os.IsNotExist(err) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(jobDir); !os.IsNotExist(err) {
		t.Errorf("per-job dir %s not removed (%v)", jobDir, err)
	}
	reps := s.waitReports(t, func(r report.Report) bool { return r.Mode == "epilog" })
	if len(reps) != 1 || reps[0].Mode != "epilog" || reps[0].ExitCode != 0 || reps[0].Job != job {
		t.Fatalf("reports %+v", reps)
	}
}

// TestE2EBrokenConfigUnderSlurm: a config broken in [watch], [checks.disk]
// and [policy] (and pointing its records elsewhere) under Slurm's Prolog
// drains nothing, the job runs, slurmd's log has each error at error level,
// and the textfile at the last valid path says vigil_config_valid 0; no
// report lands anywhere else.
func TestE2EBrokenConfigUnderSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	s := newSetup(t, `suite = "health"
checks = ["gpu-count"]`, "")
	// slurmd 22.05 writes a prolog's output to its log at debug2 ("prep/script:
	// _run_subpath_command: prolog success rc:0 output:..."), or at error
	// level when the prolog fails; at the default info level it drops it.
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1, Prolog: s.wrapper(t, bin), PrologFlags: "Alloc",
		ExtraConf: []string{"SlurmdDebug=debug2"}})
	node := c.Nodes[0]

	job := c.Sbatch(t, "echo ran\n")
	c.WaitJob(t, job, 60*time.Second, "COMPLETED")
	reps := s.readReports(t)
	if len(reps) != 1 || !reps[0].Config.Valid {
		t.Fatalf("valid run: reports %+v\n%s", reps, c.Dump(job))
	}

	other := filepath.Join(s.dir, "elsewhere")
	broken := fmt.Sprintf(`[prolog]
report_dir = %q
textfile_dir = %q
run_dir = %q
slurm_bin_dir = %q
suite = "health"
checks = ["gpu-count"]

[watch]
windwo = "2m"

[checks.disk]
size_mib = 0

[policy]
min_hang_time = "10m"
max_hang_time = "5m"
`, filepath.Join(other, "reports"), filepath.Join(other, "metrics"), filepath.Join(other, "run"), scontrolDir(t))
	if err := os.WriteFile(s.config, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	job = c.Sbatch(t, "echo ran\n")
	c.WaitJob(t, job, 60*time.Second, "COMPLETED")
	if got := c.JobOutput(job); !strings.Contains(got, "ran") {
		t.Errorf("job output %q", got)
	}
	if n := nodeState(t, c, node); n.Drained() {
		t.Fatalf("a broken config drained the node: %+v", n)
	}

	// slurmd keeps the prolog's stderr: every error, at error level, in
	// the cluster's log directory.
	logFile := filepath.Join(c.Dir, "log", "slurmd-"+node+".log")
	want := []string{
		s.config + ":10: watch.windwo: unknown key",
		s.config + ":13: checks.disk.size_mib: invalid value: 0: want 1 to 1024",
		s.config + ":17: policy.max_hang_time: invalid value: 5m0s: shorter than min_hang_time 10m0s",
	}
	var slurmdLog string
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(logFile)
		slurmdLog = string(b)
		missing := ""
		for _, w := range want {
			found := false
			for _, line := range strings.Split(slurmdLog, "\n") {
				found = found || (strings.Contains(line, w) && strings.Contains(line, "level=error"))
			}
			if !found {
				missing = w
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slurmd log %s lacks an error-level line with %q:\n%s", logFile, missing, slurmdLog)
		}
		time.Sleep(200 * time.Millisecond)
	}

	prom, err := os.ReadFile(s.textfile)
	if err != nil || !strings.Contains(string(prom), `vigil_config_valid{mode="prolog"} 0`) {
		t.Fatalf("textfile at the last valid path %s (%v):\n%s", s.textfile, err, prom)
	}
	reps = s.readReports(t)
	if len(reps) != 2 {
		t.Fatalf("%d reports in %s, want 2", len(reps), s.reports)
	}
	var bad *report.Report
	for i := range reps {
		if !reps[i].Config.Valid {
			bad = &reps[i]
		}
	}
	if bad == nil || bad.Job != job || bad.Action.Kind != report.ActionNone || len(bad.Config.Errors) < 3 {
		t.Fatalf("report of the broken run: %+v", bad)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("records went to the broken file's own paths (%s): %v", other, err)
	}
}
