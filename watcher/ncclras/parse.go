package ncclras

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/internal/textutil"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// ErrNoAnswer is returned (wrapped) by Parse for text that is not a RAS
// status answer at all.
var ErrNoAnswer = errors.New("not a RAS status answer")

// Parse reads a RAS status answer: the text format of NCCL 2.24 to 2.30
// (src/ras/client_support.cc's rasClientRunInit and rasClientRunComms), or
// the JSON of SET FORMAT json (2.28.7 and later). It is tolerant: lines it
// does not know are skipped, so later versions' additions read; it needs
// the answer's version line, job summary or communicator table to call the
// text an answer.
func Parse(text string) (Status, error) {
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") {
		return parseJSON(t)
	}
	return parseText(text)
}

var (
	reVersion = regexp.MustCompile(`^NCCL version (\S+)`)
	// "    0         1         4       7-8        32        32   RUNNING  INCOMPLETE"
	reGroupRow = regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+(?:-\d+)?)\s+(\d+)\s+(\d+)\s+([A-Z]+)\s+([A-Z,]+)\s*$`)
	// "#0-0 (cf264af53edbe986) INCOMPLETE"
	reComm = regexp.MustCompile(`^#(\d+)-(\d+) \(([0-9a-fA-F]+)\) ([A-Z,]+)`)
	// "  Process 3487984 on node 172.16.64.213 managing GPU 5", "... GPUs 0,1 (NVML 2,3)"
	reProcess = regexp.MustCompile(`^\s*Process (\d+) on node (\S*) managing GPUs? (.*?)\s*$`)
	// "  Rank 0 -- GPU 0 managed by process 483072 on node 172.16.64.210", with
	// "has launched up to operation N", "has not launched any operations",
	// "has status S" or "reported E" between the rank and the dashes.
	reRank     = regexp.MustCompile(`^\s*Rank (\d+)(?: (has launched up to operation (\d+)|has not launched any operations|has status \S+|reported [^-]+?))? -- (?:GPU (.+?) managed by process (\d+) on node (\S*)|\[process information not found\])\s*$`)
	reMissing  = regexp.MustCompile(`^\s*Missing communicator data from (\d+) (job process|rank)`)
	reDead     = regexp.MustCompile(`^\s*(\d+) job process(?:es are| is) considered dead`)
	reRankList = regexp.MustCompile(`^\s*The missing ranks?: ([\d,]+)`)
	reOpCounts = regexp.MustCompile(`^\s*Communicator ranks have different (\S+) operation counts`)
	reLaunched = regexp.MustCompile(`^\s*(\d+) ranks have (?:launched up to operation (\d+)|not launched any operations)`)
	reStatuses = regexp.MustCompile(`^\s*Communicator ranks have different status`)
	reTimeouts = regexp.MustCompile(`^\s*Encountered (\d+) communication timeouts?`)
)

// Blocks of the text answer a line can be in.
const (
	inNone         = iota
	inUnresponsive // the job-wide INCOMPLETE of the Errors section
	inDead         // DEAD
	inCommMissing  // a communicator's INCOMPLETE
	inCommCounts   // a communicator's MISMATCH, its collective counts
	inCommOther    // a communicator's ERROR, or its status MISMATCH
)

// textParser reads NCCL's text answer line by line: the job-wide lines
// (version, groups, timeouts, the unresponsive and dead processes) and,
// within a communicator, its missing ranks and collective counts.
type textParser struct {
	st    Status
	known bool // a line only NCCL's answer has was seen
	block int  // the in* block the lines are in
	comm  *trace.RASComm
	count *trace.RASCount
	op    string // the collective the counts are of ("" for all)
}

func parseText(text string) (Status, error) {
	p := textParser{st: Status{Format: trace.RASText}, block: inNone}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if !p.jobLine(line) && p.comm != nil {
			p.commLine(line)
		}
	}
	if !p.known {
		return Status{}, fmt.Errorf("ncclras: %w", ErrNoAnswer)
	}
	fillComms(&p.st)
	clipAll(&p.st)
	return p.st, nil
}

