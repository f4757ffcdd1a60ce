package slurm

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/internal/textutil"
)

// The one-line form of `scontrol show node|job -o` is a sequence of
// Key=Value pairs separated by spaces, but several values contain spaces
// and '=' themselves (OS, Reason, Comment, JobName, Command, WorkDir, StdOut
// ...). Reasons, comments, job names and paths are set by admins and users,
// so the text of one field may look like other fields ("Reason=bad dimm
// State=IDLE").
//
// The parser therefore knows the order in which Slurm prints its keys (taken
// from real 22.05 output, see testdata/scontrol/22.05). A value of a
// free-text field runs until the known key that Slurm prints next after it:
// among the tokens that follow, the one whose key is known and comes after
// the field in print order, with the lowest print position, first occurrence
// on ties (found with a per-key index, so a line parses in O(n log n)). Text inside a free-text field can thus never produce a field that
// Slurm prints before it (a job comment cannot fake JobState), and fake
// fields inside an earlier field (a job name "x JobState=COMPLETED") are
// overwritten by the real ones that follow, since the last occurrence of a
// key wins. Outside free-text fields any Key=Value token starts a new field
// and a token without '=' continues the previous value, which keeps
// unknown keys of other Slurm versions readable.

// nodeKeyOrder is the print order of `scontrol show node -o` in Slurm 22.05
// (slurm_sprint_node_table), including keys printed only in some states.
var nodeKeyOrder = []string{
	"NodeName", "Arch", "CoresPerSocket", "CPUAlloc", "CPUEfctv", "CPUTot", "CPULoad",
	"AvailableFeatures", "ActiveFeatures", "Gres", "GresDrain", "GresUsed", "NodeAddr",
	"NodeHostName", "Port", "Version", "OS", "RealMemory", "AllocMem", "FreeMem",
	"Sockets", "Boards", "CoreSpecCount", "CPUSpecList", "MemSpecLimit", "State",
	"ThreadsPerCore", "TmpDisk", "Weight", "Owner", "MCS_label", "NextState", "Partitions",
	"BootTime", "SlurmdStartTime", "LastBusyTime", "ResumeAfterTime", "CfgTRES", "AllocTRES",
	"CapWatts", "CurrentWatts", "AveWatts", "ExtSensorsJoules", "ExtSensorsWatts",
	"ExtSensorsTemp", "Reason", "Comment", "Extra",
}

// nodeFreeText are node fields whose values may hold spaces and '='.
var nodeFreeText = map[string]bool{
	"OS": true, "Reason": true, "Comment": true, "Extra": true,
	"AvailableFeatures": true, "ActiveFeatures": true,
}

// jobKeyOrder is the print order of `scontrol show job -o` in Slurm 22.05
// (slurm_sprint_job_info).
var jobKeyOrder = []string{
	"JobId", "ArrayJobId", "ArrayTaskId", "ArrayTaskThrottle", "HetJobId", "HetJobOffset",
	"HetJobIdSet", "JobName", "UserId", "GroupId", "MCS_label", "Priority", "Nice",
	"Account", "QOS", "WCKey", "JobState", "Reason", "Dependency", "Requeue", "Restarts",
	"BatchFlag", "Reboot", "ExitCode", "DerivedExitCode", "RunTime", "TimeLimit", "TimeMin",
	"SubmitTime", "EligibleTime", "AccrueTime", "StartTime", "EndTime", "Deadline",
	"PreemptEligibleTime", "PreemptTime", "SuspendTime", "SecsPreSuspend", "LastSchedEval",
	"Scheduler", "Partition", "AllocNode:Sid", "ReqNodeList", "ExcNodeList", "NodeList",
	"SchedNodeList", "BatchHost", "NumNodes", "NumCPUs", "NumTasks", "CPUs/Task",
	"ReqB:S:C:T", "TRES", "Socks/Node", "NtasksPerN:B:S:C", "CoreSpec", "MinCPUsNode",
	"MinMemoryNode", "MinMemoryCPU", "MinTmpDiskNode", "Features", "DelayBoot",
	"OverSubscribe", "Contiguous", "Licenses", "Network", "Command", "WorkDir",
	"AdminComment", "SystemComment", "Comment", "StdErr", "StdIn", "StdOut", "Power",
	"TresPerJob", "TresPerNode", "MailUser", "MailType",
}

// jobFreeText are job fields whose values may hold spaces and '='.
var jobFreeText = map[string]bool{
	"JobName": true, "Command": true, "WorkDir": true, "AdminComment": true,
	"SystemComment": true, "Comment": true, "StdErr": true, "StdIn": true, "StdOut": true,
	"Features": true, "Dependency": true,
}

type keyOrder map[string]int

func makeOrder(keys []string) keyOrder {
	o := make(keyOrder, len(keys))
	for i, k := range keys {
		o[k] = i
	}
	return o
}

