// Package joblog finds the evidence of a hang beyond telemetry: the lines of
// the job's own output (NCCL warnings, PyTorch's ProcessGroupNCCL watchdog,
// Python tracebacks, CUDA errors, per-rank progress) and of the kernel log
// (XID events, ECC errors, and the Ascend NPUs' DCMI error codes the watcher
// renders as kernel-log lines) that tell why a job stopped.
//
// Match is a pure function over one line; Follower reads the lines appended
// to a file since a saved offset. Only matched lines are kept (in the trace,
// as log records): never the job's whole output.
package joblog

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/internal/xid"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Kind says what a matched line is.
type Kind string

// Kinds of matched lines.
const (
	// KindNCCLNet: an NCCL transport error (an InfiniBand/RoCE completion
	// with an error status, retries exceeded, a GPUDirect RDMA problem).
	KindNCCLNet Kind = "nccl-net"
	// KindNCCLRetry: an NCCL warning that NCCL itself retries: not evidence.
	KindNCCLRetry Kind = "nccl-retry"
	// KindNCCLWarn: another NCCL WARN line: kept, not evidence by itself.
	KindNCCLWarn Kind = "nccl-warn"
	// KindNCCLAddr: NCCL's start-up line naming the host's own out-of-band
	// address (Addr), which maps a peer address in a transport error to a
	// host.
	KindNCCLAddr Kind = "nccl-addr"
	// KindWatchdog: PyTorch's ProcessGroupNCCL watchdog: a collective timed
	// out (Seq, Op) or the last completed work (Completed).
	KindWatchdog Kind = "watchdog"
	// KindTraceback: a Python traceback begins.
	KindTraceback Kind = "traceback"
	// KindCUDAError: a CUDA error reported by the application.
	KindCUDAError Kind = "cuda-error"
	// KindProgress: a progress line with an epoch and/or a step number.
	KindProgress Kind = "progress"
	// KindXID: an NVIDIA XID event in the kernel log (XID; Fault when
	// package internal/xid, the catalogue the xid check uses too, calls it
	// a fault: the device needs more than a restart of the application).
	KindXID Kind = "xid"
	// KindECC: an uncorrectable ECC error in the kernel log.
	KindECC Kind = "ecc"
	// KindNPUError: an Ascend NPU's DCMI error code, as the watcher renders
	// it (Code; Fault when the NPU's health was a major or critical alarm).
	KindNPUError Kind = "npu-error"
	// KindTaskExit: srun says a task of the job ended badly ("srun: error:
	// gpu03: task 2: Exited with exit code 1", "... Killed"); the line
	// names the host (Attribute).
	KindTaskExit Kind = "task-exit"
	// KindCancelled: slurmstepd says the scheduler cancelled the step or
	// the job ("*** STEP 6053.0 ON n3 CANCELLED AT 2024-04-23T12:18:08
	// ***", "... DUE TO TIME LIMIT ***", "... DUE TO JOB REQUEUE ***"):
	// the tasks that srun reports ended after it ended because of it. A
	// cancel due to a node failure is not one: that is a failure.
	KindCancelled Kind = "step-cancelled"
	// KindRAS, KindRASFailed and KindRASBehind: NCCL's RAS answer (a
	// trace.StreamRAS record's line, trace.RAS as JSON) with nothing
	// amiss; with ranks missing or dead; with ranks at different
	// collective counts. The digest reads the line itself.
	KindRAS       Kind = "ras"
	KindRASFailed Kind = "ras-failed"
	KindRASBehind Kind = "ras-behind"
	// KindWaits: what the job's processes on a host wait on (a
	// trace.StreamWaits record's line, trace.Waits as JSON); the digest
	// reads the line itself.
	KindWaits Kind = "waits"
)

