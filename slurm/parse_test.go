package slurm

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The files under testdata/scontrol/22.05 are verbatim output of Slurm
// 22.05.8 on a private five-node cluster (cn1..cn5); see its README.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "scontrol", "22.05", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func nodeByName(t *testing.T, file, name string) Node {
	t.Helper()
	nodes, err := ParseNodes(readTestdata(t, file))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("%s: no node %s in %d nodes", file, name, len(nodes))
	return Node{}
}

func TestParseNodesReal(t *testing.T) {
	ts := func(s string) time.Time {
		v, err := time.ParseInLocation(reasonTimeLayout, s, time.Local)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		file, node string
		state      string
		flags      []string
		reason     string
		user       string
		when       time.Time
	}{
		{"nodes-1.txt", "cn1", "IDLE", nil, "", "", time.Time{}},
		{"nodes-1.txt", "cn2", "IDLE", []string{"DRAIN"}, "vigil: GEMMBelowThreshold gpu3 412 TFLOPS < 600", "root", ts("2026-11-29T15:10:16")},
		// an admin reason with '=' signs, a fake State= and a fake [x@y]
		{"nodes-1.txt", "cn3", "IDLE", []string{"DRAIN"}, "bad dimm slot=3 State=IDLE ecc=12 [x@y]", "root", ts("2026-11-29T15:10:17")},
		{"nodes-1.txt", "cn4", "IDLE", []string{"MAINTENANCE", "RESERVED"}, "", "", time.Time{}},
		{"nodes-1.txt", "cn5", "DOWN", nil, "dead psu", "root", ts("2026-11-29T15:10:17")},
		{"nodes-2.txt", "cn1", "ALLOCATED", []string{"DRAIN"}, "vigil: XIDError gpu0 xid=79", "root", ts("2026-11-29T15:10:30")},
		{"nodes-2.txt", "cn4", "IDLE", []string{"DRAIN", "MAINTENANCE", "RESERVED"}, "rack 12 firmware update", "root", ts("2026-11-29T15:10:28")},
		{"nodes-3.txt", "cn1", "ALLOCATED", []string{"DRAIN", "REBOOT_REQUESTED"}, "kernel update", "root", ts("2026-11-29T15:10:34")},
		{"nodes-4.txt", "cn3", "IDLE", []string{"DRAIN", "NOT_RESPONDING"}, "bad dimm slot=3 State=IDLE ecc=12 [x@y]", "root", ts("2026-11-29T15:10:17")},
		{"nodes-4.txt", "cn5", "IDLE", []string{"POWERING_DOWN"}, "", "", time.Time{}},
		{"nodes-6.txt", "cn3", "DOWN", []string{"DRAIN", "NOT_RESPONDING"}, "bad dimm slot=3 State=IDLE ecc=12 [x@y]", "root", ts("2026-11-29T15:10:17")},
		{"nodes-6.txt", "cn5", "IDLE", []string{"POWERED_DOWN"}, "", "", time.Time{}},
		{"nodes-7.txt", "cn1", "IDLE", []string{"COMPLETING", "DRAIN", "REBOOT_REQUESTED"}, "kernel update", "root", ts("2026-11-29T15:10:34")},
		{"nodes-7.txt", "cn5", "IDLE", []string{"NOT_RESPONDING", "POWERING_UP"}, "", "", time.Time{}},
		{"nodes-8.txt", "cn1", "DOWN", []string{"DRAIN", "REBOOT_ISSUED", "PLANNED"}, "kernel update : reboot issued", "root", ts("2026-11-29T15:11:17")},
		{"nodes-8.txt", "cn2", "IDLE", []string{"NOT_RESPONDING"}, "", "", time.Time{}},
		{"nodes-10.txt", "cn4", "IDLE", []string{"DRAIN", "MAINTENANCE", "RESERVED"}, "rack 12 firmware update", "root", ts("2026-11-29T15:10:28")},
		{"nodes-10.txt", "cn5", "DOWN", []string{"POWERED_DOWN", "NOT_RESPONDING"}, "ResumeTimeout reached", "root", ts("2026-11-29T15:11:39")},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.node, func(t *testing.T) {
			n := nodeByName(t, tt.file, tt.node)
			if n.State != tt.state || !reflect.DeepEqual(n.Flags, tt.flags) {
				t.Errorf("state %q %q, want %q %q", n.State, n.Flags, tt.state, tt.flags)
			}
			if n.Reason != tt.reason || n.ReasonUser != tt.user || !n.ReasonTime.Equal(tt.when) {
				t.Errorf("reason %q by %q at %v, want %q by %q at %v", n.Reason, n.ReasonUser, n.ReasonTime, tt.reason, tt.user, tt.when)
			}
		})
	}
}