var (
	nodeOrder = makeOrder(nodeKeyOrder)
	jobOrder  = makeOrder(jobKeyOrder)
)

// token is a run of non-space bytes in a line: line[start:end].
type token struct {
	start, end int
	key        string // the part before the first '=' when it is a valid key
}

func isKey(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case i > 0 && (r >= '0' && r <= '9' || r == '_' || r == ':' || r == '/'):
		default:
			return false
		}
	}
	return true
}

func tokenize(line string) []token {
	var toks []token
	for i := 0; i < len(line); {
		if line[i] == ' ' {
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] != ' ' {
			j++
		}
		t := token{start: i, end: j}
		if eq := strings.IndexByte(line[i:j], '='); eq > 0 && isKey(line[i:i+eq]) {
			t.key = line[i : i+eq]
		}
		toks = append(toks, t)
		i = j
	}
	return toks
}

// parseLine splits one line of `scontrol show ... -o` into its fields. The
// last occurrence of a key wins.
func parseLine(line string, order keyOrder, free map[string]bool) map[string]string {
	fields := make(map[string]string)
	toks := tokenize(line)
	// at[p] lists, in line order, the tokens whose key has print position p
	var at [][]int
	for j, t := range toks {
		if p, ok := order[t.key]; ok {
			if at == nil {
				at = make([][]int, len(order))
			}
			at[p] = append(at[p], j)
		}
	}
	for i := 0; i < len(toks); {
		t := toks[i]
		if t.key == "" { // text before the first key: skip it
			i++
			continue
		}
		valStart := t.start + len(t.key) + 1
		end := i + 1 // first token not in this field
		if pos, known := order[t.key]; known && free[t.key] {
			end = len(toks)
			for p := pos + 1; p < len(at); p++ {
				idx := at[p]
				k := sort.SearchInts(idx, i+1)
				if k < len(idx) {
					end = idx[k]
					break
				}
			}
		} else {
			for end < len(toks) && toks[end].key == "" {
				end++
			}
		}
		valEnd := t.end
		if end-1 > i {
			valEnd = toks[end-1].end
		}
		if valEnd < valStart {
			valEnd = valStart
		}
		fields[t.key] = line[valStart:valEnd]
		i = end
	}
	return fields
}

// reasonSuffix is the " [user@time]" Slurm appends to a node's reason.
var reasonSuffix = regexp.MustCompile(`\s*\[([^\[\]@\s]*)@([^\[\]\s]*)\]$`)

// reasonTimeLayout is how Slurm prints the time of a reason.
const reasonTimeLayout = "2006-01-02T15:04:05"

// ParseNodes parses the output of `scontrol show node -o [NAME]`, one node
// per line. Lines without a NodeName are skipped. It never panics.
func ParseNodes(out []byte) ([]Node, error) {
	var nodes []Node
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := parseLine(line, nodeOrder, nodeFreeText)
		name, ok := f["NodeName"]
		if !ok || name == "" {
			continue
		}
		nodes = append(nodes, nodeFromFields(f))
	}
	if err := sc.Err(); err != nil {
		return nodes, fmt.Errorf("slurm: reading scontrol node output: %w", err)
	}
	return nodes, nil
}

// ParseNode parses the output of `scontrol show node -o NAME` and returns
// the node named NAME (or the only node when name is empty).
func ParseNode(out []byte, name string) (Node, error) {
	nodes, err := ParseNodes(out)
	if err != nil {
		return Node{}, err
	}
	for _, n := range nodes {
		if name == "" || n.Name == name {
			return n, nil
		}
	}
	if name == "" {
		return Node{}, fmt.Errorf("slurm: no node in scontrol output %q: %w", textutil.Cut(string(out), 200, "..."), ErrNoSuchNode)
	}
	return Node{}, fmt.Errorf("slurm: node %q not in scontrol output %q: %w", name, textutil.Cut(string(out), 200, "..."), ErrNoSuchNode)
}

func nodeFromFields(f map[string]string) Node {
	n := Node{Name: f["NodeName"], Fields: f, Gres: f["Gres"]}
	if n.Gres == "(null)" {
		n.Gres = ""
	}
	n.State, n.Flags = splitState(f["State"])
	reason := f["Reason"]
	if m := reasonSuffix.FindStringSubmatchIndex(reason); m != nil {
		n.ReasonUser = reason[m[2]:m[3]]
		ts := reason[m[4]:m[5]]
		if t, err := time.ParseInLocation(reasonTimeLayout, ts, time.Local); err == nil {
			n.ReasonTime = t
		}
		reason = reason[:m[0]]
	}
	if reason == "(null)" {
		reason = ""
	}
	n.Reason = strings.TrimSpace(reason)
	return n
}

