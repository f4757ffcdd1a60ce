package joblog

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A job's output file holds the lines of every rank and is read on one
// node; a line belongs to the host that printed it, and only the line's
// own text (with the job's layout) says which. Attribute is that rule, one
// pure function for the live watcher and for replay. A line it cannot
// attribute is job-level evidence: it may support a cause, never make a
// culprit.

// Layout is where a job step's tasks and ranks run: what maps a line's
// task id or rank to a host.
type Layout struct {
	// Nodes are the job's nodes (short names, as Slurm names them).
	Nodes []string `json:"nodes"`
	// Tasks maps an srun task id (srun --label's "N: ") to its node.
	Tasks map[int]string `json:"tasks,omitempty"`
	// Ranks maps a global rank ("[rankN]:") to its node: the job's rank
	// map, read by each node's watcher from its ranks' environment and
	// gathered by the coordinator. When set, a rank is placed through it
	// alone; when empty, a rank is taken for the task of the same number
	// (one task per rank, srun's usual launch).
	Ranks map[int]string `json:"ranks,omitempty"`
	// Addrs maps a node to its address (Slurm's NodeAddr, or the
	// watcher's --node-addrs), so that a line naming a peer by address
	// (gloo's "Connection closed by peer [ADDR]") names a node.
	Addrs map[string]string `json:"addrs,omitempty"`
}

// How a line was attributed.
const (
	ByNCCLPrefix = "nccl-prefix" // NCCL's "host:pid:tid [dev]" anywhere in the line
	BySrunError  = "srun-error"  // "srun: error: host: task N: ..."
	ByTorchrun   = "torchrun"    // torchrun's failure summary, "host : gpu03"
	ByRank       = "rank"        // PyTorch's "[rankN]:" through the layout
	ByTask       = "srun-label"  // srun --label's "N: " through the layout
	ByMPITag     = "mpi-tag"     // Open MPI --tag-output's "[JOB,RANK]<stderr>:" through the layout's ranks
	ByHostPrefix = "host-prefix" // pdsh's (DeepSpeed's launcher) "host: " before the line
	ByRay        = "ray"         // Ray's "(pid=123, ip=ADDR)" through the layout's addresses
	ByMPIRun     = "mpirun"      // mpirun's "... rank N with PID P on node HOST exited on ..."
	ByMPIHost    = "mpi-host"    // Open MPI's "[host:pid] " before the line
)

// Source is the host a line names as its own, and how; Host is "" for a
// line that names none (job-level evidence).
type Source struct {
	Host string `json:"host,omitempty"`
	By   string `json:"by,omitempty"`
}