func TestParseNodeFields(t *testing.T) {
	n := nodeByName(t, "nodes-10.txt", "cn4")
	want := map[string]string{
		"NodeName":   "cn4",
		"OS":         "Linux 6.18.44-fc-v782 #1 SMP PREEMPT_DYNAMIC @0",
		"RealMemory": "2000",
		"Gres":       "gpu:4",
		"CfgTRES":    "cpu=2,mem=2000M,billing=2",
		"AllocTRES":  "",
		"Comment":    "rack 12 b=2",
		"Extra":      "extra stuff",
		"Partitions": "debug",
	}
	for k, v := range want {
		if got, ok := n.Fields[k]; !ok || got != v {
			t.Errorf("%s = %q (present %v), want %q", k, got, ok, v)
		}
	}
	if n.Gres != "gpu:4" {
		t.Errorf("Gres %q", n.Gres)
	}
	if n5 := nodeByName(t, "nodes-3.txt", "cn1"); n5.Fields["NextState"] != "RESUME" || n5.State != "ALLOCATED" {
		t.Errorf("NextState %q State %q: a NextState= must not be read as State=", n5.Fields["NextState"], n5.State)
	}
	if n := nodeByName(t, "nodes-1.txt", "cn5"); n.Gres != "" {
		t.Errorf("(null) gres read as %q", n.Gres)
	}
}

func TestParseNodeSingle(t *testing.T) {
	n, err := ParseNode(readTestdata(t, "node-idle.txt"), "cn1")
	if err != nil || n.Name != "cn1" || n.State != "IDLE" || n.Drained() || n.Reason != "" {
		t.Fatalf("got %+v, %v", n, err)
	}
	// "Node nosuch not found" is what 22.05 prints (on stdout) for an unknown node.
	if _, err := ParseNode(readTestdata(t, "node-nosuch.stdout"), "nosuch"); !errors.Is(err, ErrNoSuchNode) {
		t.Fatalf("want ErrNoSuchNode, got %v", err)
	}
	if _, err := ParseNode(readTestdata(t, "nodes-1.txt"), "cn9"); !errors.Is(err, ErrNoSuchNode) {
		t.Fatalf("want ErrNoSuchNode, got %v", err)
	}
}

// States as older scontrol versions print them ("DOWN*"), and flag
// combinations not captured on 22.05, spliced into a real line.
func TestParseNodeStateForms(t *testing.T) {
	real := string(readTestdata(t, "node-idle.txt"))
	tests := []struct {
		state, base string
		flags       []string
		drained     bool
		foreign     string
	}{
		{"IDLE+DRAIN", "IDLE", []string{"DRAIN"}, true, ""},
		{"DOWN*+DRAIN", "DOWN", []string{"DRAIN", "NOT_RESPONDING"}, true, "DOWN"},
		{"IDLE*", "IDLE", []string{"NOT_RESPONDING"}, false, ""},
		{"MIXED+DRAIN+MAINTENANCE", "MIXED", []string{"DRAIN", "MAINTENANCE"}, true, "MAINTENANCE"},
		{"IDLE+POWERED_DOWN", "IDLE", []string{"POWERED_DOWN"}, false, "POWERED_DOWN"},
		{"ALLOCATED+REBOOT_REQUESTED", "ALLOCATED", []string{"REBOOT_REQUESTED"}, false, "REBOOT_REQUESTED"},
		{"DRAINED", "DRAINED", nil, true, ""},
		{"DRAINING", "DRAINING", nil, true, ""},
		{"MIXED+FAIL", "MIXED", []string{"FAIL"}, false, "FAIL"},
		{"idle+drain", "IDLE", []string{"DRAIN"}, true, ""},
		{"", "", nil, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.state, func(t *testing.T) {
			line := strings.Replace(real, "State=IDLE ", "State="+tt.state+" ", 1)
			n, err := ParseNode([]byte(line), "cn1")
			if err != nil {
				t.Fatal(err)
			}
			if n.State != tt.base || !reflect.DeepEqual(n.Flags, tt.flags) {
				t.Errorf("got %q %q, want %q %q", n.State, n.Flags, tt.base, tt.flags)
			}
			if n.Drained() != tt.drained || n.ForeignState() != tt.foreign {
				t.Errorf("Drained %v ForeignState %q, want %v %q", n.Drained(), n.ForeignState(), tt.drained, tt.foreign)
			}
		})
	}
}

func TestParseJobsReal(t *testing.T) {
	jobs, err := ParseJobs(readTestdata(t, "jobs-5.txt"))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]JobInfo{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	tests := []struct {
		id, name, state, reason, comment, nodes string
		restarts, exit                          int
	}{
		// the comment holds a fake JobState=FAILED and a double space
		{"1", "train run", "PENDING", "BeginTime", "needs checking a=b  c JobState=FAILED", "", 1, 0},
		{"2", "job.sh", "PENDING", "JobHeldUser", "held one", "", 0, 0},
		{"3", "job.sh", "PENDING", "job_requeued_in_held_state", "vigil: hang suspected on cn1 (io flat 600s)", "", 1, 0},
		{"5", "fail.sh", "FAILED", "NonZeroExitCode", "", "cn2", 0, 3},
		{"6", "wrap", "COMPLETED", "None", "", "cn2", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			j, ok := byID[tt.id]
			if !ok {
				t.Fatalf("job %s missing", tt.id)
			}
			if j.Name != tt.name || j.State != tt.state || j.Reason != tt.reason || j.Comment != tt.comment ||
				j.NodeList != tt.nodes || j.Restarts != tt.restarts || j.ExitCode != tt.exit {
				t.Errorf("got name %q state %q reason %q comment %q nodes %q restarts %d exit %d, want %+v",
					j.Name, j.State, j.Reason, j.Comment, j.NodeList, j.Restarts, j.ExitCode, tt)
			}
			if j.User != "root" || j.UID != 0 || j.UserID != "root(0)" || j.Partition != "debug" {
				t.Errorf("user %q uid %d userid %q partition %q", j.User, j.UID, j.UserID, j.Partition)
			}
		})
	}
}