// jobLine takes a line about the job as a whole, or one that opens a
// block; it reports whether the line was taken.
func (p *textParser) jobLine(line string) bool {
	st := &p.st
	trimmed := strings.TrimSpace(line)
	if m := reVersion.FindStringSubmatch(line); m != nil {
		st.Version, p.known = m[1], true
		return true
	}
	switch trimmed {
	case "Job summary":
		p.known = true
		return true
	case "INCOMPLETE":
		if line == trimmed { // the job-wide block, not a table cell
			p.block, p.comm = inUnresponsive, nil
			return true
		}
	case "DEAD":
		if line == trimmed {
			p.block, p.comm = inDead, nil
			return true
		}
	case "Errors", "Warnings", "TIMEOUT":
		p.block, p.comm = inNone, nil
		return true
	}
	if m := reGroupRow.FindStringSubmatch(line); m != nil && p.comm == nil && p.block == inNone {
		p.known = true
		st.Groups = append(st.Groups, trace.RASGroup{Group: atoi(m[1]), Comms: atoi(m[2]), Nodes: atoi(m[3]),
			RanksPerNode: m[4], Ranks: atoi(m[5]), RanksInGroup: atoi(m[6]), Status: m[7], Errors: m[8]})
		return true
	}
	if m := reComm.FindStringSubmatch(line); m != nil {
		p.known = true
		p.comm = commOf(st, m[1], m[2], m[3])
		p.comm.Errors = joinErrors(p.comm.Errors, m[4])
		p.block, p.count = inCommOther, nil
		if strings.Contains(m[4], "INCOMPLETE") {
			p.block = inCommMissing
		}
		return true
	}
	if m := reTimeouts.FindStringSubmatch(line); m != nil {
		st.Timeouts = atoi(m[1])
		return true
	}
	if m := reDead.FindStringSubmatch(line); m != nil {
		st.DeadCount = atoi(m[1])
		return true
	}
	if m := reMissing.FindStringSubmatch(line); m != nil {
		if m[2] == "job process" {
			st.UnresponsiveCount = atoi(m[1])
		} else if p.comm != nil {
			p.comm.MissingCount = atoi(m[1])
		}
		return true
	}
	if m := reProcess.FindStringSubmatch(line); m != nil {
		r := trace.RASRank{Rank: -1, PID: atoi(m[1]), Host: m[2], GPU: m[3]}
		switch p.block {
		case inUnresponsive:
			st.Unresponsive = append(st.Unresponsive, r)
		case inDead:
			st.Dead = append(st.Dead, r)
		}
		return true
	}
	return false
}

// commLine takes a line within the current communicator: its missing
// ranks, the collective its counts are of, a group of ranks at one count.
func (p *textParser) commLine(line string) {
	comm := p.comm
	if m := reRankList.FindStringSubmatch(line); m != nil && p.block == inCommMissing {
		for _, f := range strings.Split(m[1], ",") {
			if n, err := strconv.Atoi(f); err == nil {
				comm.Missing = append(comm.Missing, trace.RASRank{Rank: n})
			}
		}
		return
	}
	if m := reOpCounts.FindStringSubmatch(line); m != nil {
		p.block, p.count, p.op = inCommCounts, nil, m[1]
		if p.op == "collective" { // 2.24, 2.25: all collectives together
			p.op = ""
		}
		return
	}
	if reStatuses.MatchString(line) {
		p.block, p.count = inCommOther, nil
		return
	}
	if m := reLaunched.FindStringSubmatch(line); m != nil && p.block == inCommCounts {
		comm.Counts = append(comm.Counts, trace.RASCount{Op: p.op, Count: atoi64(m[2]), Ranks: atoi(m[1])})
		p.count = &comm.Counts[len(comm.Counts)-1]
		return
	}
	m := reRank.FindStringSubmatch(line)
	if m == nil {
		return
	}
	r := trace.RASRank{Rank: atoi(m[1]), GPU: m[4], PID: atoi(m[5]), Host: m[6]}
	switch {
	case p.block == inCommMissing:
		comm.Missing = append(comm.Missing, r)
	case p.block == inCommCounts && m[2] != "" && strings.HasPrefix(m[2], "has "):
		// A group of one: "Rank 5 has launched up to operation 6649 -- ..."
		comm.Counts = append(comm.Counts, trace.RASCount{Op: p.op, Count: atoi64(m[3]), Ranks: 1, Listed: []trace.RASRank{r}})
		p.count = nil
	case p.block == inCommCounts && p.count != nil:
		p.count.Listed = append(p.count.Listed, r)
	}
}