// Match is what one line says. Numbers a line does not carry are -1.
type Match struct {
	Kind      Kind   `json:"kind"`
	Rank      int    `json:"rank"`      // the process's rank, -1 if the line names none
	Seq       int64  `json:"seq"`       // collective sequence number (watchdog)
	Op        string `json:"op"`        // collective op type (watchdog), e.g. ALLREDUCE
	Completed int64  `json:"completed"` // last completed NCCL work (watchdog)
	Peer      string `json:"peer"`      // the peer's address (NCCL transport error)
	Addr      string `json:"addr"`      // the host's own address (KindNCCLAddr)
	Status    int    `json:"status"`    // InfiniBand completion status (NCCL transport error)
	GDR       bool   `json:"gdr"`       // the line is about GPUDirect RDMA
	XID       int    `json:"xid"`       // XID number
	Code      string `json:"code"`      // DCMI error code (KindNPUError), "0x80e18005"
	Fault     bool   `json:"fault"`     // a device fault (fault XID, uncorrectable ECC, NPU error code in a major alarm)
	Epoch     int64  `json:"epoch"`
	Step      int64  `json:"step"`
	Rule      string `json:"rule,omitempty"` // the line rule that matched, "" for the built-in parsers
	// Ranks are the ranks a collective-mismatch line names as the odd
	// ones out (KindMismatch), comma-separated in the order the line
	// names them ("1,2"; a string keeps Match comparable): RankList.
	Ranks string `json:"ranks,omitempty"`
	// Ready are the ranks that a stalled collective waits with, as
	// Horovod's older stall warning names them ("op [ready ranks: 2, 0,
	// 1]"): each op's ranks comma-separated, ops separated by ";". The
	// odd ones out are the complement over the job's ranks, which only
	// the digest knows.
	Ready string `json:"ready,omitempty"`
	// Stuck: the ranks the line names are those stuck in the earliest
	// collective (PyTorch's desync report, "[0, 1] joined but didn't
	// finish collective #730"), not one side of a disagreement: a list of
	// every rank says no rank is behind another.
	Stuck bool `json:"stuck,omitempty"`
	// PortDown: a transport error about the printing host's own adapter
	// (an InfiniBand async event: its port went down, a catastrophic
	// error of the adapter), not about a link to a peer.
	PortDown bool `json:"port_down,omitempty"`
	// Socket: a transport error of a TCP socket (closed or reset by the
	// other end, a broken pipe), what a peer's process that exited causes
	// as well as a link that failed.
	Socket bool `json:"socket,omitempty"`
}

// MaxLine is the longest line kept, in bytes; a longer one is cut.
const MaxLine = 2048

var (
	reNPUCode   = regexp.MustCompile(`^dcmi: npu\d+ \(PCI:[^)]*\) error code (0x[0-9a-f]{8}), `)
	reRank      = regexp.MustCompile(`(?i)\brank\s*[=:]?\s*(\d+)`)
	reSeq       = regexp.MustCompile(`SeqNum=(\d+)`)
	reOp        = regexp.MustCompile(`OpType=([A-Za-z_]+)`)
	reTimeoutAt = regexp.MustCompile(`Timeout at NCCL work: (\d+)`)
	reCompleted = regexp.MustCompile(`last completed NCCL work: (-?\d+)`)
	rePeer      = regexp.MustCompile(`from peer ([^\s<,]+)`)
	reStatus    = regexp.MustCompile(`(?:status=|with error )(\d+)`)
	rePortDown  = regexp.MustCompile(`Got async (?:error )?event ?: (?:port error|local catastrophic error)|^mlx5_core \S+ (?:poll_health:\d+:\(pid \d+\): )?device.s health compromised`)
	reSocket    = regexp.MustCompile(`Connection (?:closed by remote peer|reset by peer)|Broken pipe`)
	reOOB       = regexp.MustCompile(`OOB [^:\s]+:([^\s<]+)<`)
	reEpoch     = regexp.MustCompile(`(?i)\bepoch\b[\s:=\[#]*(\d+)`)
	reStep      = regexp.MustCompile(`(?i)\b(?:global_step|step|iteration|iter)\b[\s:=\[#]*(\d+)`)
	reBracket   = regexp.MustCompile(`\]\[\s*(\d+)/\d+\]`) // "Epoch: [2][ 300/5004]"
)

