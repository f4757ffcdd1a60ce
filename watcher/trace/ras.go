package trace

import (
	"encoding/json"
	"slices"
	"time"
)

// StreamRAS marks NCCL's own view of the job: the answer of NCCL's RAS
// service (NCCL >= 2.24, localhost:28028) to the watcher's status query,
// made while this node's detector says suspect or hung. The record's Line
// is a RAS as compact JSON (package watcher/ncclras parses the answer),
// typed, never text to parse back; RASRecord keeps it within MaxRASLine.
// The answer is the whole job's, whichever node asked: its ranks name
// their hosts by address. Older readers see a line that matches nothing.
const StreamRAS = "ras"

// MaxRASLine is the longest line of a StreamRAS record, in bytes: under the
// longest matched line the job's view keeps (joblog.MaxLine, 2048).
const MaxRASLine = 2000

// RAS is what NCCL's RAS service said of the job: the communicators it
// reported on, the job's processes it found unresponsive or dead, and the
// ranks it named for each. Hosts are as NCCL prints them: the IP address
// of the process's bootstrap (out-of-band) interface.
type RAS struct {
	Version string `json:"version,omitempty"` // NCCL's version, "2.26.2"; "" when not said
	Format  string `json:"format"`            // RASText or RASJSON: the answer's format
	// Groups are the rows of the text answer's communicator table (comms
	// of the same size, status and errors are one row); none in JSON.
	Groups []RASGroup `json:"groups,omitempty"`
	// Comms are the communicators RAS said something of: in text, those
	// with errors or warnings ("#0-0 (cf264af53edbe986) INCOMPLETE"); in
	// JSON, every one (RASRecord keeps those with something to say).
	Comms []RASComm `json:"comms,omitempty"`
	// Unresponsive are the job's processes that gave no data ("Missing
	// communicator data from 1 job process"); UnresponsiveCount is how
	// many RAS counted (it lists at most a few).
	Unresponsive      []RASRank `json:"unresponsive,omitempty"`
	UnresponsiveCount int       `json:"unresponsive_count,omitempty"`
	// Dead are the job's processes RAS considers dead (unreachable over
	// its network for 60 s); DeadCount is how many RAS counted.
	Dead      []RASRank `json:"dead,omitempty"`
	DeadCount int       `json:"dead_count,omitempty"`
	// Timeouts is how many of RAS's own messages timed out while it
	// gathered the answer.
	Timeouts int `json:"timeouts,omitempty"`
	// Trimmed is set when RASRecord left ranks or communicators out to
	// keep the line within MaxRASLine.
	Trimmed bool `json:"trimmed,omitempty"`
}

// Formats of a RAS answer.
const (
	RASText = "text" // the default answer, every NCCL with RAS
	RASJSON = "json" // SET FORMAT json, NCCL >= 2.28.7
)

// RASGroup is one row of the communicator table of a text answer.
type RASGroup struct {
	Group        int    `json:"group"`          // the row's number, the x of a comm's "#x-y"
	Comms        int    `json:"comms"`          // communicators in the group
	Nodes        int    `json:"nodes"`          // nodes per communicator
	RanksPerNode string `json:"ranks_per_node"` // "8", or "7-8" when it varies
	Ranks        int    `json:"ranks"`          // ranks per communicator
	RanksInGroup int    `json:"ranks_in_group"` // ranks (GPUs) over the group's comms
	Status       string `json:"status"`         // RUNNING, INIT, FINALIZE, ABORT, NOCOMM (UNKNOWN before 2.26)
	Errors       string `json:"errors"`         // OK, MISMATCH, INCOMPLETE, ERROR, or a comma list
}

// RASComm is one communicator RAS reported on.
type RASComm struct {
	ID   string `json:"id,omitempty"` // "#0-0": group and index in the text answer; "" in JSON
	Hash string `json:"hash"`         // the communicator's hash, 16 hex digits, as NCCL's INFO lines print it
	// Ranks is the communicator's size, Nodes its nodes (0: not said).
	Ranks int `json:"ranks,omitempty"`
	Nodes int `json:"nodes,omitempty"`
	// Errors is what RAS said of it: INCOMPLETE, MISMATCH, ERROR, or a
	// comma list of them.
	Errors string `json:"errors,omitempty"`
	// Missing are its ranks that gave no data (INCOMPLETE); MissingCount
	// is how many RAS counted.
	Missing      []RASRank `json:"missing,omitempty"`
	MissingCount int       `json:"missing_count,omitempty"`
	// Counts are its ranks grouped by how many collectives of one type they
	// launched (MISMATCH): present only when the ranks disagree.
	Counts []RASCount `json:"counts,omitempty"`
}

