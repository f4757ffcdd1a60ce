package health

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/internal/pci"
)

// errLibraryNotFound means libnvidia-ml.so.1 could not be loaded: no NVIDIA
// driver is installed on this node.
var errLibraryNotFound = errors.New("libnvidia-ml.so.1 not found")

// ErrDriverNotLoaded means libnvidia-ml.so.1 is installed but the NVIDIA
// kernel driver is not loaded.
var ErrDriverNotLoaded = errors.New("NVIDIA driver not loaded")

// library opens NVML at most once and hands the same handle to every check
// of the process.
type library struct {
	open func() nvml.Interface

	mu     sync.Mutex
	opened bool
	lib    nvml.Interface
	err    error
}

// shared is the process-wide NVML session used by the registered checks.
var shared = &library{open: func() nvml.Interface { return nvml.New() }}

// nvmlCheck is what the NVML checks share: the NVML session. Their place
// in the registry is nvmlFact's (health checks of NVIDIA GPUs, run in a
// child: NVML calls go to the driver and can hang on a sick GPU).
type nvmlCheck struct{ lib *library }

// nvmlFact returns d as an NVML check's descriptor: a health fact of
// NVIDIA GPUs, isolated, in the default suite.
func nvmlFact(d benchmarks.Descriptor) benchmarks.Descriptor {
	d.Kind, d.Vendor, d.Isolated, d.Default = benchmarks.KindHealth, benchmarks.VendorNVIDIA, true, true
	return d
}

// get initialises NVML on first use and returns the handle, or the reason it
// cannot be used (wrapping errLibraryNotFound or ErrDriverNotLoaded where
// that is the cause). Init is not retried within a process.
func (l *library) get() (nvml.Interface, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.opened {
		l.opened = true
		lib := l.open()
		if ret := lib.Init(); ret != nvml.SUCCESS {
			l.err = initError(ret)
		} else {
			l.lib = lib
		}
	}
	return l.lib, l.err
}

func initError(ret nvml.Return) error {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return errLibraryNotFound
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return fmt.Errorf("%w: %w", ErrDriverNotLoaded, ret)
	}
	return fmt.Errorf("nvml init: %w", ret)
}

// deviceProcs lists the compute and graphics processes of one device; a
// device that does not support the graphics list is not an error.
func deviceProcs(dev nvml.Device) ([]nvml.ProcessInfo, error) {
	compute, ret := dev.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("compute processes: %w", ret)
	}
	graphics, ret := dev.GetGraphicsRunningProcesses()
	if ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_SUPPORTED {
		return compute, fmt.Errorf("graphics processes: %w", ret)
	}
	out := append([]nvml.ProcessInfo(nil), compute...)
	for _, g := range graphics {
		dup := false
		for _, c := range compute {
			if c.Pid == g.Pid {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, g)
		}
	}
	return out, nil
}

