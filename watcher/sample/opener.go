package sample

import (
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/watcher/trace"

	"github.com/vigil-hpc/vigil/internal/vendors"
)

// Job is what an opener needs to know of the job to choose its devices.
type Job struct {
	// GPUs are the job's GPU indexes (SLURM_JOB_GPUS); nil when unknown.
	GPUs []int
	// Lookup reads the job's environment (ASCEND_RT_VISIBLE_DEVICES ...).
	Lookup func(string) (string, bool)
}

// DeviceEvents gives the device faults reported since its last call
// (*NVMLEvents, *DCMIFaults). It never waits on events.
type DeviceEvents interface {
	Poll() ([]trace.DeviceEvent, error)
}

// FaultReporter is implemented by a sampler whose library reports its
// devices' faults itself (NVML's events, DCMI's error codes and ECC
// counts): the watcher follows them as device events.
type FaultReporter interface {
	// DeviceFaults starts following the devices' faults, says so (or what
	// could not be followed) on log, and returns them; nil when none can
	// be followed.
	DeviceFaults(log logrus.FieldLogger) DeviceEvents
}

// Opener opens one vendor's sampler over the job's devices; the func it
// returns closes it.
type Opener func(job Job) (Accelerators, func(), error)

var (
	openersMu sync.Mutex
	openers   = map[vendors.Sampler]Opener{}
)

// RegisterOpener makes o the opener of sampler s, the sampler a row of the
// vendor table names (vendors.Row.Sampler). Each sampler's file calls it
// from init(); a second opener of one sampler panics, a programming error.
func RegisterOpener(s vendors.Sampler, o Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[s]; dup {
		panic("sample: two openers of sampler " + string(s))
	}
	openers[s] = o
}

// OpenerOf returns the opener of sampler s, false when none is registered.
func OpenerOf(s vendors.Sampler) (Opener, bool) {
	openersMu.Lock()
	defer openersMu.Unlock()
	o, ok := openers[s]
	return o, ok
}
