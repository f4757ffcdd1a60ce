package sample

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/internal/vendors"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

func init() { RegisterOpener(vendors.SamplerNVML, openNVML) }

// openNVML samples the job's GPUs through NVML.
func openNVML(job Job) (Accelerators, func(), error) {
	lib := nvml.New()
	n, err := NewNVML(lib, nvmlDevices(lib, job.GPUs))
	if err != nil {
		return nil, nil, err
	}
	return n, func() { n.Close() }, nil
}

// nvmlDevices chooses the devices NVML should read: all it sees when that
// is as many as the job has (ConstrainDevices renumbers them from 0), else
// the job's GPU indexes (SLURM_JOB_GPUS).
func nvmlDevices(lib nvml.Interface, gpus []int) []string {
	if len(gpus) == 0 || lib.Init() != nvml.SUCCESS {
		return nil
	}
	defer lib.Shutdown()
	if count, ret := lib.DeviceGetCount(); ret == nvml.SUCCESS && count == len(gpus) {
		return nil
	}
	ids := make([]string, len(gpus))
	for i, g := range gpus {
		ids[i] = strconv.Itoa(g)
	}
	return ids
}

// ErrNVML is wrapped by the errors of the NVML source.
var ErrNVML = errors.New("sample: nvml")

// NVML reads NVIDIA devices through go-nvml: utilisation (utilization.gpu),
// memory used and power usage, and where the device tells them the SM
// clock, its maximum and the clock event reasons.
type NVML struct {
	lib     nvml.Interface
	ids     []string
	devices []nvml.Device
	maxSM   []int       // each device's maximum SM clock, MHz, once read; 0 before
	reasons reasonsFunc // reads the clock event reasons; nil when the library has none
	events  *NVMLEvents // the event set of Events, freed by Close
}

// reasonsFunc reads a device's clock event reasons.
type reasonsFunc func(nvml.Device) (uint64, nvml.Return)

// clockReasons says how to read the clock event reasons from lib: nil when
// its library lacks nvmlDeviceGetCurrentClocksEventReasons (drivers before
// R535, where the call had another name), so that the reasons stay absent.
// A symbol that is absent must never be called: go-nvml binds lazily, and
// the call would crash the watcher.
func clockReasons(lib nvml.Interface) reasonsFunc {
	if !hasSymbol(lib, "nvmlDeviceGetCurrentClocksEventReasons") {
		return nil
	}
	return func(d nvml.Device) (uint64, nvml.Return) { return d.GetCurrentClocksEventReasons() }
}

// hasSymbol reports whether lib's shared library exports name. A library
// that cannot say (go-nvml's mock without ExtensionsFunc) is taken to
// have it: a fake's calls never crash.
func hasSymbol(lib nvml.Interface, name string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = true
		}
	}()
	return lib.Extensions().LookupSymbol(name) == nil
}

// NewNVML initialises lib (nvml.New() in production, go-nvml's mock in
// tests) and looks up devices, each an index as NVML numbers them ("0") or a
// UUID ("GPU-..."). With no devices, every device NVML sees is sampled: in a
// Slurm job with ConstrainDevices that is the job's devices, numbered from 0.
// The reading's ID is the string given (or the index). Call Close when done.
func NewNVML(lib nvml.Interface, devices []string) (*NVML, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: init: %s", ErrNVML, errorString(lib, ret))
	}
	n := &NVML{lib: lib}
	if len(devices) == 0 {
		count, ret := lib.DeviceGetCount()
		if ret != nvml.SUCCESS {
			lib.Shutdown()
			return nil, fmt.Errorf("%w: device count: %s", ErrNVML, errorString(lib, ret))
		}
		for i := 0; i < count; i++ {
			devices = append(devices, strconv.Itoa(i))
		}
	}
	for _, id := range devices {
		var d nvml.Device
		var ret nvml.Return
		if i, err := strconv.Atoi(id); err == nil {
			d, ret = lib.DeviceGetHandleByIndex(i)
		} else if strings.HasPrefix(id, "GPU-") || strings.HasPrefix(id, "MIG-") {
			d, ret = lib.DeviceGetHandleByUUID(id)
		} else {
			lib.Shutdown()
			return nil, fmt.Errorf("%w: device %q: want an index or a UUID", ErrNVML, id)
		}
		if ret != nvml.SUCCESS {
			lib.Shutdown()
			return nil, fmt.Errorf("%w: device %s: %s", ErrNVML, id, errorString(lib, ret))
		}
		n.ids = append(n.ids, id)
		n.devices = append(n.devices, d)
	}
	n.maxSM = make([]int, len(n.devices))
	n.reasons = clockReasons(lib)
	return n, nil
}

// Close frees the event set of Events, if any, and shuts NVML down.
func (n *NVML) Close() error {
	n.events.Close()
	if ret := n.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("%w: shutdown: %s", ErrNVML, errorString(n.lib, ret))
	}
	return nil
}

// Sample reads every device. A device that fails is left out of the result
// and named in the error; a device without power readings
// (ERROR_NOT_SUPPORTED) reads 0 W. The clocks and clock event reasons are
// optional: what cannot be read is left 0 (absent from the trace), never
// an error.
func (n *NVML) Sample() ([]trace.Accel, error) {
	out := make([]trace.Accel, 0, len(n.devices))
	var errs []error
	for i, d := range n.devices {
		a := trace.Accel{ID: n.ids[i]}
		u, ret := d.GetUtilizationRates()
		if ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("device %s: utilization: %s", a.ID, errorString(n.lib, ret)))
			continue
		}
		a.Util = float64(u.Gpu)
		m, ret := d.GetMemoryInfo()
		if ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("device %s: memory: %s", a.ID, errorString(n.lib, ret)))
			continue
		}
		a.MemUsedMiB = float64(m.Used) / (1 << 20)
		mw, ret := d.GetPowerUsage()
		switch ret {
		case nvml.SUCCESS:
			a.PowerW = float64(mw) / 1000
		case nvml.ERROR_NOT_SUPPORTED:
		default:
			errs = append(errs, fmt.Errorf("device %s: power: %s", a.ID, errorString(n.lib, ret)))
			continue
		}
		n.clocks(i, d, &a)
		out = append(out, a)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%w: %w", ErrNVML, errors.Join(errs...))
	}
	return out, nil
}

// clocks reads device i's SM clock, its maximum (once: it does not change)
// and its clock event reasons into a, leaving 0 what cannot be read
// (ERROR_NOT_SUPPORTED on some parts, MIG devices, vGPUs).
func (n *NVML) clocks(i int, d nvml.Device, a *trace.Accel) {
	if mhz, ret := d.GetClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
		a.SMClockMHz = int(mhz)
	}
	if n.maxSM[i] == 0 {
		if mhz, ret := d.GetMaxClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
			n.maxSM[i] = int(mhz)
		}
	}
	a.SMClockMaxMHz = n.maxSM[i]
	if n.reasons != nil {
		if bits, ret := n.reasons(d); ret == nvml.SUCCESS {
			a.Throttle = bits
		}
	}
}

func errorString(lib nvml.Interface, ret nvml.Return) (s string) {
	defer func() {
		// A mock without ErrorStringFunc panics; fall back to the number.
		if recover() != nil {
			s = fmt.Sprintf("nvml return %d", int(ret))
		}
	}()
	return lib.ErrorString(ret)
}
