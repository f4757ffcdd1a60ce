// Package trace holds vigil-watch's telemetry record: one JSON line per host
// per sample, format version 1.
//
// A line looks like
//
//	{"v":1,"time":"2026-11-29T10:00:00Z","host":"gpu01","job":"1234","io":{"rchar":0,"wchar":0,"read_bytes":0,"write_bytes":0},"cpu_usec":0,"procs":12,"procs_d":0,"accel":[{"id":"0","util":97,"mem_used_mib":70312,"power_w":612.5}]}
//
// Counters (io, cpu_usec) are cumulative over the job's current processes on
// the host, so they can drop when a process exits. Optional fields: "missing"
// (what could not be read for this sample), "cgroup_io" and "io_pressure".
// A second kind of record carries a matched line of the job's output or of
// the kernel log, so that a replay sees the evidence the live watcher saw:
//
//	{"v":1,"time":"2026-11-29T10:31:07Z","host":"gpu03","job":"1234","log":{"stream":"kmsg","line":"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."}}
//
// A record with "log" is a log record (Sample.Log is set; its telemetry
// fields are zero and mean nothing); traces without log records read as
// before.
//
// Readers ignore fields they do not know, so later writers may add fields
// without a new version; a change of meaning needs a new version, which
// readers of version 1 reject with ErrVersion.
//
// The Writer and Reader encode and decode by hand (no reflection): a replay of
// hundreds of hosts over days of samples is millions of lines.
package trace

import (
	"errors"
	"time"
)

// Version is the trace format version this package writes and reads.
const Version = 1

// ErrVersion is returned (wrapped, naming the line) for a line whose "v" is
// not Version.
var ErrVersion = errors.New("unsupported format version")

// ErrSyntax is returned (wrapped, naming the line) for a line that is not a
// valid version-1 sample.
var ErrSyntax = errors.New("bad sample")

// IO holds cumulative I/O counters in bytes, summed over the job's processes
// on one host, as read from /proc/PID/io.
type IO struct {
	RChar      uint64 `json:"rchar"`       // bytes read through read(2) and similar, any file system, bytes
	WChar      uint64 `json:"wchar"`       // bytes written through write(2) and similar, bytes
	ReadBytes  uint64 `json:"read_bytes"`  // bytes fetched from block storage, bytes
	WriteBytes uint64 `json:"write_bytes"` // bytes sent to block storage, bytes
}

// Total is the sum of the four counters, in bytes.
func (io IO) Total() uint64 { return io.RChar + io.WChar + io.ReadBytes + io.WriteBytes }

// Accel is one accelerator's reading.
type Accel struct {
	ID         string  `json:"id"`           // device id as the job knows it (index or UUID)
	Util       float64 `json:"util"`         // utilisation, percent 0..100
	MemUsedMiB float64 `json:"mem_used_mib"` // device memory in use, MiB
	PowerW     float64 `json:"power_w"`      // power draw, watts
}

// CgroupIO holds cumulative block I/O of the job's cgroup, from cgroup v2
// io.stat or cgroup v1 blkio.throttle.io_service_bytes, in bytes.
type CgroupIO struct {
	ReadBytes  uint64 `json:"rbytes"` // bytes read from block devices, bytes
	WriteBytes uint64 `json:"wbytes"` // bytes written to block devices, bytes
}

// Pressure holds the cumulative stall times of a cgroup's io.pressure file,
// in microseconds.
type Pressure struct {
	SomeUsec uint64 `json:"some_usec"` // time at least one task stalled on I/O, microseconds
	FullUsec uint64 `json:"full_usec"` // time all non-idle tasks stalled on I/O, microseconds
}

// Sample is one host's reading of the job at one time.
type Sample struct {
	V       int       `json:"v"`        // format version, Version
	Time    time.Time `json:"time"`     // when the sample was taken
	Host    string    `json:"host"`     // node name
	Job     string    `json:"job"`      // Slurm job id
	IO      IO        `json:"io"`       // cumulative I/O of the job's processes
	CPUUsec uint64    `json:"cpu_usec"` // cumulative CPU time of the job, microseconds
	Procs   int       `json:"procs"`    // number of the job's processes
	ProcsD  int       `json:"procs_d"`  // of which in uninterruptible sleep (state D)
	Accel   []Accel   `json:"accel"`    // one reading per accelerator of the job; empty without accelerators
	// Missing names what could not be read for this sample. Conventions:
	// "io" (no process's I/O could be read), "io:PID" (one process's),
	// "io:+N" (N more not listed), "stat:PID", "cpu", "accel", "accel:ID",
	// "cgroup_io", "pids".
	Missing []string `json:"missing,omitempty"`
	// CgroupIO is the cgroup's block I/O where the cgroup exposes it.
	CgroupIO *CgroupIO `json:"cgroup_io,omitempty"`
	// IOPressure is the cgroup's io.pressure where it exists.
	IOPressure *Pressure `json:"io_pressure,omitempty"`
	// Log, when set, makes this a log record: a matched line, not a
	// reading. Only V, Time, Host and Job are meaningful beside it.
	Log *Log `json:"log,omitempty"`
}

// Streams a log record's line comes from.
const (
	StreamStdout = "stdout" // the job's standard output file
	StreamStderr = "stderr" // the job's standard error file
	StreamKmsg   = "kmsg"   // the kernel log (XID events, ECC errors)
	// StreamLayout marks the record of the job step's layout (which host
	// holds which task and rank, joblog.Layout as JSON in Line), that
	// attributes the job's output lines to the hosts that printed them.
	// Older readers see a log line that matches nothing.
	StreamLayout = "layout"
	// StreamEnd marks the record a watcher writes when it stops (the job
	// left its node, or it was signalled as Slurm does at the job's end):
	// Line is an End as JSON. Older readers see a line that matches nothing.
	StreamEnd = "end"
)

// End is the line of a StreamEnd record.
type End struct {
	// Role is the watcher's part in the job's meeting when it stopped:
	// RoleCoordinator, RoleMember or RoleLone. The end of the job's
	// coordinator (or of a lone watcher) is the end of the job's view.
	Role string `json:"role"`
	Why  string `json:"why"` // EndSignalled or EndJobGone
}

// Roles and reasons of an End.
const (
	RoleCoordinator = "coordinator"
	RoleMember      = "member"
	RoleLone        = "lone"
	EndSignalled    = "signalled"
	EndJobGone      = "job-gone"
)

// Log is one matched line of the job's output or of the kernel log.
type Log struct {
	Stream string `json:"stream"` // StreamStdout, StreamStderr or StreamKmsg
	Line   string `json:"line"`   // the line, without its newline
}

// IsLog reports whether s is a log record rather than a reading.
func (s *Sample) IsLog() bool { return s.Log != nil }

// HasMissing reports whether Missing holds exactly the entry m.
func (s *Sample) HasMissing(m string) bool {
	for _, x := range s.Missing {
		if x == m {
			return true
		}
	}
	return false
}
