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
	// KindRAS, KindRASFailed and KindRASBehind: NCCL's RAS answer (a
	// trace.StreamRAS record's line, trace.RAS as JSON) with nothing
	// amiss; with ranks missing or dead; with ranks at different
	// collective counts. The digest reads the line itself.
	KindRAS       Kind = "ras"
	KindRASFailed Kind = "ras-failed"
	KindRASBehind Kind = "ras-behind"
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
}

// MaxLine is the longest line kept, in bytes; a longer one is cut.
const MaxLine = 2048

var (
	reNPUCode   = regexp.MustCompile(`dcmi: npu\d+ \(PCI:[^)]*\) error code (0x[0-9a-f]{8}), `)
	reRank      = regexp.MustCompile(`(?i)\brank\s*[=:]?\s*(\d+)`)
	reSeq       = regexp.MustCompile(`SeqNum=(\d+)`)
	reOp        = regexp.MustCompile(`OpType=([A-Za-z_]+)`)
	reTimeoutAt = regexp.MustCompile(`Timeout at NCCL work: (\d+)`)
	reCompleted = regexp.MustCompile(`last completed NCCL work: (-?\d+)`)
	rePeer      = regexp.MustCompile(`from peer ([^\s<,]+)`)
	reStatus    = regexp.MustCompile(`(?:status=|completion with error )(\d+)`)
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

// progress matches a line with an epoch or a step number.
func progress(line string, m *Match) bool {
	m.Epoch = num(reEpoch, line, 1<<40)
	m.Step = num(reStep, line, 1<<62)
	if m.Step < 0 && m.Epoch >= 0 {
		m.Step = num(reBracket, line, 1<<62)
	}
	if m.Epoch < 0 && m.Step < 0 {
		return false
	}
	m.Kind = KindProgress
	return true
}

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