// RASCount is the ranks of a communicator that launched the same number of
// collectives of one type.
type RASCount struct {
	// Op is the collective type ("AllReduce", NCCL >= 2.26 counts each
	// type apart); "" for all collectives together (2.24, 2.25).
	Op    string `json:"op,omitempty"`
	Count int64  `json:"count"` // launched up to operation Count (0: none)
	Ranks int    `json:"ranks"` // how many ranks
	// Listed are the ranks RAS named (it names a group's members when the
	// group is an outlier: one rank, or a small minority).
	Listed []RASRank `json:"listed,omitempty"`
}

// RASRank is one rank (or, in Unresponsive and Dead, one process) as RAS
// named it.
type RASRank struct {
	Rank int    `json:"rank"`           // the rank in its communicator; -1 for a process
	Host string `json:"host,omitempty"` // the process's address, "172.16.64.213"; "" when RAS had none
	PID  int    `json:"pid,omitempty"`  // the process id on its host, 0 when not said
	// GPU is the CUDA device ("5"), with NVML's index where it differs
	// ("1 (NVML 5)"); a process's devices are a list ("0,1").
	GPU string `json:"gpu,omitempty"`
	// Unresponsive and Dead are a JSON answer's word on a missing rank.
	Unresponsive bool `json:"unresponsive,omitempty"`
	Dead         bool `json:"dead,omitempty"`
}

// RASRecord is the trace record of st, read on host for job at t. The line
// keeps within MaxRASLine: communicators with nothing to say are left out,
// then the ranks listed are cut down (counts stay), then communicators.
func RASRecord(host, job string, t time.Time, st RAS) Sample {
	return Sample{V: Version, Time: t, Host: host, Job: job, Log: &Log{Stream: StreamRAS, Line: string(rasLine(st))}}
}

func rasLine(st RAS) []byte {
	b, _ := json.Marshal(st) // strings, ints and bools
	if len(b) <= MaxRASLine {
		return b
	}
	st.Trimmed = true
	st.Groups = st.Groups[:min(len(st.Groups), 4)]
	st.Comms = slices.DeleteFunc(slices.Clone(st.Comms), func(c RASComm) bool {
		return len(c.Missing) == 0 && c.MissingCount == 0 && len(c.Counts) == 0
	})
	for keep := 8; ; keep /= 2 {
		t := keepRanks(st, keep)
		for {
			b, _ = json.Marshal(t)
			if len(b) <= MaxRASLine || keep > 0 || len(t.Comms) == 0 {
				break
			}
			t.Comms = t.Comms[:len(t.Comms)-1]
		}
		if len(b) <= MaxRASLine || keep == 0 {
			return b
		}
	}
}

// keepRanks is st with at most keep ranks in each of its lists.
func keepRanks(st RAS, keep int) RAS {
	st.Unresponsive, st.Dead = st.Unresponsive[:min(len(st.Unresponsive), keep)], st.Dead[:min(len(st.Dead), keep)]
	comms := make([]RASComm, 0, len(st.Comms))
	for _, c := range st.Comms {
		c.Missing = c.Missing[:min(len(c.Missing), keep)]
		counts := make([]RASCount, 0, len(c.Counts))
		for _, n := range c.Counts {
			n.Listed = n.Listed[:min(len(n.Listed), keep)]
			counts = append(counts, n)
		}
		c.Counts = counts
		comms = append(comms, c)
	}
	st.Comms = comms
	return st
}

// ParseRAS reads the line of a StreamRAS record; false when it is not one
// (another version's, or damaged).
func ParseRAS(line string) (RAS, bool) {
	var st RAS
	if json.Unmarshal([]byte(line), &st) != nil || st.Format == "" {
		return RAS{}, false
	}
	return st, true
}
