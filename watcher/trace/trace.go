// Package trace holds vigil-watch's telemetry record: one JSON line per host
// per sample, format version 1.
//
// A line looks like
//
//	{"v":1,"time":"2026-11-29T10:00:00Z","host":"gpu01","job":"1234","io":{"rchar":0,"wchar":0,"read_bytes":0,"write_bytes":0},"cpu_usec":0,"procs":12,"procs_d":0,"accel":[{"id":"0","util":97,"mem_used_mib":70312,"power_w":612.5}]}
//
// Counters (io, cpu_usec) are cumulative over the job's current processes on
// the host, so they can drop when a process exits. Optional fields: "missing"
// (what could not be read for this sample), "cgroup_io", "io_pressure",
// "procs_t" and "cpu_throttled_usec" (omitted when 0), and per device "sm_clock_mhz",
// "sm_clock_max_mhz" and "throttle" (omitted when 0: not read, or no reason).
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
	"encoding/json"
	"errors"
	"strconv"
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
	// SMClockMHz is the current SM (core) clock, MHz; 0 (absent) when the
	// source does not read it.
	SMClockMHz int `json:"sm_clock_mhz,omitempty"`
	// SMClockMaxMHz is the SM clock's maximum, MHz; 0 (absent) when unknown.
	SMClockMaxMHz int `json:"sm_clock_max_mhz,omitempty"`
	// Throttle is the bitmask of the reasons that hold the clocks down at
	// the time of the reading (the Throttle bits, NVML's clocks event
	// reasons); 0 (absent) when none is active or the source cannot tell,
	// so its absence is never evidence.
	Throttle uint64 `json:"throttle,omitempty"`
}

// The bits of Accel.Throttle, as NVML numbers its clocks event (formerly
// throttle) reasons in nvml.h.
const (
	ThrottleGpuIdle                   uint64 = 1 << 0 // nothing runs; the clocks idle
	ThrottleApplicationsClocksSetting uint64 = 1 << 1 // held at the application clocks set
	ThrottleSwPowerCap                uint64 = 1 << 2 // the power limit holds the clocks down
	ThrottleHwSlowdown                uint64 = 1 << 3 // hardware slowdown (temperature, power brake, supply)
	ThrottleSyncBoost                 uint64 = 1 << 4 // held to a synchronised boost group's clocks
	ThrottleSwThermalSlowdown         uint64 = 1 << 5 // the driver slows the clocks for temperature
	ThrottleHwThermalSlowdown         uint64 = 1 << 6 // hardware thermal slowdown
	ThrottleHwPowerBrakeSlowdown      uint64 = 1 << 7 // the external power brake assertion
	ThrottleDisplayClockSetting       uint64 = 1 << 8 // held at the display clock setting
	// ThrottleSlowdown are the reasons that say a device is slowed down by
	// heat or power trouble, not by normal operation (idle, application
	// clocks, sync boost, the power cap): what makes a straggler.
	ThrottleSlowdown = ThrottleHwSlowdown | ThrottleSwThermalSlowdown | ThrottleHwThermalSlowdown | ThrottleHwPowerBrakeSlowdown
)

// throttleNames are the short names of the Throttle bits, in bit order.
var throttleNames = []string{"GpuIdle", "ApplicationsClocksSetting", "SwPowerCap", "HwSlowdown", "SyncBoost",
	"SwThermalSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown", "DisplayClockSetting"}

// ThrottleNames names the bits set in bits, in bit order; a bit without a
// name reads "bitN".
func ThrottleNames(bits uint64) []string {
	var out []string
	for i := 0; bits != 0; i++ {
		if bits&1 != 0 {
			if i < len(throttleNames) {
				out = append(out, throttleNames[i])
			} else {
				out = append(out, "bit"+strconv.Itoa(i))
			}
		}
		bits >>= 1
	}
	return out
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
	// ProcsT is how many of the job's processes are stopped or traced
	// (state T or t: SIGSTOP, job control, a debugger); 0 is not written,
	// and traces without it read 0.
	ProcsT int `json:"procs_t,omitempty"`
	// CPUThrottledUsec is the cumulative time the job's cgroups were held
	// back by their CPU quota (v2 cpu.stat throttled_usec, v1 cpu.stat
	// throttled_time), microseconds; 0 is not written, and traces without
	// it read 0.
	CPUThrottledUsec uint64  `json:"cpu_throttled_usec,omitempty"`
	Accel            []Accel `json:"accel"` // one reading per accelerator of the job; empty without accelerators
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
	// StreamLost marks a watcher's word that the job's coordinator
	// stopped answering without saying it stops (no tick for the
	// takeover's wait: its node is down or cut off from this one, or its
	// watcher died): Line is a Lost as JSON. The record is the watcher's
	// own, never a line of the job. Older readers see a line that matches
	// nothing.
	StreamLost = "lost"
)

// Lost is the line of a StreamLost record.
type Lost struct {
	Host string `json:"host"`           // the node whose watcher was lost
	Addr string `json:"addr,omitempty"` // its address, as it announced it at the meeting (no port)
	// Unreachable is set when the node's address did not answer a TCP
	// connection (to the meeting's port) within the probe's time: its
	// kernel does not answer, so the node is down or cut off from this
	// one; a node whose kernel answers (a refused or accepted connection)
	// is reachable, only its watcher is gone.
	Unreachable bool `json:"unreachable,omitempty"`
	// AfterS is the longest the record's watcher waits for its tick
	// (the takeover's periods), in seconds: it heard nothing from it for
	// at most that long (at once when the connection was reset).
	AfterS float64 `json:"after_s"`
}

// LostRecord is the record, read on host for job at t, that l.Host's
// watcher was lost.
func LostRecord(host, job string, t time.Time, l Lost) Sample {
	b, _ := json.Marshal(l) // strings and a number
	return Sample{V: Version, Time: t, Host: host, Job: job, Log: &Log{Stream: StreamLost, Line: string(b)}}
}

// ParseLost reads the line of a StreamLost record; false when it is not
// one or names no host.
func ParseLost(line string) (Lost, bool) {
	var l Lost
	if json.Unmarshal([]byte(line), &l) != nil || l.Host == "" {
		return Lost{}, false
	}
	return l, true
}

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
