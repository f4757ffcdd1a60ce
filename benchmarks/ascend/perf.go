package ascend

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/acl"
	"github.com/vigil-hpc/vigil/cgo/dcmi"
	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/hccl"
)

// Reason tokens of the Ascend compute checks beside those of every
// vendor's (package device: LibraryMissing, NoDevices, CheckerError,
// DeviceFault, DeviceHung, SingleDevice), so reports read alike.
const (
	// ReasonCollectiveLink: HCCL reports a link failure (RoCE/HCCS
	// connect or transfer error, remote error, timeout) (fail).
	ReasonCollectiveLink = "CollectiveLinkFailure"
)

// errNoDevices means ACL reports no device, or none of those asked for.
var errNoDevices = errors.New("no Ascend NPUs")

// Libraries says where the Ascend libraries are (CANN and the driver's
// DCMI): the [vendor.ascend] table, set once for every Ascend check.
type Libraries struct {
	// DCMI are candidate names or absolute paths of libdcmi.so.
	DCMI []string `toml:"dcmi_libraries"`
	// ACL are candidate names or paths of the runtime (libascendcl.so).
	ACL []string `toml:"acl_libraries"`
	// NNOpBase are candidates of libnnopbase.so (aclCreateTensor).
	NNOpBase []string `toml:"nnopbase_libraries"`
	// OpAPI are candidates of libopapi.so (aclnnMatmul).
	OpAPI []string `toml:"opapi_libraries"`
	// HCCL are candidates of libhccl.so.
	HCCL []string `toml:"hccl_libraries"`
	// Paths are directories searched before the CANN defaults and the loader.
	Paths []string `toml:"library_paths"`
}

// DefaultLibraries are the shipped library settings. $ASCEND_HOME_PATH
// (set by CANN's set_env.sh) is searched when set.
func DefaultLibraries() Libraries {
	return Libraries{
		DCMI:     append([]string(nil), dcmi.DefaultNames...),
		ACL:      append([]string(nil), acl.DefaultNames...),
		NNOpBase: append([]string(nil), acl.DefaultNNOpBaseNames...),
		OpAPI:    append([]string(nil), acl.DefaultOpAPINames...),
		HCCL:     append([]string(nil), hccl.DefaultNames...),
		Paths:    []string{"$ASCEND_HOME_PATH/lib64"},
	}
}

// options builds the search for one library.
func (l Libraries) options(names []string) dl.Options {
	var dirs []string
	if v := os.Getenv(EnvLibraryPath); v != "" {
		dirs = append(dirs, filepath.SplitList(v)...)
	}
	for _, p := range l.Paths {
		if p, ok := expandPath(p); ok {
			dirs = append(dirs, p)
		}
	}
	return dl.Options{Names: names, Dirs: dirs}
}

// expandPath expands $VAR references; a path that names an unset or empty
// variable is dropped (ok false), so "$ASCEND_HOME_PATH/lib64" never
// becomes "/lib64".
func expandPath(p string) (string, bool) {
	ok := true
	out := os.Expand(p, func(v string) string {
		s := os.Getenv(v)
		if s == "" {
			ok = false
		}
		return s
	})
	return out, ok && out != ""
}

// ascendNPUs is how the vendor-neutral checks (npu-gemm, npu-copy,
// npu-kernel-launch, the collectives, npu-overlap) speak of NPUs: "npu3", "8 NPUs", faults as
// classify says; a deadline between measurements leaves the check unknown,
// and a missing operator library ends npu-gemm at once.
var ascendNPUs = &device.Vendor{
	Vendor:              benchmarks.VendorAscend,
	DevName:             devName,
	Noun:                "NPU",
	Count:               func(n int) string { return fmt.Sprintf("%d %s", n, devcheck.Plural(n, "NPU")) },
	Classify:            classify,
	Reasons:             []string{device.ReasonLibraryMissing, device.ReasonNoDevices, device.ReasonDeviceHung, device.ReasonDeviceFault, ReasonCollectiveLink, device.ReasonCheckerError},
	BadSettings:         devcheck.BadSettings,
	UnknownDevice:       true,
	MissingLibraryStops: true,
}

// classify says whether an error of a device's (or the node's) measurement
// is a fault (device faults, hangs and collective link failures) or leaves
// the check unknown, and with which reason.
func classify(err error) (benchmarks.Status, string) {
	switch {
	case errors.Is(err, dl.ErrNotFound), errors.Is(err, dl.ErrSymbol):
		return benchmarks.StatusUnknown, device.ReasonLibraryMissing
	case errors.Is(err, errNoDevices), errors.Is(err, acl.ErrNoDevice):
		return benchmarks.StatusUnknown, device.ReasonNoDevices
	case errors.Is(err, devcheck.ErrHung):
		return benchmarks.StatusFail, device.ReasonDeviceHung
	case errors.Is(err, acl.ErrDevice):
		return benchmarks.StatusFail, device.ReasonDeviceFault
	case errors.Is(err, hccl.ErrLink):
		return benchmarks.StatusFail, ReasonCollectiveLink
	}
	return benchmarks.StatusUnknown, device.ReasonCheckerError
}

// libraries decodes [vendor.ascend] of env over the shipped search.
func libraries(env *benchmarks.Env) (Libraries, error) {
	l := DefaultLibraries()
	err := devcheck.DecodeLibraries(env, &l)
	return l, err
}

func init() {
	benchmarks.RegisterLibraries(benchmarks.VendorAscend, func() any { l := DefaultLibraries(); return &l })
}

// devName is how results name the NPU with logical id i.
func devName(i int) string { return fmt.Sprintf("npu%d", i) }