// maxField is the longest string field Parse keeps, in bytes: a field
// longer than any NCCL prints is cut, so that a record stays small.
const maxField = 48

// clipAll cuts st's strings to maxField.
func clipAll(st *Status) {
	st.Version = clip(st.Version)
	for i := range st.Groups {
		g := &st.Groups[i]
		g.RanksPerNode, g.Status, g.Errors = clip(g.RanksPerNode), clip(g.Status), clip(g.Errors)
	}
	clipRanks(st.Unresponsive)
	clipRanks(st.Dead)
	for i := range st.Comms {
		c := &st.Comms[i]
		c.ID, c.Hash, c.Errors = clip(c.ID), clip(c.Hash), clip(c.Errors)
		clipRanks(c.Missing)
		for j := range c.Counts {
			c.Counts[j].Op = clip(c.Counts[j].Op)
			clipRanks(c.Counts[j].Listed)
		}
	}
}

func clipRanks(rs []trace.RASRank) {
	for i := range rs {
		rs[i].Host, rs[i].GPU = clip(rs[i].Host), clip(rs[i].GPU)
	}
}

func clip(s string) string { return textutil.Cut(s, maxField, "") }

// commOf is the communicator "#group-idx (hash)" of st, added when new.
func commOf(st *Status, group, idx, hash string) *trace.RASComm {
	id := "#" + group + "-" + idx
	for i := range st.Comms {
		if st.Comms[i].ID == id {
			return &st.Comms[i]
		}
	}
	st.Comms = append(st.Comms, trace.RASComm{ID: id, Hash: normHash(hash)})
	return &st.Comms[len(st.Comms)-1]
}

// fillComms gives each communicator of a text answer its size and nodes
// from its group's row of the table, and drops the ranks a buggy answer
// numbers beyond the communicator's size (NCCL 2.27.3 printed garbage for
// the ranks of comms it called NOCOMM: NVIDIA/nccl#1762).
func fillComms(st *Status) {
	for i := range st.Comms {
		c := &st.Comms[i]
		found := false
		for _, g := range st.Groups {
			if c.ID != "" && strings.HasPrefix(c.ID, "#"+strconv.Itoa(g.Group)+"-") {
				c.Ranks, c.Nodes, found = g.Ranks, g.Nodes, true
			}
		}
		if found {
			c.Missing = inRange(c.Missing, c.Ranks)
			for j := range c.Counts {
				c.Counts[j].Listed = inRange(c.Counts[j].Listed, c.Ranks)
			}
		}
	}
}

func inRange(rs []trace.RASRank, size int) []trace.RASRank {
	var out []trace.RASRank
	for _, r := range rs {
		if r.Rank >= 0 && r.Rank < size {
			out = append(out, r)
		}
	}
	return out
}

// joinErrors adds the errors of e ("INCOMPLETE", "ERROR,MISMATCH") to
// those of have, each once.
func joinErrors(have, e string) string {
	var out []string
	for _, x := range strings.Split(have+","+e, ",") {
		if x != "" && !contains(out, x) {
			out = append(out, x)
		}
	}
	return strings.Join(out, ",")
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// normHash is a communicator hash as the text answer prints it: 16
// lower-case hex digits ("0xae94423cfbb2ef4a" in JSON, whose %lx drops
// leading zeros).
func normHash(h string) string {
	h = strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(h, "0x"), "0X"))
	if len(h) < 16 {
		h = strings.Repeat("0", 16-len(h)) + h
	}
	return h
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

