package slurm

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The files under testdata/scontrol/24.11 are verbatim output of Slurm
// 24.11.5 (Debian 13) on a private five-node cluster (qmgq1..qmgq5), recorded
// by TestCaptureScontrol; see its README.
func read2411(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "scontrol", "24.11", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseNodes2411(t *testing.T) {
	tests := []struct {
		file, node string
		state      string
		flags      []string
		reason     string
	}{
		{"node-idle.txt", "qmgq1", "IDLE", nil, ""},
		{"nodes-1.txt", "qmgq1", "IDLE", nil, ""},
		{"nodes-1.txt", "qmgq2", "IDLE", []string{"DRAIN"}, "vigil: GEMMBelowThreshold gpu3 412 TFLOPS < 600"},
		// an admin reason with '=' signs, a fake State= and a fake [x@y]
		{"nodes-1.txt", "qmgq3", "IDLE", []string{"DRAIN"}, "bad dimm slot=3 State=IDLE ecc=12 [x@y]"},
		{"nodes-1.txt", "qmgq5", "DOWN", nil, "dead psu"},
		{"nodes-2.txt", "qmgq1", "ALLOCATED", []string{"DRAIN"}, "vigil: XIDError gpu0 xid=79"},
		// Unlike 22.05, 24.11 keeps the reason of a DOWN node that an admin
		// resumed (`scontrol update State=RESUME`): an idle node with a
		// leftover reason, which holds nothing (Node.StaleReason).
		{"nodes-2.txt", "qmgq5", "IDLE", nil, "dead psu"},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.node, func(t *testing.T) {
			n, err := ParseNode(read2411(t, tt.file), tt.node)
			if err != nil {
				t.Fatal(err)
			}
			if n.State != tt.state || !reflect.DeepEqual(n.Flags, tt.flags) || n.Reason != tt.reason {
				t.Errorf("got %q %q %q, want %q %q %q", n.State, n.Flags, n.Reason, tt.state, tt.flags, tt.reason)
			}
			if n.Gres != "gpu:4" || n.Fields["Version"] != "24.11.5" {
				t.Errorf("Gres %q Version %q, want gpu:4 24.11.5", n.Gres, n.Fields["Version"])
			}
			if tt.reason != "" && (n.ReasonUser != "root" || n.ReasonTime.IsZero()) {
				t.Errorf("reason set by %q at %v, want root at a time", n.ReasonUser, n.ReasonTime)
			}
			if n.OwnedByVigil() != strings.HasPrefix(tt.reason, "vigil:") {
				t.Errorf("OwnedByVigil = %v for reason %q", n.OwnedByVigil(), tt.reason)
			}
		})
	}
	if n := nodeOf(t, "nodes-2.txt", "qmgq5"); !n.StaleReason() || notOurs(n) != nil {
		t.Errorf("resumed node with a kept reason: stale %v, notOurs = %v, want a stale reason vigil may replace", n.StaleReason(), notOurs(n))
	}
	if n := nodeOf(t, "nodes-1.txt", "qmgq5"); n.StaleReason() || !errors.Is(notOurs(n), ErrNotOurs) {
		t.Errorf("DOWN node: stale %v, notOurs = %v, want ErrNotOurs", n.StaleReason(), notOurs(n))
	}
	if _, err := ParseNode(read2411(t, "node-nosuch.stdout"), "nosuch"); !errors.Is(err, ErrNoSuchNode) {
		t.Errorf("node-nosuch.stdout: err = %v, want ErrNoSuchNode", err)
	}
}

