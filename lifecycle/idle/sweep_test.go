package idle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/lifecycle"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/slurm"
)

// fakeSlurm serves a fixed cluster and records the submissions.
type fakeSlurm struct {
	nodes     []slurm.Node
	jobs      []slurm.QueuedJob
	resv      map[string][]string
	submitted []slurm.BatchJob
	nextID    int
	submitErr map[string]error // by node
	jobsErr   error
}

func (f *fakeSlurm) Nodes(context.Context) ([]slurm.Node, error) { return f.nodes, nil }
func (f *fakeSlurm) OwnJobs(context.Context) ([]slurm.QueuedJob, error) {
	return f.jobs, f.jobsErr
}
func (f *fakeSlurm) ReservationNodes(_ context.Context, name string) ([]string, error) {
	if n, ok := f.resv[name]; ok {
		return n, nil
	}
	return nil, slurm.ErrNoSuchReservation
}
func (f *fakeSlurm) Submit(_ context.Context, j slurm.BatchJob) (string, error) {
	if err := f.submitErr[j.Node]; err != nil {
		return "", err
	}
	f.submitted = append(f.submitted, j)
	f.nextID++
	id := fmt.Sprint(100 + f.nextID)
	f.jobs = append(f.jobs, slurm.QueuedJob{ID: id, State: "PENDING", Name: j.Name})
	return id, nil
}

// sweepConf writes a config with [idle] lines (state_dir in the test's
// directory) and returns the directory and the config's path.
func sweepConf(t *testing.T, idle string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "vigil.toml")
	body := fmt.Sprintf("[prolog]\nslurm_bin_dir = %q\n[idle]\nstate_dir = %q\n%s\n", bin, filepath.Join(dir, "idle"), idle)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, conf
}

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(&bytes.Buffer{})
	return l
}

func sweep(t *testing.T, conf string, fs *fakeSlurm, at time.Time, mut func(*Options)) (Result, string) {
	t.Helper()
	var out bytes.Buffer
	o := Options{ConfigPath: conf, ConfigExplicit: true, Slurm: fs, Exe: "/usr/local/bin/vigil-prolog",
		Now: func() time.Time { return at }, Out: &out, Log: quiet(), Lookup: func(string) (string, bool) { return "", false }}
	if mut != nil {
		mut(&o)
	}
	return Sweep(context.Background(), o), out.String()
}

func TestSweepSubmitsOncePerInterval(t *testing.T) {
	dir, conf := sweepConf(t, "partition = \"vigil\"\nqos = \"scavenger\"\naccount = \"ops\"\ninterval = \"2d\"\ntime_limit = \"1h\"\nbudget = \"50m\"\noutput = \"/var/log/vigil/idle-%N-%j.out\"")
	fs := &fakeSlurm{nodes: []slurm.Node{node("n1", "IDLE"), node("n2", "ALLOCATED"), node("n3", "IDLE")}}
	res, out := sweep(t, conf, fs, now, nil)
	if res.ExitCode != decide.ExitOK || !reflect.DeepEqual(res.Submitted, map[string]string{"n1": "101", "n3": "102"}) {
		t.Fatalf("exit %d, submitted %v\n%s", res.ExitCode, res.Submitted, out)
	}
	want := slurm.BatchJob{Name: "vigil-idle-n1", Node: "n1", Partition: "vigil", QOS: "scavenger", Account: "ops",
		Gres: "gpu:a100:4", TimeLimit: time.Hour, Chdir: "/", Output: "/var/log/vigil/idle-%N-%j.out",
		Command: []string{filepath.Join(dir, "bin", "srun"), "--ntasks=1", "--mpi=none", "/usr/local/bin/vigil-prolog", "validate", "--config", conf}}
	if !reflect.DeepEqual(fs.submitted[0], want) {
		t.Fatalf("job\n%+v\nwant\n%+v", fs.submitted[0], want)
	}
	for _, line := range []string{"partition vigil, qos scavenger, interval 2d, at most 10 per run", "n1    submitted job 101  not validated yet",
		"n2    skip               allocated", "submitted: 2 of 3 nodes"} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}

	// The next sweep: the jobs are pending; later they ran and recorded.
	if res, _ := sweep(t, conf, fs, now.Add(time.Minute), nil); len(res.Submitted) != 0 {
		t.Fatalf("pending jobs submitted again: %v", res.Submitted)
	}
	fs.jobs = nil
	first := res.Submitted
	for _, n := range []string{"n1", "n3"} {
		v := lifecycle.Validation{V: 1, Node: n, Job: first[n], Outcome: "pass", Start: now, End: now.Add(time.Hour)}
		if n == "n3" {
			v.Outcome = lifecycle.OutcomeInterrupted
		}
		if _, err := lifecycle.WriteValidation(filepath.Join(dir, "idle"), v); err != nil {
			t.Fatal(err)
		}
	}
	res, out = sweep(t, conf, fs, now.Add(2*time.Hour), nil)
	if !reflect.DeepEqual(res.Submitted, map[string]string{"n3": "103"}) {
		t.Fatalf("after the records: submitted %v, want n3 alone (n1 validated, n3 interrupted)\n%s", res.Submitted, out)
	}
	fs.jobs = nil
	if res, _ := sweep(t, conf, fs, now.Add(49*time.Hour), nil); !reflect.DeepEqual(res.Submitted, map[string]string{"n1": "104"}) {
		t.Fatalf("past the interval: submitted %v, want n1 (n3's job of 2h counts until its record)", res.Submitted)
	}
}

