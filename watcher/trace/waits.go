package trace

import (
	"encoding/json"
	"slices"
	"time"
)

// StreamWaits marks what the job's processes on the record's host wait on,
// as the kernel shows it to their owner (/proc/PID/syscall, wchan, the
// file descriptor waited on, /proc/PID/net/tcp, the cgroup freezer): the
// record's Line is a Waits as compact JSON, typed, never text to parse
// back. WaitsRecord keeps it within MaxWaitsLine. Older readers see a line
// that matches nothing, so traces with these records read as before.
const StreamWaits = "waits"

// MaxWaitsLine is the longest line of a StreamWaits record, in bytes: under
// the longest matched line the job's view keeps (joblog.MaxLine, 2048).
const MaxWaitsLine = 2000

// What a process waits on (Wait.On).
const (
	WaitSocket  = "socket"  // a read or write on a socket
	WaitPipe    = "pipe"    // a read or write on a pipe or FIFO
	WaitFile    = "file"    // a read or write on a file (Wait.FS says which file system)
	WaitPoll    = "poll"    // poll, select or epoll_wait: no single file descriptor
	WaitFutex   = "futex"   // a lock or condition variable of its own (a thread of the process)
	WaitSleep   = "sleep"   // nanosleep, a child (wait4), anything else in a syscall
	WaitRunning = "running" // not in a system call: on a CPU or runnable
	WaitFrozen  = "frozen"  // its cgroup is frozen (v1 freezer.state FROZEN, v2 cgroup.events frozen 1)
)

// Wait is a group of the job's processes on a host that wait alike.
type Wait struct {
	On      string `json:"on"`                // one of the Wait constants
	Syscall string `json:"syscall,omitempty"` // the system call's name, "recvfrom"; "" when running or unknown
	// FS is the file system type of the file waited on ("nfs", "lustre",
	// "ext4"), for On == WaitFile, and of a named FIFO for On == WaitPipe
	// ("" for an anonymous pipe).
	FS string `json:"fs,omitempty"`
	// Peer is the other end's address (no port) of the socket waited on,
	// or, for On == WaitPoll, of a socket of the process whose data is
	// being retransmitted; "" when not a TCP socket or not known.
	Peer string `json:"peer,omitempty"`
	// Retrans is set when data to Peer is unacknowledged and being
	// retransmitted (or zero-window probed): the other end does not answer.
	Retrans bool `json:"retrans,omitempty"`
	Procs   int  `json:"procs"` // how many processes wait so
}

// Waits is what the job's processes on one host wait on.
type Waits struct {
	Procs int `json:"procs"` // processes looked at
	// Frozen is how many of them are in a frozen cgroup.
	Frozen int    `json:"frozen,omitempty"`
	Waits  []Wait `json:"waits"` // the groups, most processes first
	// Skipped is how many processes were left out (vanished, unreadable,
	// or past the bound of one period).
	Skipped int `json:"skipped,omitempty"`
	// Trimmed is set when WaitsRecord left groups out to keep the line
	// within MaxWaitsLine.
	Trimmed bool `json:"trimmed,omitempty"`
	// RetransTo is every address (no port, sorted, at most MaxRetransTo)
	// to which data of the processes' TCP sockets is unacknowledged and
	// being retransmitted, whatever each process waits on: the links of
	// this host that do not answer.
	RetransTo []string `json:"retrans_to,omitempty"`
}

// MaxRetransTo bounds Waits.RetransTo.
const MaxRetransTo = 16

// WaitsRecord is the trace record of w, read on host for job at t. The
// groups with the fewest processes are left out first when the line would
// be longer than MaxWaitsLine.
func WaitsRecord(host, job string, t time.Time, w Waits) Sample {
	w.Waits = slices.Clone(w.Waits)
	b, _ := json.Marshal(w) // strings, ints and bools
	for len(b) > MaxWaitsLine && len(w.Waits) > 0 {
		w.Waits, w.Trimmed = w.Waits[:len(w.Waits)-1], true
		b, _ = json.Marshal(w)
	}
	return Sample{V: Version, Time: t, Host: host, Job: job, Log: &Log{Stream: StreamWaits, Line: string(b)}}
}

// ParseWaits reads the line of a StreamWaits record; false when it is not
// one (another version's, or damaged).
func ParseWaits(line string) (Waits, bool) {
	var w Waits
	if json.Unmarshal([]byte(line), &w) != nil || w.Waits == nil {
		return Waits{}, false
	}
	return w, true
}

// Retransmitted is every address the processes' data is being
// retransmitted to: RetransTo and each group's retransmitted Peer
// (records of older versions have only the latter), with repeats.
func (w Waits) Retransmitted() []string {
	out := slices.Clone(w.RetransTo)
	for _, g := range w.Waits {
		if g.Retrans && g.Peer != "" {
			out = append(out, g.Peer)
		}
	}
	return out
}