func atoi64(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// jsonAnswer is the JSON answer, as rasDumpCommsToJSON writes it.
type jsonAnswer struct {
	Version string `json:"nccl_version"`
	Comms   []struct {
		Hash    string `json:"hash"`
		Size    int    `json:"size"`
		Missing int    `json:"missing_ranks_count"`
		Ranks   []struct {
			jsonRank
			Counts map[string]int64 `json:"collective_counts"`
		} `json:"ranks"`
		MissingRanks []struct {
			jsonRank
			Status struct {
				Unresponsive bool `json:"unresponsive"`
				Dead         bool `json:"considered_dead"`
			} `json:"status"`
		} `json:"missing_ranks"`
	} `json:"communicators"`
	RAS struct {
		Timeouts int `json:"timeouts_count"`
	} `json:"ras"`
}

type jsonRank struct {
	Rank    int    `json:"rank"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	CUDADev int    `json:"cuda_dev"`
	NVMLDev int    `json:"nvml_dev"`
}

func (r jsonRank) rank() trace.RASRank {
	gpu := strconv.Itoa(r.CUDADev)
	if r.NVMLDev != r.CUDADev {
		gpu += " (NVML " + strconv.Itoa(r.NVMLDev) + ")"
	}
	host := r.Host
	if host == "unknown" {
		host = ""
	}
	return trace.RASRank{Rank: r.Rank, Host: host, PID: max(r.PID, 0), GPU: gpu}
}

// parseJSON reads the JSON answer: every rank with its counts per
// collective type, the missing ones with RAS's word on each. The counts
// become groups as the text answer has them, with the ranks of every
// group but the largest listed; a missing rank that is dead is among
// Dead, one unresponsive among Unresponsive (once per process).
func parseJSON(text string) (Status, error) {
	var a jsonAnswer
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		return Status{}, fmt.Errorf("ncclras: %w: %v", ErrNoAnswer, err)
	}
	st := Status{Format: trace.RASJSON, Version: a.Version, Timeouts: a.RAS.Timeouts}
	seen := map[string]bool{}
	for _, c := range a.Comms {
		comm := trace.RASComm{Hash: normHash(c.Hash), Ranks: c.Size, MissingCount: c.Missing}
		hosts := map[string]bool{}
		for _, m := range c.MissingRanks {
			r := m.rank()
			r.Unresponsive, r.Dead = m.Status.Unresponsive, m.Status.Dead
			comm.Missing = append(comm.Missing, r)
			key := fmt.Sprint(r.Host, "/", r.PID)
			switch {
			case seen[key]:
			case r.Dead:
				st.Dead, seen[key] = append(st.Dead, trace.RASRank{Rank: -1, Host: r.Host, PID: r.PID, GPU: r.GPU}), true
			case r.Unresponsive:
				st.Unresponsive, seen[key] = append(st.Unresponsive, trace.RASRank{Rank: -1, Host: r.Host, PID: r.PID, GPU: r.GPU}), true
			}
		}
		ops := map[string]map[int64][]trace.RASRank{}
		for _, r := range c.Ranks {
			hosts[r.Host] = true
			for op, n := range r.Counts {
				if ops[op] == nil {
					ops[op] = map[int64][]trace.RASRank{}
				}
				ops[op][n] = append(ops[op][n], r.rank())
			}
		}
		for _, m := range c.MissingRanks {
			hosts[m.Host] = true
		}
		comm.Nodes = len(hosts)
		comm.Counts = countGroups(ops)
		var errs []string
		if comm.MissingCount > 0 || len(comm.Missing) > 0 {
			errs = append(errs, "INCOMPLETE")
		}
		if len(comm.Counts) > 0 {
			errs = append(errs, "MISMATCH")
		}
		comm.Errors = strings.Join(errs, ",")
		st.Comms = append(st.Comms, comm)
	}
	st.DeadCount, st.UnresponsiveCount = len(st.Dead), len(st.Unresponsive)
	clipAll(&st)
	return st, nil
}

// countGroups turns the ranks by op and count into the groups of the ops
// whose ranks disagree, largest group first, the others' ranks listed.
func countGroups(ops map[string]map[int64][]trace.RASRank) []trace.RASCount {
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	var out []trace.RASCount
	for _, op := range names {
		if len(ops[op]) < 2 {
			continue
		}
		var gs []trace.RASCount
		for n, rs := range ops[op] {
			sort.Slice(rs, func(i, j int) bool { return rs[i].Rank < rs[j].Rank })
			gs = append(gs, trace.RASCount{Op: op, Count: n, Ranks: len(rs), Listed: rs})
		}
		sort.Slice(gs, func(i, j int) bool {
			if gs[i].Ranks != gs[j].Ranks {
				return gs[i].Ranks > gs[j].Ranks
			}
			return gs[i].Count > gs[j].Count
		})
		gs[0].Listed = nil
		out = append(out, gs...)
	}
	return out
}