func TestSweepDryRunChangesNothing(t *testing.T) {
	dir, conf := sweepConf(t, "partition = \"vigil\"")
	fs := &fakeSlurm{nodes: []slurm.Node{node("n1", "IDLE")}}
	res, out := sweep(t, conf, fs, now, func(o *Options) { o.DryRun = true; o.ConfigExplicit = false })
	if res.ExitCode != 0 || len(fs.submitted) != 0 || len(res.Submitted) != 0 {
		t.Fatalf("dry run submitted: %+v", fs.submitted)
	}
	if !strings.Contains(out, "dry run") || !strings.Contains(out, "would run: sbatch '--parsable' '--job-name=vigil-idle-n1'") ||
		!strings.Contains(out, `'\''/usr/local/bin/vigil-prolog'\'' '\''validate'\'''`) || strings.Contains(out, "--config") {
		t.Errorf("output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "idle")); !os.IsNotExist(err) {
		t.Errorf("dry run wrote %s: %v", filepath.Join(dir, "idle"), err)
	}
}

func TestSweepRefuses(t *testing.T) {
	_, unset := sweepConf(t, "")
	_, broken := sweepConf(t, "interval = \"soon\"")
	fs := &fakeSlurm{nodes: []slurm.Node{node("n1", "IDLE")}}
	for name, conf := range map[string]string{"no partition or qos": unset, "invalid config": broken} {
		if res, _ := sweep(t, conf, fs, now, nil); res.ExitCode != decide.ExitConfig || len(fs.submitted) != 0 {
			t.Errorf("%s: exit %d, submitted %d", name, res.ExitCode, len(fs.submitted))
		}
	}
	dir, conf := sweepConf(t, "qos = \"scavenger\"\nreservation = \"maint\"")
	if res, _ := sweep(t, conf, fs, now, nil); res.ExitCode != decide.ExitFail || len(fs.submitted) != 0 {
		t.Errorf("unknown reservation: exit %d", res.ExitCode)
	}
	fs.resv = map[string][]string{"maint": {"n1"}}
	fs.jobsErr = errors.New("squeue: timeout")
	if res, _ := sweep(t, conf, fs, now, nil); res.ExitCode != decide.ExitFail || len(fs.submitted) != 0 {
		t.Errorf("squeue failing: exit %d, submitted %d: without its jobs the sweep cannot tell what is pending", res.ExitCode, len(fs.submitted))
	}
	fs.jobsErr = nil
	unlock, err := lock(filepath.Join(dir, "idle"))
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := sweep(t, conf, fs, now, nil); res.ExitCode != decide.ExitFail || len(fs.submitted) != 0 {
		t.Errorf("locked: exit %d", res.ExitCode)
	}
	unlock()
	if res, _ := sweep(t, conf, fs, now, nil); res.ExitCode != 0 || len(fs.submitted) != 1 || fs.submitted[0].Reservation != "maint" {
		t.Errorf("unlocked: exit %d, %+v", res.ExitCode, fs.submitted)
	}
}

func TestSweepSubmissionFailures(t *testing.T) {
	dir, conf := sweepConf(t, "partition = \"vigil\"")
	fs := &fakeSlurm{nodes: []slurm.Node{node("n1", "IDLE"), node("n2", "IDLE"), node("n3", "IDLE")},
		submitErr: map[string]error{"n1": fmt.Errorf("%w: Requested node configuration is not available", slurm.ErrSubmit)}}
	res, out := sweep(t, conf, fs, now, nil)
	if res.ExitCode != decide.ExitFail || !reflect.DeepEqual(res.Submitted, map[string]string{"n2": "101", "n3": "102"}) ||
		!strings.Contains(out, "submission failed: slurm: submission refused: Requested node") {
		t.Fatalf("exit %d, submitted %v\n%s", res.ExitCode, res.Submitted, out)
	}
	subs, err := readLedger(filepath.Join(dir, "idle"), now, false)
	if err != nil || len(subs) != 2 || subs["n2"].Job != "101" || !subs["n2"].At.Equal(now) {
		t.Fatalf("ledger %+v, %v", subs, err)
	}

	down := &slurm.CommandError{ExitCode: 1, Stderr: "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)", Err: errors.New("exit status 1")}
	fs = &fakeSlurm{nodes: fs.nodes, submitErr: map[string]error{"n1": down}}
	if res, _ := sweep(t, conf, fs, now.Add(30*24*time.Hour), nil); res.ExitCode != decide.ExitFail || len(fs.submitted) != 0 {
		t.Fatalf("controller down: the sweep goes on (%d submitted)", len(fs.submitted))
	}
}

func TestLedger(t *testing.T) {
	dir := t.TempDir()
	subs := map[string]Submission{"n1": {Job: "1", At: now.Add(-time.Hour)}, "n2": {Job: "2", At: now.Add(-9 * 24 * time.Hour)}}
	if err := writeLedger(dir, subs, now, 7*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	got, err := readLedger(dir, now, false)
	if err != nil || len(got) != 1 || got["n1"].Job != "1" {
		t.Fatalf("ledger %+v, %v: want n1 alone (n2's submission is older than the interval)", got, err)
	}
	if err := os.WriteFile(ledgerPath(dir), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := readLedger(dir, now, true); err == nil || len(got) != 0 {
		t.Fatalf("corrupt, dry: %+v %v", got, err)
	}
	if _, err := os.Stat(ledgerPath(dir)); err != nil {
		t.Fatal("a dry run moved the corrupt ledger")
	}
	if got, err := readLedger(dir, now, false); err == nil || got == nil || !strings.Contains(err.Error(), "corrupt-20261201T120000Z") {
		t.Fatalf("corrupt: %+v %v", got, err)
	}
	if _, err := os.Stat(ledgerPath(dir)); !os.IsNotExist(err) {
		t.Fatal("the corrupt ledger is still in place")
	}
}