// LineIn returns what a line of stream ("kmsg" for the kernel log, else
// the job's output) says: XID and Ascend DCMI lines are parsed first, then
// the line rules (the shipped rules.toml, overridden by the site's
// [[watch.rules]]: SetSiteRules), then NCCL's own lines, PyTorch's
// watchdog and progress lines. A rule of kind ignore silences a line. It
// is safe for concurrent use.
//
// A kernel line is the message of a kernel log record (kmsg.Record's
// Text), read only for what a driver prints: an XID line or a DCMI line
// from its start, or a kernel-log rule, which matches from the start too.
// The rest of a kernel message can be a user's text (the file name of a
// segfault line), so nothing in it counts.
func LineIn(stream, line string) (Match, bool) {
	if len(line) > MaxLine {
		line = line[:MaxLine]
	}
	m := Match{Rank: -1, Seq: -1, Completed: -1, Status: -1, XID: -1, Epoch: -1, Step: -1}
	var ok bool
	switch {
	case stream == trace.StreamDevice:
		ok = device(line, &m)
	case stream == trace.StreamRAS:
		ok = ras(line, &m)
		return m, ok // its ranks are the answer's, not a line's
	case stream == trace.StreamWaits: // what the processes wait on: the digest reads the line
		m.Kind = KindWaits
		return m, true
	case stream == trace.StreamKmsg:
		ok = kernelLine(line, &m)
	case stream == StreamHeartbeat:
		ok = heartbeatLine(line, &m)
	case strings.Contains(line, "NVRM: Xid"):
		ok = kernel(line, &m)
	case strings.Contains(line, "dcmi: npu") && strings.Contains(line, "error code"):
		ok = npuError(line, &m)
	default:
		var hit bool
		if hit, ok = byRule(line, stream, &m); hit {
			break
		}
		switch {
		case strings.Contains(line, "NCCL WARN") || strings.Contains(line, "NCCL INFO"):
			ok = nccl(line, &m)
		case strings.Contains(line, "WorkNCCL(") || strings.Contains(line, "NCCL work:"):
			ok = watchdog(line, &m)
		case reCancelled.MatchString(line):
			m.Kind, ok = KindCancelled, true
		default:
			ok = progress(line, &m)
		}
	}
	if !ok {
		return Match{}, false
	}
	if m.Kind != KindXID && m.Kind != KindECC && m.Kind != KindNPUError && m.Kind != KindOOMKill &&
		m.Kind != KindHungTask && m.Kind != KindNFS {
		m.Rank = int(num(reRank, line, 1<<20))
	}
	return m, true
}

// kernelLine reads a kernel message: the driver's XID line, a DCMI line
// (which older watchers wrote into the kernel stream for an NPU's error
// code), or a kernel-log rule; all three from the message's start.
func kernelLine(line string, m *Match) bool {
	switch {
	case strings.HasPrefix(line, "NVRM: Xid "):
		return kernel(line, m)
	case strings.HasPrefix(line, "dcmi: npu"):
		return npuError(line, m)
	}
	_, keep := byRule(line, trace.StreamKmsg, m)
	return keep
}

// kernel matches an XID line: "NVRM: Xid (PCI:0000:3b:00): 79, pid=...",
// read and classified by package internal/xid (an XID caused by an
// earlier one is that one's effect; XID 154 is what the action it names
// needs), as the prolog's and epilog's xid check classifies it.
func kernel(line string, m *Match) bool {
	ev, ok := xid.Parse(line)
	if !ok {
		return false
	}
	m.Kind, m.XID, m.Fault = KindXID, ev.Code, ev.Fault()
	return true
}

// device reads a device library's fault event (a trace.StreamDevice
// record's line): an XID judged by the catalogue as the kernel's line is,
// an uncorrectable ECC error (always a fault), an NPU's error code (a
// fault when its health then was a major or critical alarm).
func device(line string, m *Match) bool {
	e, ok := trace.ParseDeviceEvent(line)
	if !ok {
		return false
	}
	switch e.Kind {
	case trace.DeviceXID:
		m.Kind, m.XID, m.Fault = KindXID, e.XID, xid.Event{Code: e.XID, PCI: e.PCI}.Fault()
	case trace.DeviceECC:
		m.Kind, m.Fault = KindECC, true
	case trace.DeviceErrorCode:
		m.Kind, m.Code, m.Fault = KindNPUError, e.Code, e.Fault
	default:
		return false
	}
	return true
}

// ras reads NCCL's RAS answer (a trace.StreamRAS record's line).
func ras(line string, m *Match) bool {
	st, ok := trace.ParseRAS(line)
	if !ok {
		return false
	}
	m.Kind = KindRAS
	failed := st.DeadCount+st.UnresponsiveCount+len(st.Dead)+len(st.Unresponsive) > 0
	for _, c := range st.Comms {
		switch {
		case c.MissingCount > 0 || len(c.Missing) > 0:
			failed = true
		case len(c.Counts) > 0 && m.Kind == KindRAS:
			m.Kind = KindRASBehind
		}
	}
	if failed {
		m.Kind = KindRASFailed
	}
	return true
}