// deviceIndices returns devices, or every index NVML knows when devices is nil.
func deviceIndices(lib nvml.Interface, devices []int) ([]int, error) {
	if devices != nil {
		return devices, nil
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("device count: %w", ret)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out, nil
}

// gpu is one device a check inspects.
type gpu struct {
	index int
	dev   nvml.Device
	// name is the NVML product name ("NVIDIA H100 80GB HBM3"); empty when
	// it could not be read.
	name string
	// ret is why the device handle could not be obtained (SUCCESS when it was).
	ret nvml.Return
}

// id is the device's name in results ("gpu3").
func (g gpu) id() string { return fmt.Sprintf("gpu%d", g.index) }

// selectGPUs returns the devices a check inspects: the job's devices when
// env.Devices is set, every device otherwise. A device whose handle cannot
// be obtained is returned with ret set.
func selectGPUs(lib nvml.Interface, env *benchmarks.Env) ([]gpu, error) {
	var want []int
	if env != nil {
		want = env.Devices
	}
	indices, err := deviceIndices(lib, want)
	if err != nil {
		return nil, err
	}
	gpus := make([]gpu, 0, len(indices))
	for _, i := range indices {
		g := gpu{index: i}
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			g.ret = ret
		} else {
			g.dev = dev
			if name, ret := dev.GetName(); ret == nvml.SUCCESS {
				g.name = name
			}
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// Reason tokens shared by the NVML checks.
const (
	// ReasonNVMLLibraryNotFound: libnvidia-ml.so.1 is not installed (unknown).
	ReasonNVMLLibraryNotFound = "NVMLLibraryNotFound"
	// ReasonNVMLDriverNotLoaded: the NVIDIA kernel driver is not loaded (unknown).
	ReasonNVMLDriverNotLoaded = "NVMLDriverNotLoaded"
	// ReasonGPULost: NVML says the device fell off the bus or became
	// inaccessible (ERROR_GPU_IS_LOST); a fault.
	ReasonGPULost = "GPULost"
	// ReasonNVMLError: an NVML call failed (unknown).
	ReasonNVMLError = "NVMLError"
	// ReasonNotSupported: the device does not report this fact (unknown).
	ReasonNotSupported = "NotSupported"
)

// nvmlReasons are the tokens every per-device NVML check can give: NVML
// missing or failing (nvmlUnavailable, classifyNVML) and a device lost.
func nvmlReasons() []string {
	return []string{ReasonNVMLLibraryNotFound, ReasonNVMLDriverNotLoaded, ReasonNVMLError, ReasonNotSupported, ReasonGPULost}
}

// openGPUs is the common start of every per-device NVML check: open NVML
// and select the devices. On failure it returns the unknown result to
// report.
func openGPUs(l *library, name string, env *benchmarks.Env) ([]gpu, *benchmarks.Result) {
	lib, err := l.get()
	if err != nil {
		r := nvmlUnavailable(name, err)
		return nil, &r
	}
	gpus, err := selectGPUs(lib, env)
	if err != nil {
		return nil, &benchmarks.Result{Check: name, Status: benchmarks.StatusUnknown,
			Reason: ReasonNVMLError, Message: err.Error()}
	}
	if len(gpus) == 0 {
		return nil, &benchmarks.Result{Check: name, Status: benchmarks.StatusPass,
			Message: "no NVIDIA devices found"}
	}
	return gpus, nil
}

// eachGPU runs a per-device NVML check: it decodes and validates the
// settings s (holding the defaults), opens NVML, selects the devices, and
// calls read for every device whose handle it got, until ctx ends; a device
// without a handle is recorded through LibErr. pass is the message of a
// pass, with a %d for the number of devices.
func eachGPU(ctx context.Context, l *library, name string, env *benchmarks.Env, s checkSettings, pass string, read func(t *devcheck.Tally, g gpu)) benchmarks.Result {
	if err := loadSettings(env, s); err != nil {
		return devcheck.BadSettings(name, err)
	}
	gpus, res := openGPUs(l, name, env)
	if res != nil {
		return *res
	}
	t := newTally(name)
	for _, g := range gpus {
		if t.Canceled(ctx) {
			break
		}
		if g.ret != nvml.SUCCESS {
			t.LibErr(g.id(), "device handle", g.ret)
			continue
		}
		read(t, g)
	}
	return t.Result(fmt.Sprintf(pass, len(gpus)))
}

// nvmlUnavailable is the unknown result of a check that could not open NVML.
func nvmlUnavailable(name string, err error) benchmarks.Result {
	r := benchmarks.Result{Check: name, Status: benchmarks.StatusUnknown, Reason: ReasonNVMLError,
		Message: "NVML unavailable: " + err.Error()}
	switch {
	case errors.Is(err, errLibraryNotFound):
		r.Reason = ReasonNVMLLibraryNotFound
		r.Message = "no NVIDIA devices found (libnvidia-ml.so.1 not found)"
	case errors.Is(err, ErrDriverNotLoaded):
		r.Reason = ReasonNVMLDriverNotLoaded
		r.Message = err.Error()
	}
	return r
}

// newTally returns the tally of a check: what it found per device, turned
// into a Result; its LibErr sorts NVML's errors (classifyNVML).
func newTally(check string) *devcheck.Tally {
	return &devcheck.Tally{Check: check, Classify: classifyNVML}
}

// classifyNVML sorts a failed NVML call (err an nvml.Return): unknown for
// the device, except ERROR_GPU_IS_LOST, which is itself the fact that the
// device is gone.
func classifyNVML(device, what string, err error) (lost bool, reason, message string) {
	ret, _ := err.(nvml.Return)
	switch ret {
	case nvml.ERROR_NOT_SUPPORTED:
		return false, ReasonNotSupported, fmt.Sprintf("%s %s not supported", device, what)
	case nvml.ERROR_GPU_IS_LOST:
		return true, ReasonGPULost, fmt.Sprintf("%s lost: fell off the bus or became inaccessible (%s)", device, what)
	default:
		return false, ReasonNVMLError, fmt.Sprintf("%s %s: %v", device, what, err)
	}
}

// checkSettings is a check's settings struct: Validate reports out-of-range
// values (the framework may call it too, after decoding the defaults).
type checkSettings interface{ Validate() error }

// loadSettings decodes the check's config table over s, which holds the
// defaults, and validates the result.
func loadSettings(env *benchmarks.Env, s checkSettings) error {
	if err := devcheck.Decode(env, s); err != nil {
		return err
	}
	return s.Validate()
}

// busID turns NVML's fixed-size bus id into a normalised PCI address
// ("0000:3b:00.0"): lower case, four-digit domain.
func busID(p nvml.PciInfo) string {
	b := make([]byte, 0, len(p.BusId))
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return pci.Normalise(string(b))
}