// splitState splits "DOWN*+DRAIN" into the base state and its flags. A
// trailing '*' (not responding, as older scontrol prints it) becomes the
// NOT_RESPONDING flag.
func splitState(s string) (string, []string) {
	if s == "" {
		return "", nil
	}
	parts := strings.Split(s, "+")
	var flags []string
	notResp := false
	for i, p := range parts {
		for strings.HasSuffix(p, "*") {
			p = strings.TrimSuffix(p, "*")
			notResp = true
		}
		parts[i] = strings.ToUpper(p)
	}
	base := parts[0]
	for _, p := range parts[1:] {
		if p != "" {
			flags = append(flags, p)
		}
	}
	if notResp && !contains(flags, "NOT_RESPONDING") {
		flags = append(flags, "NOT_RESPONDING")
	}
	return base, flags
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ParseJobs parses the output of `scontrol show job -o [ID]`, one job (or
// array task record) per line. Lines without a JobId are skipped. It never
// panics.
func ParseJobs(out []byte) ([]JobInfo, error) {
	var jobs []JobInfo
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := parseLine(line, jobOrder, jobFreeText)
		if id, ok := f["JobId"]; !ok || id == "" {
			continue
		}
		jobs = append(jobs, jobFromFields(f))
	}
	if err := sc.Err(); err != nil {
		return jobs, fmt.Errorf("slurm: reading scontrol job output: %w", err)
	}
	return jobs, nil
}

// ParseJob parses the output of `scontrol show job -o ID` and returns the
// record whose JobId is id, else the first record (an array job prints one
// record per task or pending range).
func ParseJob(out []byte, id string) (JobInfo, error) {
	jobs, err := ParseJobs(out)
	if err != nil {
		return JobInfo{}, err
	}
	if len(jobs) == 0 {
		return JobInfo{}, fmt.Errorf("slurm: job %q not in scontrol output %q: %w", id, textutil.Cut(string(out), 200, "..."), ErrNoSuchJob)
	}
	for _, j := range jobs {
		if j.ID == id {
			return j, nil
		}
	}
	return jobs[0], nil
}

func jobFromFields(f map[string]string) JobInfo {
	j := JobInfo{
		ID:        f["JobId"],
		Name:      f["JobName"],
		State:     f["JobState"],
		Reason:    f["Reason"],
		Comment:   f["Comment"],
		UserID:    f["UserId"],
		NodeList:  f["NodeList"],
		Partition: f["Partition"],
		BatchHost: f["BatchHost"],
		Fields:    f,
	}
	// AdminComment may be the user's WorkDir text (admincomment.go): it is
	// read from JSON only.
	delete(f, "AdminComment")
	if j.NodeList == "(null)" {
		j.NodeList = ""
	}
	if j.Comment == "(null)" {
		j.Comment = ""
	}
	// UserId=root(0)
	if u := j.UserID; strings.HasSuffix(u, ")") {
		if k := strings.LastIndexByte(u, '('); k >= 0 {
			j.User = u[:k]
			if uid, err := strconv.Atoi(u[k+1 : len(u)-1]); err == nil {
				j.UID = uid
			}
		}
	}
	if r, err := strconv.Atoi(f["Restarts"]); err == nil {
		j.Restarts = r
	}
	// ExitCode=3:0 (exit status:signal)
	if ec, sig, ok := strings.Cut(f["ExitCode"], ":"); ok {
		j.ExitCode, _ = strconv.Atoi(ec)
		j.ExitSignal, _ = strconv.Atoi(sig)
	}
	return j
}

// ParseConfig parses the output of `scontrol show config`: every
// "Key = Value" line. The first occurrence of a key wins, so slurm.conf
// settings take precedence over same-named keys of later sections
// (cgroup.conf, mpi.conf ...). "(null)" values are kept as printed.
func ParseConfig(out []byte) map[string]string {
	cfg := make(map[string]string)
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if k == "" || strings.ContainsAny(k, " \t") {
			continue
		}
		if _, dup := cfg[k]; !dup {
			cfg[k] = strings.TrimSpace(v)
		}
	}
	return cfg
}

// ParseGresGPUs counts the GPUs in a node's Gres value ("gpu:4",
// "gpu:a100:4", "gpu:a100:2(S:0),gpu:v100:2(S:1)", "(null)").
func ParseGresGPUs(gres string) (int, error) {
	total := 0
	if gres == "" || gres == "(null)" {
		return 0, nil
	}
	for _, item := range splitTopLevel(gres) {
		if p := strings.IndexByte(item, '('); p >= 0 {
			item = item[:p]
		}
		parts := strings.Split(item, ":")
		if parts[0] != "gpu" {
			continue
		}
		if len(parts) == 1 {
			total++ // "gpu" alone means one
			continue
		}
		n, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil && len(parts) == 2 {
			// "gpu:a100" means one of type a100
			total++
			continue
		}
		if err != nil || n < 0 {
			return 0, fmt.Errorf("slurm: malformed gres count in %q", gres)
		}
		total += n
	}
	return total, nil
}

// splitTopLevel splits on commas that are not inside parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