// npuError matches a DCMI error code line: "dcmi: npu2 (PCI:0000:c3:00.0)
// error code 0x80e18005, major alarm (fault)". Only the " (fault)" at the
// end makes it a fault: the watcher writes it for a major or critical
// alarm (sample.HealthFault).
func npuError(line string, m *Match) bool {
	c := reNPUCode.FindStringSubmatch(line)
	if c == nil {
		return false
	}
	m.Kind, m.Code = KindNPUError, c[1]
	m.Fault = strings.HasSuffix(strings.TrimRight(line, " \r\n"), " (fault)")
	return true
}

// nccl matches NCCL's WARN lines and its start-up address line.
func nccl(line string, m *Match) bool {
	if strings.Contains(line, "NCCL INFO") {
		if a := reOOB.FindStringSubmatch(line); a != nil && strings.Contains(line, "NET/") {
			m.Kind, m.Addr = KindNCCLAddr, a[1]
			return true
		}
		return false // INFO lines are not evidence
	}
	m.GDR = strings.Contains(line, "GDR") || containsFold(line, "GPU Direct RDMA") || containsFold(line, "GPUDirect")
	switch {
	case containsFold(line, "retrying") || containsFold(line, "will retry"):
		m.Kind = KindNCCLRetry
	case strings.Contains(line, "NET/IB") && (strings.Contains(line, "Got completion") || strings.Contains(line, "status=")),
		strings.Contains(line, "IBV_WC_"), containsFold(line, "retry counter exceeded"), m.GDR:
		m.Kind = KindNCCLNet
		if p := rePeer.FindStringSubmatch(line); p != nil {
			m.Peer = p[1]
		}
		m.Status = int(num(reStatus, line, 1<<16))
		m.Socket = reSocket.MatchString(line)
	default:
		m.Kind = KindNCCLWarn
	}
	return true
}

// watchdog matches ProcessGroupNCCL's timeout lines:
// "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1234,
// OpType=ALLREDUCE, ...)" and "Timeout at NCCL work: 1234, last enqueued
// NCCL work: 1234, last completed NCCL work: 1233."
func watchdog(line string, m *Match) bool {
	m.Seq = num(reSeq, line, 1<<62)
	if m.Seq < 0 {
		m.Seq = num(reTimeoutAt, line, 1<<62)
	}
	if op := reOp.FindStringSubmatch(line); op != nil {
		m.Op = op[1]
	}
	m.Completed = num(reCompleted, line, 1<<62)
	if m.Seq < 0 && m.Completed < 0 {
		return false
	}
	m.Kind = KindWatchdog
	return true
}

// reSlurmLine is a line of Slurm's own: its daemons' and commands' words
// ("slurmstepd: error: ...", "srun: ...") and the step's cancellation,
// "*** STEP 123.0 ON n3 CANCELLED AT 2024-05-01T10:00:00 ***", whose job
// and step ids are no training step.
var reSlurmLine = regexp.MustCompile(`^\s*(?:\d+: )?(?:srun|slurmstepd|salloc|sbatch)(?:-[\w.-]+)?: |\*\*\* (?:STEP|JOB) \S+ ON \S+ (?:CANCELLED AT|FAILED)`)

// reCancelled is slurmstepd's word that the step or the job was
// cancelled: its formats (Slurm 24.11's slurmstepd) are "*** %s ON %s
// CANCELLED AT %s ***" and the same with " DUE TO TIME LIMIT", " DUE TO
// PREEMPTION" or " DUE TO JOB REQUEUE" before the closing stars; not " DUE
// TO NODE FAILURE, ...": a node that failed is a cause, not the
// scheduler's decision.
// srun's "forcing job termination" (SchedMD/slurm src/srun/srun_job.c,
// job_force_termination) is printed when srun itself was signalled from
// outside (src/srun/signals.c: SIGTERM, SIGHUP, SIGQUIT, a second ^C): a
// cancel from outside the job, like the scheduler's; a failing task never
// prints it.
var reCancelled = regexp.MustCompile(`\*\*\* (?:STEP|JOB) \S+ ON \S+ CANCELLED AT \S+(?: DUE TO (?:TIME LIMIT|PREEMPTION|JOB REQUEUE))? \*\*\*|\bsrun: forcing job termination\s*$`)

// progress matches a line with an epoch or a step number (progressIn);
// a line of Slurm's own is none.
func progress(line string, m *Match) bool { return progressIn(line, m) }