var (
	// NCCL's prefix, wherever it stands (after a timestamp, srun's label,
	// "[rankN]:"), followed by a source location or NCCL itself:
	// "gpu02:984:1357 [4] transport/net_ib.cc:1295 NCCL WARN ..." (older
	// NCCL releases built them from .cu files: "net_ib.cu:80").
	reNCCLHost = regexp.MustCompile(`(?:^|[\s\]:])([A-Za-z][A-Za-z0-9._-]*):\d+:\d+ \[\d+\] (?:[\w./-]+\.(?:cc|cu|cpp|c|h):\d+ )?NCCL `)
	reSrunErr  = regexp.MustCompile(`srun: error: ([A-Za-z][A-Za-z0-9._-]*): tasks? [\d,-]+: `)
	reTRHost   = regexp.MustCompile(`^\s*host\s*:\s*([A-Za-z][A-Za-z0-9._-]*)\s*$`)
	// "[rankN]:" after srun's label, or after torchrun --tee's
	// "[defaultL]:" (group 1: its local rank L, a torchrun launch).
	reRankTag = regexp.MustCompile(`^\s*(?:\d+: )?(\[default\d+\]:)?\[[Rr]ank\s*(\d+)\]:`)
	// PyTorch's own tag of the rank that logs ("[E ProcessGroupNCCL.cpp:916]
	// [Rank 1] NCCL watchdog ...", "[PG 0 Rank 2] Timeout at NCCL work",
	// "[PG 0 (default_pg) Rank 2]", "[PG ID 0 PG GUID 0(default_pg) Rank 8]").
	rePGRank  = regexp.MustCompile(`\[(?:PG (?:ID )?\d+(?: PG GUID \d+)? ?(?:\([\w.-]*\) )?)?Rank (\d+)\]`)
	reTaskTag = regexp.MustCompile(`^\s*(\d+): `)
	// Open MPI's mpirun --tag-output: "[1,12]<stderr>:" (job, rank).
	reMPITag = regexp.MustCompile(`^\[\d+,(\d+)\]<(?:stdout|stderr|stddiag)>:`)
	// pdsh's prefix (DeepSpeed's multi-node launcher): "gpu01: ".
	reHostPrefix = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9._-]*): `)
	// Ray's prefix of a worker's line: "(pid=123, ip=10.0.0.3)",
	// "(RayTrainWorker pid=123, ip=10.0.0.3)", and of a node's raylet:
	// "(raylet, ip=10.0.0.3)" (python/ray/_private/worker.py,
	// print_worker_logs: prefix_for gives "pid=" but for the raylet and
	// the autoscaler; the autoscaler's lines are the head node's and not
	// about it, so they are not placed).
	reRay = regexp.MustCompile(`^\((?:(?:[A-Za-z_][\w.]* )?pid=\d+|raylet), ip=([0-9A-Fa-f.:]+)\)`)
	// mpirun's word on a signalled rank (PRRTE's help-prun.txt).
	reMPIRun = regexp.MustCompile(`noticed that process rank \d+ with PID \d+ on node ([A-Za-z0-9][A-Za-z0-9._:-]*) exited on`)
	// Open MPI's "[host:pid] " (opal's stacktrace, its errors).
	reMPIHost = regexp.MustCompile(`^\[([A-Za-z][A-Za-z0-9._-]*):\d+\] `)
)

// Attribute returns the host that printed line, from its own text and the
// layout: NCCL's prefix, srun's error and torchrun's failure summary name
// the host; "[rankN]:" and srun --label's task id name it through the
// layout. A host the line names that is not one of the job's nodes (a
// fully qualified name is compared by its first label) attributes
// nothing.
func Attribute(line string, l Layout) Source {
	if len(line) > MaxLine {
		line = line[:MaxLine]
	}
	for _, r := range []struct {
		re *regexp.Regexp
		by string
	}{{reNCCLHost, ByNCCLPrefix}, {reSrunErr, BySrunError}, {reTRHost, ByTorchrun}, {reMPIHost, ByMPIHost},
		{reMPIRun, ByMPIRun}, {reRay, ByRay}} {
		if m := r.re.FindStringSubmatch(line); m != nil {
			if h := l.node(m[1]); h != "" {
				return Source{Host: h, By: r.by}
			}
		}
	}
	if src, ok := l.byRank(line); ok {
		return src
	}
	if m := reHostPrefix.FindStringSubmatch(line); m != nil {
		if h := l.node(m[1]); h != "" {
			return Source{Host: h, By: ByHostPrefix}
		}
	}
	if m := reTaskTag.FindStringSubmatch(line); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && l.Tasks[n] != "" {
			return Source{Host: l.Tasks[n], By: ByTask}
		}
	}
	return Source{}
}

// byRank attributes a line by the rank it carries: Open MPI's
// --tag-output, "[rankN]:" and PyTorch's "[Rank N]" tags. A rank under
// torchrun ("[defaultL]:[rankN]:") or Open MPI is a rank, never a task
// id: only the layout's Ranks place it.
func (l Layout) byRank(line string) (Source, bool) {
	if m := reMPITag.FindStringSubmatch(line); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && l.Ranks[n] != "" {
			return Source{Host: l.Ranks[n], By: ByMPITag}, true
		}
		return Source{}, false
	}
	rank, torchrun := "", false
	if m := reRankTag.FindStringSubmatch(line); m != nil {
		rank, torchrun = m[2], m[1] != ""
	} else if m := rePGRank.FindStringSubmatch(line); m != nil {
		rank = m[1]
	}
	n, err := strconv.Atoi(rank)
	if err != nil {
		return Source{}, false
	}
	h := l.RankHost(n)
	if torchrun {
		h = l.Ranks[n]
	}
	return Source{Host: h, By: ByRank}, h != ""
}

// node is the job's node named name (or name's first label), or the node
// whose address (Addrs) name is; "" for none.
func (l Layout) node(name string) string {
	short, _, _ := strings.Cut(name, ".")
	for _, n := range l.Nodes {
		if n == name || n == short {
			return n
		}
	}
	for n, addr := range l.Addrs {
		if addr == name && slices.Contains(l.Nodes, n) {
			return n
		}
	}
	return ""
}

// Node is the job's node a line names as name: a node's name (or a fully
// qualified one's first label) or its address (Addrs); "" for none.
func (l Layout) Node(name string) string { return l.node(name) }

// RankHost is the node of a global rank: Ranks, else (without Ranks) the
// task of the same number; "" when neither knows it.
func (l Layout) RankHost(rank int) string {
	if h, ok := l.Ranks[rank]; ok {
		return h
	}
	if len(l.Ranks) == 0 {
		return l.Tasks[rank]
	}
	return ""
}

// reCoordinatedTask is a task's name in the XLA/TensorFlow coordination
// service that JAX's distributed runtime runs: "/job:jax_worker/replica:0/task:3",
// whose task id is the process's JAX process id (its rank).
var reCoordinatedTask = regexp.MustCompile(`^/job:[\w-]+/replica:\d+/task:(\d+)$`)

// CoordinatedTask returns the rank a coordination service's task name
// carries, and whether s is one.
func CoordinatedTask(s string) (int, bool) {
	m := reCoordinatedTask.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n >= 1<<20 {
		return 0, false
	}
	return n, true
}