func nodeOf(t *testing.T, file, name string) Node {
	t.Helper()
	n, err := ParseNode(read2411(t, file), name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestParseJobs2411(t *testing.T) {
	jobs, err := ParseJobs(read2411(t, "jobs-1.txt"))
	if err != nil || len(jobs) != 6 {
		t.Fatalf("ParseJobs: %d jobs, %v; want 6 (an array of 3 prints a line per task)", len(jobs), err)
	}
	j, err := ParseJob(read2411(t, "jobs-1.txt"), "1")
	if err != nil {
		t.Fatal(err)
	}
	want := JobInfo{ID: "1", State: "RUNNING", Reason: "None", Comment: "needs checking a=b  c JobState=FAILED",
		UserID: "root(0)", NodeList: "qmgq1", Name: "train run", User: "root", UID: 0, Partition: "debug", BatchHost: "qmgq1"}
	j.Fields = nil
	if !reflect.DeepEqual(j, want) {
		t.Errorf("job 1:\n got  %+v\n want %+v", j, want)
	}
	if j, err := ParseJob(read2411(t, "jobs-1.txt"), "2"); err != nil || j.State != "PENDING" || j.NodeList != "" {
		t.Errorf("held job 2: %+v, %v", j, err)
	}
	j, err = ParseJob(read2411(t, "job-comment-updated.txt"), "1")
	if err != nil || j.Comment != "vigil: hang suspected on qmgq1 (io flat 600s)" {
		t.Errorf("updated comment: %q, %v", j.Comment, err)
	}
	j, err = ParseJob(read2411(t, "jobs-5.txt"), "7")
	if err != nil || j.State != "FAILED" || j.ExitCode != 7 || j.ExitSignal != 0 || j.Comment != "vigil test" {
		t.Errorf("failed job 7: %+v, %v", j, err)
	}
}

func TestParseConfig2411(t *testing.T) {
	cfg := ParseConfig(read2411(t, "config.txt"))
	for k, v := range map[string]string{
		"SLURM_VERSION": "24.11.5",
		"ProctrackType": "proctrack/cgroup",
		"PrologFlags":   "Alloc",
		"CgroupPlugin":  "cgroup/v1",
		"MailProg":      "/bin/true",
	} {
		if cfg[k] != v {
			t.Errorf("%s = %q, want %q", k, cfg[k], v)
		}
	}
}

// The same scontrol errors as 22.05: the messages vigil recognises.
func TestClientErrors2411(t *testing.T) {
	invalid := func(file string) error {
		return &CommandError{ExitCode: 1, Stderr: string(read2411(t, file)), Err: errors.New("exit status 1")}
	}
	c, _ := newClient(reply{err: invalid("job-nosuch.stderr")})
	if _, err := c.Job(t.Context(), "999999"); !errors.Is(err, ErrNoSuchJob) {
		t.Errorf("show job: %v", err)
	}
	c, _ = newClient(reply{err: invalid("requeue-nosuch.stderr")})
	if err := c.Requeue(t.Context(), "999999", false); !errors.Is(err, ErrNoSuchJob) {
		t.Errorf("requeue: %v", err)
	}
}

// The prolog's, epilog's and a step's environment of job 7 (`sbatch -w
// qmgq5 --gpus=2 --comment="vigil test"`, exit 7). The prolog and epilog ran
// through slurmtest's wrapper, which adds PATH and SLURM_CONF.
func TestJobFromEnviron2411(t *testing.T) {
	base := Job{ID: "7", User: "root", UID: 0, GID: 0, NodeList: "qmgq5", Nodes: []string{"qmgq5"},
		NodeName: "qmgq5", NodeNameSource: "SLURMD_NODENAME", Partition: "debug", GPUs: []int{0, 1},
		Spank: map[string]string{}}
	prolog, epilog, step := base, base, base
	prolog.Context, prolog.Comment = ContextProlog, "vigil test"
	epilog.Context, epilog.Comment = ContextEpilog, "vigil test"
	epilog.ExitKnown, epilog.ExitCode = true, 7
	step.StepID = "0"
	for file, want := range map[string]Job{"env-prolog.txt": prolog, "env-epilog.txt": epilog, "env-step.txt": step} {
		t.Run(file, func(t *testing.T) {
			var env []string
			for _, l := range strings.Split(string(read2411(t, file)), "\n") {
				if l != "" {
					env = append(env, l)
				}
			}
			j, err := JobFromEnviron(env)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*j, want) {
				t.Errorf("got  %+v\nwant %+v", *j, want)
			}
		})
	}
}
