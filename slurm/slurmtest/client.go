package slurmtest

// The cluster's clients: Slurm commands with the cluster's environment,
// job submission, and waiting for jobs and nodes.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/slurm"
)

// clientPath is PATH for clients: the test's own PATH plus the usual system directories.
func clientPath() string {
	p := os.Getenv("PATH")
	if p == "" {
		return searchPath
	}
	return p + ":" + searchPath
}

// Command runs a Slurm client (sinfo, squeue, scontrol, sbatch, srun,
// scancel ...) with the cluster's environment and a one-minute deadline, and
// returns its combined output.
func (c *Cluster) Command(t testing.TB, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.run(ctx, name, args...)
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	bin, err := c.lookBin(name)
	if err != nil {
		return "", err
	}
	cmd := osutil.Command(ctx, 5*time.Second, append([]string{bin}, args...)...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Dir = c.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// Client returns an scontrol client pointed at this cluster.
func (c *Cluster) Client() *slurm.Client {
	bin, err := c.lookBin("scontrol")
	dir := ""
	if err == nil {
		dir = filepath.Dir(bin)
	}
	return &slurm.Client{BinDir: dir, Env: append([]string(nil), c.Env...)}
}

// Sbatch writes script (given "#!/bin/sh" when it has no "#!" line) to a
// file under Dir/jobs, submits it and returns the job id. The job runs in
// Dir/jobs and writes to Dir/jobs/slurm-<id>.out (see JobOutput); args are
// extra sbatch options placed after those, so they can override both. Jobs
// run as the test's user (root) unless args hold --uid. It fails the test
// when sbatch fails.
func (c *Cluster) Sbatch(t testing.TB, script string, args ...string) string {
	t.Helper()
	jobs := filepath.Join(c.Dir, "jobs")
	if err := os.MkdirAll(jobs, 0o777); err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	f, err := os.CreateTemp(jobs, "job-*.sh")
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	if !strings.HasPrefix(script, "#!") {
		script = "#!/bin/sh\n" + script
	}
	if _, err := f.WriteString(script); err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	f.Close()
	if err := os.Chmod(f.Name(), 0o755); err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	argv := []string{"--parsable", "--chdir=" + jobs, "--output=" + filepath.Join(jobs, "slurm-%j.out")}
	argv = append(argv, args...)
	argv = append(argv, f.Name())
	out, err := c.Command(t, "sbatch", argv...)
	if err != nil {
		t.Fatalf("slurmtest: %v\n%s", err, out)
	}
	id := strings.TrimSpace(out)
	if i := strings.LastIndexByte(id, '\n'); i >= 0 { // warnings come first
		id = strings.TrimSpace(id[i+1:])
	}
	if i := strings.IndexByte(id, ';'); i >= 0 { // id;cluster
		id = id[:i]
	}
	if _, err := strconv.Atoi(id); err != nil {
		t.Fatalf("slurmtest: sbatch printed %q, not a job id", out)
	}
	return id
}

// JobOutput returns the content of a job's default output file
// (Dir/jobs/slurm-<id>.out, as Sbatch sets it), or "" when there is none yet.
func (c *Cluster) JobOutput(id string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "jobs", "slurm-"+id+".out"))
	return string(b)
}

// JobInfo reads the job through Client().Job and fails the test when that
// fails.
func (c *Cluster) JobInfo(t testing.TB, id string) slurm.JobInfo {
	t.Helper()
	j, err := c.jobInfo(id)
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	return j
}

// Jobs reads every job slurmctld still holds with one `scontrol show job -o`,
// by id: one command for a test that follows many jobs, where JobInfo costs
// one each. A job that is gone is absent. It fails the test when scontrol
// fails.
func (c *Cluster) Jobs(t testing.TB) map[string]slurm.JobInfo {
	t.Helper()
	out, err := c.Command(t, "scontrol", "show", "job", "-o")
	if err != nil {
		t.Fatalf("slurmtest: %v\n%s", err, out)
	}
	list, err := slurm.ParseJobs([]byte(out))
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	jobs := make(map[string]slurm.JobInfo, len(list))
	for _, j := range list {
		jobs[j.ID] = j
	}
	return jobs
}

// jobInfo reads the job, trying 3 times: a slurmctld that two clusters of
// 30 nodes starting beside it keep busy answered no scontrol within 30 s
// once (a fresh-clone CI run on 2 cores).
func (c *Cluster) jobInfo(id string) (slurm.JobInfo, error) {
	var j slurm.JobInfo
	var err error
	for try := 0; try < 3; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		j, err = c.Client().Job(ctx, id)
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline exceeded") {
			return j, err
		}
	}
	return j, err
}

// WaitJob polls the job until its JobState (PENDING, RUNNING, COMPLETED,
// FAILED, ...) is one of states and returns it. On timeout it fails the test
// with the job, the queue, the nodes and the daemons' logs.
func (c *Cluster) WaitJob(t testing.TB, id string, timeout time.Duration, states ...string) string {
	t.Helper()
	want := map[string]bool{}
	for _, s := range states {
		want[strings.ToUpper(s)] = true
	}
	var last slurm.JobInfo
	var lastErr error
	err := c.waitFor(timeout, "job "+id+" to reach "+strings.Join(states, "|"), func() (bool, error) {
		last, lastErr = c.jobInfo(id)
		return lastErr == nil && want[last.State], nil
	})
	if err != nil {
		t.Fatalf("slurmtest: %v (last state %q, reason %q, error %v)\n%s", err, last.State, last.Reason, lastErr, c.Dump(id))
	}
	return last.State
}

// WaitNode polls the node (through Client().Node) until pred holds and
// returns it. On timeout it fails the test with the node and the logs.
func (c *Cluster) WaitNode(t testing.TB, node string, timeout time.Duration, pred func(slurm.Node) bool) slurm.Node {
	t.Helper()
	var last slurm.Node
	var lastErr error
	err := c.waitFor(timeout, "node "+node, func() (bool, error) {
		last, lastErr = c.node(node)
		return lastErr == nil && pred(last), nil
	})
	if err != nil {
		t.Fatalf("slurmtest: %v (last %+v, error %v)\n%s", err, last, lastErr, c.Dump(""))
	}
	return last
}

func (c *Cluster) node(name string) (slurm.Node, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Client().Node(ctx, name)
}

// Dump returns sinfo, squeue, the job (when id is not empty), the nodes and
// the tails of every daemon log, for failure messages.
func (c *Cluster) Dump(id string) string {
	var b strings.Builder
	add := func(name string, args ...string) {
		out, err := c.run(context.Background(), name, args...)
		fmt.Fprintf(&b, "$ %s %s\n%s", name, strings.Join(args, " "), out)
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
		}
	}
	add("sinfo", "-N", "-l")
	add("sinfo", "-R")
	add("squeue", "-l")
	if id != "" {
		add("scontrol", "show", "job", id)
		if out := c.JobOutput(id); out != "" {
			fmt.Fprintf(&b, "--- job %s output\n%s\n", id, out)
		}
	}
	b.WriteString(c.logTails(30))
	return b.String()
}

// logTails returns the last n lines of each daemon log under Dir/log.
func (c *Cluster) logTails(n int) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(c.Dir, "log", "*"))
	for _, f := range files {
		// A daemon's .out repeats its .log (run in the foreground it writes
		// both); the .out alone matters when the daemon died before opening the log.
		if strings.HasSuffix(f, ".out") {
			if fi, err := os.Stat(strings.TrimSuffix(f, ".out") + ".log"); err == nil && fi.Size() > 0 {
				continue
			}
		}
		data, err := os.ReadFile(f)
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", f, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}
