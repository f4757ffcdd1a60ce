package nvidia

import (
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
	Reasons: []string{device.ReasonLibraryMissing, device.ReasonNoDevices, device.ReasonDeviceHung, device.ReasonDeviceFault, device.ReasonCheckerError},
	BadSettings: func(check string, err error) benchmarks.Result {
		return unknown(check, benchmarks.ReasonInvalidSettings, "%v", err)
	},
	NodeDevice: "node",
	StopIsHang: true,
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

func unknown(check, reason, format string, args ...any) benchmarks.Result {
	return benchmarks.Result{Check: check, Status: benchmarks.StatusUnknown, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// classify turns an error from the Node into a Result for a whole check.
func classify(check string, err error) benchmarks.Result {
	switch {
	case errors.Is(err, dl.ErrNotFound), errors.Is(err, dl.ErrSymbol):
		return unknown(check, device.ReasonLibraryMissing, "%v", err)
	case errors.Is(err, errNoDevices):
		return unknown(check, device.ReasonNoDevices, "%v", err)
	case errors.Is(err, devcheck.ErrHung):
		return benchmarks.Result{Check: check, Status: benchmarks.StatusFail, Reason: device.ReasonDeviceHung, Message: err.Error()}
	case errors.Is(err, cuda.ErrDevice):
		return benchmarks.Result{Check: check, Status: benchmarks.StatusFail, Reason: device.ReasonDeviceFault, Message: err.Error()}
	}
	var ce *cuda.Error
	if errors.As(err, &ce) && (ce.Code == cuda.ErrNoDevice || ce.Code == cuda.ErrStubLibrary || ce.Code == cuda.ErrNotPermitted) {
		return unknown(check, device.ReasonNoDevices, "%v", err)
	}
	return unknown(check, device.ReasonCheckerError, "%v", err)
}

// devName is how results name device index i.
func devName(i int) string { return fmt.Sprintf("gpu%d", i) }
