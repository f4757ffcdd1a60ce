package hang

import (
	"time"
)

// Event kinds.
const (
	EventSuspect   = "suspect"   // the job's I/O made no progress over the window
	EventHung      = "hung"      // suspect, and resource usage flat over the window
	EventRecovered = "recovered" // I/O progressed again after suspect or hung
	EventStraggler = "straggler" // a host holds its progressing peers back (the straggler rule)
)

// Reasons: stable tokens for logs, job comments and reports.
const (
	// ReasonNoIOProgress: I/O below Config.IOBytes over the whole window.
	ReasonNoIOProgress = "NoIOProgress"
	// ReasonUsageNotFlat: a hung host's usage is no longer flat (back to suspect).
	ReasonUsageNotFlat = "UsageNotFlat"
	// ReasonFlatUsageStuckCollective: every device flat at high utilisation
	// with low power, the signature of a spinning collective.
	ReasonFlatUsageStuckCollective = "FlatUsageStuckCollective"
	// ReasonFlatUsageIdle: every device flat at (near) zero utilisation, the
	// signature of a deadlocked loader or of processes that are gone.
	ReasonFlatUsageIdle = "FlatUsageIdle"
	// ReasonFlatUsageMixed: every device flat, some high and some idle.
	ReasonFlatUsageMixed = "FlatUsageMixed"
	// ReasonFlatUsage: every device flat at a level between idle and high.
	ReasonFlatUsage = "FlatUsage"
	// ReasonFlatCPUIdle: no accelerators, and the job's CPU rate is flat and idle.
	ReasonFlatCPUIdle = "FlatCPUIdle"
	// ReasonFlatCPUSpin: no accelerators, the CPU rate is flat and not idle,
	// and Config.CPUSpinIsHang is set.
	ReasonFlatCPUSpin = "FlatCPUSpin"
	// ReasonIOProgress: I/O reached Config.IOBytes over the window again.
	ReasonIOProgress = "IOProgress"
)

// Event is one change of a host's state. Its JSON form is one line of
// `vigil-watch replay` output:
//
//	{"time":"...","host":"gpu01","job":"1234","event":"hung","reason":"FlatUsageStuckCollective","message":"...","evidence":{...}}
//
// Evidence keys (all events): "io_bytes" (I/O progress over the window,
// bytes), "io_threshold" (Config.IOBytes), "window_s", "coverage" (fraction
// of expected samples present), "procs", "procs_d" (latest sample),
// "cgroup_io_bytes" (when the cgroup exposes block I/O); suspect and hung add
// "since" (RFC 3339: since when the I/O stayed below the threshold); hung
// (and a suspect that leaves hung) add "devices" (a list of DeviceStats),
// "cpu_cores_median" and "cpu_cores_stddev" (CPU rate over the window, cores).
type Event struct {
	Time     time.Time      `json:"time"`              // time of the sample that caused the event
	Host     string         `json:"host"`              // node name
	Job      string         `json:"job,omitempty"`     // Slurm job id
	Event    string         `json:"event"`             // EventSuspect, EventHung, EventRecovered or EventStraggler
	Reason   string         `json:"reason"`            // stable token, one of the Reason constants
	Message  string         `json:"message,omitempty"` // for people
	Evidence map[string]any `json:"evidence"`          // see above
	// Since is, on suspect and hung events, since when the I/O stayed
	// below the threshold: the newest sample that showed progress (the
	// evidence's "since", at full precision); zero otherwise.
	Since time.Time `json:"-"`
}

// DeviceStats summarises one accelerator over the window (evidence of hung).
type DeviceStats struct {
	ID           string  `json:"id"`
	Samples      int     `json:"samples"`        // readings in the window
	UtilMedian   float64 `json:"util_median"`    // percent
	UtilStddev   float64 `json:"util_stddev"`    // percentage points
	UtilMAD      float64 `json:"util_mad"`       // median absolute deviation, percentage points
	PowerMedianW float64 `json:"power_median_w"` // watts
	PowerStddevW float64 `json:"power_stddev_w"` // watts
	MemChangeMiB float64 `json:"mem_change_mib"` // max-min of memory used, MiB
	Flat         bool    `json:"flat"`           // whether the device counts as flat
	Why          string  `json:"why,omitempty"`  // why not flat
}
