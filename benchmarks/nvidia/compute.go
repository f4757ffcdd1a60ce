package nvidia

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/cuda"
	"github.com/vigil-hpc/vigil/cgo/dl"
)

// Reason tokens shared by the compute checks (most are those of every
// vendor's compute checks, package device).
const (
	// ReasonLibraryMissing: libcuda, cuBLASLt or NCCL could not be opened (unknown).
	ReasonLibraryMissing = device.ReasonLibraryMissing
	// ReasonNoDevices: the driver reports no device, or none of the job's (unknown).
	ReasonNoDevices = device.ReasonNoDevices
	// ReasonInvalidSettings: the check's [checks.NAME] section is invalid
	// (unknown); the framework's token, which every check uses.
	ReasonInvalidSettings = benchmarks.ReasonInvalidSettings
	// ReasonCheckerError: vigil itself could not run the measurement (unknown).
	ReasonCheckerError = device.ReasonCheckerError
	// ReasonDeviceFault: a device reported a fault while running work (fail).
	ReasonDeviceFault = device.ReasonDeviceFault
	// ReasonDeviceHung: work on a device did not finish by the deadline (fail).
	ReasonDeviceHung = device.ReasonDeviceHung
	// ReasonSingleDevice: a collective needs at least two devices (unknown).
	ReasonSingleDevice = device.ReasonSingleDevice
)

// nvidia is how the vendor-neutral checks (gemm, kernel-launch, copy, the
// collectives, overlap) speak of GPUs: "gpu3", "8 devices", faults as classify says, node-wide
// errors named "node", a deadline between measurements a hang.
var nvidia = &device.Vendor{
	Vendor:  benchmarks.VendorNVIDIA,
	DevName: devName,
	Noun:    "device",
	Count:   func(n int) string { return fmt.Sprintf("%d devices", n) },
	Classify: func(err error) (benchmarks.Status, string) {
		r := classify("", err)
		return r.Status, r.Reason
	},
	Reasons: []string{ReasonLibraryMissing, ReasonNoDevices, ReasonDeviceHung, ReasonDeviceFault, ReasonCheckerError},
	BadSettings: func(check string, err error) benchmarks.Result {
		return unknown(check, ReasonInvalidSettings, "%v", err)
	},
	NodeDevice: "node",
	StopIsHang: true,
}

// spec declares a CUDA check of settings S over the devices open opens
// with the libraries of [vendor.nvidia], with its shipped thresholds base.
func spec[S any](name, description string, defaults func() S, base Thresholds, open Opener) device.Common[S] {
	return device.Common[S]{Name: name, Description: description, Vendor: nvidia, Defaults: defaults, Base: base,
		Open: func(ctx context.Context, env *benchmarks.Env, devices []int) (device.Node, error) {
			libs, err := libraries(env)
			if err != nil {
				return nil, err
			}
			n, err := open(ctx, libs, devices)
			if err != nil {
				return nil, err // no typed nil in the interface
			}
			return n, nil
		}}
}

// libraries decodes [vendor.nvidia] of env over the shipped search.
func libraries(env *benchmarks.Env) (Libraries, error) {
	l := DefaultLibraries()
	err := devcheck.DecodeLibraries(env, &l)
	return l, err
}

func init() {
	benchmarks.RegisterLibraries(benchmarks.VendorNVIDIA, func() any { l := DefaultLibraries(); return &l })
}

// EnvLibraryPath lists extra directories (colon-separated) searched for the
// vendor libraries by every compute check, before the configured ones.
const EnvLibraryPath = "VIGIL_LIBRARY_PATH"

// Libraries says where the NVIDIA libraries are: the [vendor.nvidia]
// table, set once for every NVIDIA check.
type Libraries struct {
	// CUDA are candidate names or paths of the driver library.
	CUDA []string `toml:"cuda_libraries"`
	// CUBLASLt are candidate names or paths of cuBLASLt.
	CUBLASLt []string `toml:"cublaslt_libraries"`
	// NCCL are candidate names or paths of NCCL.
	NCCL []string `toml:"nccl_libraries"`
	// Paths are directories searched before the loader's own search.
	Paths []string `toml:"library_paths"`
	// PythonPrefixes are Python installation prefixes whose site-packages
	// may hold pip wheels of cuBLAS and NCCL (nvidia/cublas/lib, nvidia/nccl/lib).
	PythonPrefixes []string `toml:"python_prefixes"`
}

// DefaultLibraries are the shipped library settings.
func DefaultLibraries() Libraries {
	return Libraries{
		CUDA:           append([]string(nil), cuda.DefaultNames...),
		CUBLASLt:       []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"},
		NCCL:           []string{"libnccl.so.2", "libnccl.so"},
		PythonPrefixes: []string{"$VIRTUAL_ENV", "$CONDA_PREFIX", "/usr/local", "/usr", "/opt/conda"},
	}
}

// options builds the dl search for one library; pkg is the Python wheel
// directory name ("cublas", "nccl"; "" for none).
func (l Libraries) options(names []string, pkg string) dl.Options {
	var dirs []string
	if v := os.Getenv(EnvLibraryPath); v != "" {
		dirs = append(dirs, filepath.SplitList(v)...)
	}
	dirs = append(dirs, l.Paths...)
	if pkg != "" {
		var prefixes []string
		for _, p := range l.PythonPrefixes {
			if p = os.ExpandEnv(p); p != "" {
				prefixes = append(prefixes, p)
			}
		}
		dirs = append(dirs, dl.PythonDirs("/", prefixes, []string{pkg})...)
	}
	dirs = append(dirs, dl.DefaultDirs...)
	return dl.Options{Names: names, Dirs: dirs}
}

// Thresholds are per-device-model limits: model key → metric → limit
// (see devcheck.Thresholds for the matching rule).
type Thresholds = devcheck.Thresholds

// Peers configures the comparison of each device with the node's median.
type Peers = devcheck.Peers

func unknown(check, reason, format string, args ...any) benchmarks.Result {
	return benchmarks.Result{Check: check, Status: benchmarks.StatusUnknown, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// ErrHung is returned when ctx expired before the device finished.
var ErrHung = devcheck.ErrHung

// classify turns an error from the Node into a Result for a whole check.
func classify(check string, err error) benchmarks.Result {
	switch {
	case errors.Is(err, dl.ErrNotFound), errors.Is(err, dl.ErrSymbol):
		return unknown(check, ReasonLibraryMissing, "%v", err)
	case errors.Is(err, ErrNoDevices):
		return unknown(check, ReasonNoDevices, "%v", err)
	case errors.Is(err, ErrHung):
		return benchmarks.Result{Check: check, Status: benchmarks.StatusFail, Reason: ReasonDeviceHung, Message: err.Error()}
	case errors.Is(err, cuda.ErrDevice):
		return benchmarks.Result{Check: check, Status: benchmarks.StatusFail, Reason: ReasonDeviceFault, Message: err.Error()}
	}
	var ce *cuda.Error
	if errors.As(err, &ce) && (ce.Code == cuda.ErrNoDevice || ce.Code == cuda.ErrStubLibrary || ce.Code == cuda.ErrNotPermitted) {
		return unknown(check, ReasonNoDevices, "%v", err)
	}
	return unknown(check, ReasonCheckerError, "%v", err)
}

// devName is how results name device index i.
func devName(i int) string { return fmt.Sprintf("gpu%d", i) }
