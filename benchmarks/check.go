// Package benchmarks holds vigil's node sanity suite: the Check interface, the
// registry that checks add themselves to from init(), the runner that gives each
// check a deadline (and a child process when it calls into vendor libraries), and
// the verdict rules.
package benchmarks

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Status is the outcome of a check. Only StatusFail ever drains a node.
type Status string

const (
	// StatusPass means the check ran and the node is fit.
	StatusPass Status = "pass"
	// StatusFail means the check ran and found a fault.
	StatusFail Status = "fail"
	// StatusUnknown means vigil could not tell: a library is missing, a
	// command is unavailable, or the checker itself failed.
	StatusUnknown Status = "unknown"
)

// Kind says whether a check reads facts or measures performance. Failed
// performance probes are retried before they count; health facts are not.
type Kind int

const (
	// KindHealth is a fact read from the node (device count, ECC, XID ...).
	KindHealth Kind = iota
	// KindPerf is a performance probe (GEMM, bandwidth, latency ...).
	KindPerf
)

// Value is one measured or read quantity of a check, usually for one device.
type Value struct {
	// Device names the device the value is about ("gpu3", "/scratch"); empty for the node.
	Device string `json:"device,omitempty"`
	// Name is what was measured ("tflops_bf16", "write_mib_s", "ecc_uncorrected").
	Name string `json:"name"`
	// Value is the reading, in Unit.
	Value float64 `json:"value"`
	// Unit of Value and Threshold ("TFLOPS", "MiB/s", "us", "count").
	Unit string `json:"unit,omitempty"`
	// Threshold is the limit Value was compared with, when there is one.
	Threshold *float64 `json:"threshold,omitempty"`
	// Op is how Value is compared with Threshold: ">=" (at least) or "<=" (at most).
	Op string `json:"op,omitempty"`
	// Status is this value's own verdict.
	Status Status `json:"status"`
}

// Result is what one run of a check found.
type Result struct {
	// Check is the check's registered name.
	Check string `json:"check"`
	// Status is the check's verdict.
	Status Status `json:"status"`
	// Reason is a stable CamelCase token (GEMMBelowThreshold); it goes into
	// the drain reason.
	Reason string `json:"reason,omitempty"`
	// Message is for people ("gpu3 412 TFLOPS < 600").
	Message string `json:"message,omitempty"`
	// Device is the device that caused a failure, if one did ("gpu3").
	Device string `json:"device,omitempty"`
	// Values are the per-device readings.
	Values []Value `json:"values,omitempty"`
	// Attempts is how many times the check ran (retries included).
	Attempts int `json:"attempts"`
	// Duration is the wall time of the last attempt.
	Duration time.Duration `json:"duration_ns"`
	// Components are the parts of the node the check identified (the
	// device-count checks and rdma list every part of their kind), so
	// that the Device names of results map to stable identities. They
	// travel from a checker child with the result; the run's report
	// carries them once, in report.Report.Components, and not in the
	// result. Never part of the verdict.
	Components []Component `json:"components,omitempty"`
}

// Check is one sanity check. Implementations live one per file and call
// Register from init().
type Check interface {
	// Spec describes the check: its name, kind, vendor, settings and
	// reasons, all it says about itself without running (Describe).
	Spec() Descriptor
	// Run performs the check. It must honour ctx's deadline where it can;
	// the runner enforces it regardless.
	Run(ctx context.Context, env *Env) Result
}

var (
	registryMu sync.Mutex
	registry   = map[string]Check{}
)

// Register adds a check to the registry. It is meant to be called from init()
// and panics on a check without a name or a description and on a duplicate
// name, which are programming errors.
func Register(c Check) {
	d := c.Spec()
	switch {
	case d.Name == "":
		panic("benchmarks: check without a name")
	case d.Description == "":
		panic("benchmarks: check " + d.Name + " without a description")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[d.Name]; dup {
		panic("benchmarks: duplicate check " + d.Name)
	}
	registry[d.Name] = c
}

// Lookup returns the registered check with the given name.
func Lookup(name string) (Check, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	c, ok := registry[name]
	return c, ok
}

// Names returns the names of all registered checks, sorted.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Env is what a check gets to work with on this node.
type Env struct {
	// Node is this node's Slurm name (SLURMD_NODENAME), or the host name.
	Node string
	// Addr is this node's address as the job's other nodes reach it
	// (Slurm's NodeAddr); set in the prolog's cross-node phase only.
	Addr string
	// JobID is the job being checked, empty outside a job.
	JobID string
	// Devices are the accelerator indices allocated to the job; nil means
	// every device on the node.
	Devices []int
	// GresGPUs is the GPU count the node's Slurm Gres declares; 0 when unknown.
	GresGPUs int
	// Settings decodes this check's own config table ([checks.NAME]) into v,
	// which holds the check's defaults beforehand. Nil means no config.
	Settings func(v any) error
	// Libraries decodes the [vendor.NAME] table of the check's vendor
	// (where its vendor libraries are) into v, which holds the vendor's
	// shipped library search beforehand. Nil means no config.
	Libraries func(v any) error
	// DryRun is set for vigil-prolog --dry-run: a check should then leave no
	// state behind (e.g. not advance a "since the last check" marker).
	DryRun bool
}