func TestParseJobRunning(t *testing.T) {
	j, err := ParseJob(readTestdata(t, "jobs-1.txt"), "1")
	if err != nil {
		t.Fatal(err)
	}
	if j.State != "RUNNING" || j.NodeList != "cn1" || j.BatchHost != "cn1" || j.Fields["TresPerJob"] != "gres:gpu:2" ||
		j.Fields["StdOut"] != "/tmp/scap/out-1.txt" || j.Fields["AllocNode:Sid"] != "localhost:4439" {
		t.Errorf("got %+v", j)
	}
	j, err = ParseJob(readTestdata(t, "job-comment-updated.txt"), "3")
	if err != nil || j.Comment != "vigil: hang suspected on cn1 (io flat 600s)" {
		t.Errorf("got %q, %v", j.Comment, err)
	}
	// an array job prints one record per pending range / task
	j, err = ParseJob(readTestdata(t, "jobs-1.txt"), "4")
	if err != nil || j.Fields["ArrayTaskId"] != "1-3" || j.Fields["ArrayJobId"] != "4" {
		t.Errorf("array: %+v, %v", j.Fields, err)
	}
	if _, err := ParseJob(nil, "4"); !errors.Is(err, ErrNoSuchJob) {
		t.Errorf("empty output: want ErrNoSuchJob, got %v", err)
	}
}

// Text in a field printed before JobState cannot replace the real state:
// the last occurrence of a key wins.
func TestParseJobSpoofedName(t *testing.T) {
	line := strings.Replace(string(readTestdata(t, "job-comment-updated.txt")),
		"JobName=job.sh ", "JobName=x JobState=COMPLETED UserId=evil(7) ", 1)
	j, err := ParseJob([]byte(line), "3")
	if err != nil {
		t.Fatal(err)
	}
	if j.State != "RUNNING" || j.UserID != "root(0)" || !strings.HasPrefix(j.Name, "x") {
		t.Errorf("state %q user %q name %q", j.State, j.UserID, j.Name)
	}
}

func TestParseConfigReal(t *testing.T) {
	cfg := ParseConfig(readTestdata(t, "config.txt"))
	want := map[string]string{
		"MailProg":       "/bin/true",
		"SLURM_VERSION":  "22.05.8",
		"SlurmdTimeout":  "10 sec",
		"ProctrackType":  "proctrack/cgroup",
		"Prolog":         "/tmp/scap/dumpenv.sh",
		"PrologFlags":    "Alloc",
		"CgroupPlugin":   "cgroup/v1",
		"SuspendProgram": "/bin/true",
	}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("%s = %q, want %q", k, cfg[k], v)
		}
	}
	if _, ok := cfg["Configuration data as of 2026-11-29T15"]; ok {
		t.Error("header line parsed as a key")
	}
}

func TestParseGresGPUs(t *testing.T) {
	tests := []struct {
		gres string
		want int
		err  bool
	}{
		{"", 0, false},
		{"(null)", 0, false},
		{"gpu:4", 4, false},
		{"gpu:a100:8", 8, false},
		{"gpu:a100:8(S:0-1)", 8, false},
		{"gpu:a100:2(S:0),gpu:v100:2(S:1)", 4, false},
		{"gpu:a100:4(S:0,1),mps:400", 4, false},
		{"gpu", 1, false},
		{"gpu:a100", 1, false},
		{"shard:8", 0, false},
		{"gpu:a100:x", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.gres, func(t *testing.T) {
			got, err := ParseGresGPUs(tt.gres)
			if got != tt.want || (err != nil) != tt.err {
				t.Errorf("got %d, %v; want %d, err %v", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestParseLineFreeText(t *testing.T) {
	tests := []struct {
		name, line string
		want       map[string]string
	}{
		{"reason last", "NodeName=a State=IDLE Reason=x y=z State=DOWN [u@t]",
			map[string]string{"NodeName": "a", "State": "IDLE", "Reason": "x y=z State=DOWN [u@t]"}},
		{"reason then comment", "NodeName=a Reason=r s Comment=c d",
			map[string]string{"NodeName": "a", "Reason": "r s", "Comment": "c d"}},
		{"unknown keys and bare words", "NodeName=a NewKey=1 2 Other=x",
			map[string]string{"NodeName": "a", "NewKey": "1 2", "Other": "x"}},
		{"leading junk", "junk NodeName=a",
			map[string]string{"NodeName": "a"}},
		{"empty value", "NodeName= State=IDLE",
			map[string]string{"NodeName": "", "State": "IDLE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseLine(tt.line, nodeOrder, nodeFreeText)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
