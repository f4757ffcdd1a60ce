package joblog

import (
	"regexp"
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
	// Ranks maps a global rank ("[rankN]:") to its node; when empty, a
	// rank is taken for the task of the same number (one task per rank,
	// srun's usual launch).
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
	// "gpu02:984:1357 [4] transport/net_ib.cc:1295 NCCL WARN ...".
	reNCCLHost = regexp.MustCompile(`(?:^|[\s\]:])([A-Za-z][A-Za-z0-9._-]*):\d+:\d+ \[\d+\] (?:[\w./-]+\.(?:cc|cpp|c|h):\d+ )?NCCL `)
	reSrunErr  = regexp.MustCompile(`srun: error: ([A-Za-z][A-Za-z0-9._-]*): tasks? [\d,-]+: `)
	reTRHost   = regexp.MustCompile(`^\s*host\s*:\s*([A-Za-z][A-Za-z0-9._-]*)\s*$`)
	reRankTag  = regexp.MustCompile(`^\s*(?:\d+: )?\[[Rr]ank\s*(\d+)\]:`)
	// PyTorch's own tag of the rank that logs ("[E ProcessGroupNCCL.cpp:916]
	// [Rank 1] NCCL watchdog ...", "[PG 0 Rank 2] Timeout at NCCL work").
	rePGRank  = regexp.MustCompile(`\[(?:PG \d+ )?Rank (\d+)\]`)
	reTaskTag = regexp.MustCompile(`^\s*(\d+): `)
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
	}{{reNCCLHost, ByNCCLPrefix}, {reSrunErr, BySrunError}, {reTRHost, ByTorchrun}} {
		if m := r.re.FindStringSubmatch(line); m != nil {
			if h := l.node(m[1]); h != "" {
				return Source{Host: h, By: r.by}
			}
		}
	}
	m := reRankTag.FindStringSubmatch(line)
	if m == nil {
		m = rePGRank.FindStringSubmatch(line)
	}
	if m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			if h := l.rankHost(n); h != "" {
				return Source{Host: h, By: ByRank}
			}
		}
	}
	if m := reTaskTag.FindStringSubmatch(line); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && l.Tasks[n] != "" {
			return Source{Host: l.Tasks[n], By: ByTask}
		}
	}
	return Source{}
}

// node is the job's node named name (or name's first label), or "".
func (l Layout) node(name string) string {
	short, _, _ := strings.Cut(name, ".")
	for _, n := range l.Nodes {
		if n == name || n == short {
			return n
		}
	}
	return ""
}

// rankHost is the node of a global rank: Ranks, else the task of the same
// number.
func (l Layout) rankHost(rank int) string {
	if h, ok := l.Ranks[rank]; ok {
		return h
	}
	if len(l.Ranks) == 0 {
		return l.Tasks[rank]
	}
	return ""
}