// The ranks a collective-mismatch line names: PyTorch's "Rank 1 is
// running collective: ..., but Rank 2 is running collective: ...", its
// monitored barrier's "Ranks 1, 2 failed to pass monitoredBarrier",
// Horovod's "[missing ranks: 0, 3]" and its stall inspector's "1: [ops]"
// under "Missing ranks:", NCCL's "at and around rank 39", PyTorch's desync
// report's "[7] finished collective #182, but didn't join collective #183",
// "[3, 5] joined but didn't finish collective #9" and "ranks [4] are the
// lagging ranks".
var (
	reRunning = regexp.MustCompile(`\bRank (\d+) is running`)
	reRankSet = regexp.MustCompile(`\bRanks? ((?:\d+, ?)*\d+) failed to pass monitoredBarrier|\[missing ranks: ((?:\d+, ?)*\d+)\]|at and around rank (\d+)|^(\d+): \[[^\]]*Horovod|` +
		`\[((?:\d+, )*\d+)\] (?:joined but didn't finish collective #|finished collective #\d+, but didn't join collective #)|ranks \[((?:\d+, )*\d+)\] are the lagging ranks`)
)

// reTask is a coordinated task's name, "/job:jax_worker/replica:0/task:3"
// (its number is the JAX process id).
var reTask = regexp.MustCompile(`/job:[\w-]+/replica:\d+/task:(\d+)`)

var reStuck = regexp.MustCompile(`\] joined but didn't finish collective #`)

var reReady = regexp.MustCompile(`\[ready ranks: ((?:\d+, ?)*\d+)\]`)

// readyRanks lists, op by op, the ranks a Horovod stall line says are
// ready ("1,2;0"), at most maxAccused ops.
func readyRanks(line string) string {
	var ops []string
	for _, g := range reReady.FindAllStringSubmatch(line, maxAccused) {
		ops = append(ops, strings.ReplaceAll(g[1], " ", ""))
	}
	return strings.Join(ops, ";")
}

// ReadyList is m.Ready as numbers, one list per op.
func (m Match) ReadyList() [][]int {
	var out [][]int
	for _, op := range strings.Split(m.Ready, ";") {
		var rs []int
		for _, r := range strings.Split(op, ",") {
			if n, err := strconv.Atoi(r); err == nil && n >= 0 && n < 1<<20 {
				rs = append(rs, n)
			}
		}
		if len(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// RankList is m.Ranks as numbers.
func (m Match) RankList() []int {
	var out []int
	for _, r := range strings.Split(m.Ranks, ",") {
		if n, err := strconv.Atoi(r); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// accusedRanks lists the ranks line names as the odd ones out, each once,
// comma-separated; a line that names more than maxAccused accuses none
// (cut short, the list would read as a few ranks out of many).
func accusedRanks(line string) string {
	var out []int
	over := false
	add := func(s string) {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		switch {
		case err != nil || n < 0 || n >= 1<<20 || slices.Contains(out, n):
		case len(out) == maxAccused:
			over = true
		default:
			out = append(out, n)
		}
	}
	for _, g := range reRunning.FindAllStringSubmatch(line, -1) {
		add(g[1])
	}
	if _, names, ok := strings.Cut(line, "imed out task names:"); ok { // XLA's barrier: the tasks that never came
		for _, g := range reTask.FindAllStringSubmatch(names, -1) {
			add(g[1])
		}
	}
	if r, ok := CoordinatedTask(strings.TrimSpace(line)); ok { // an entry of the coordination service's list, alone on its line
		add(strconv.Itoa(r))
	}
	for _, g := range reRankSet.FindAllStringSubmatch(line, -1) {
		for _, set := range g[1:] {
			for _, r := range strings.Split(set, ",") {
				if r != "" {
					add(r)
				}
			}
		}
	}
	if over {
		return ""
	}
	s := make([]string, len(out))
	for i, n := range out {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// maxAccused is how many ranks one line may accuse.
const maxAccused = 64

// num is the first group of re's first match in line as a number, or -1
// when there is none or it is above limit.
func num(re *regexp.Regexp, line string, limit int64) int64 {
	g := re.FindStringSubmatch(line)
	if g == nil {
		return -1
	}
	n, err := strconv.ParseInt(g[1], 10, 64)
	if err != nil || n < 0 || n > limit {
		return -1
	}
	return n
}

// containsFold reports whether sub is in s, ignoring ASCII case.
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
