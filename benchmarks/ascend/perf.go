package ascend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/compute"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/acl"
	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/hccl"
)

// Reason tokens of the Ascend compute checks (the same tokens the CUDA
// checks use, so reports read alike).
const (
	// ReasonNoDevices: ACL reports no device, or none of the job's (unknown).
	ReasonNoDevices = compute.ReasonNoDevices
	// ReasonCheckerError: vigil itself could not run the measurement (unknown).
	ReasonCheckerError = compute.ReasonCheckerError
	// ReasonDeviceFault: a device reported a fault while running work (fail).
	ReasonDeviceFault = compute.ReasonDeviceFault
	// ReasonDeviceHung: work on a device did not finish by the deadline (fail).
	ReasonDeviceHung = compute.ReasonDeviceHung
	// ReasonSingleDevice: a collective needs at least two devices (unknown).
	ReasonSingleDevice = compute.ReasonSingleDevice
	// ReasonCollectiveLink: HCCL reports a link failure (RoCE/HCCS
	// connect or transfer error, remote error, timeout) (fail).
	ReasonCollectiveLink = "CollectiveLinkFailure"
)

// ErrNoDevices means ACL reports no device, or none of those asked for.
var ErrNoDevices = errors.New("no Ascend NPUs")

// Libraries says where the CANN libraries are. Every Ascend compute check's
// settings carry these keys.
type Libraries struct {
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

// evaluate records in t each reading's value and its comparison (higher
// is better) with its model's limit and with the node's median
// (devcheck.Evaluate), like the CUDA checks: a device below its floor fails
// with prefix+"BelowThreshold", one below Fraction × median with
// prefix+"BelowPeers".
func evaluate(t *tally, m devcheck.Metric, prefix string, rs []devcheck.Reading, th compute.Thresholds, p compute.Peers) {
	vals, fs := devcheck.Evaluate(m, rs, th, p)
	t.Values = append(t.Values, vals...)
	for _, f := range fs {
		t.Fail(f.Device, f.Reason(m, prefix), "%s", f.Message)
	}
}

// classify records an error of a device's (or the node's) measurement: a
// fault for device faults, hangs and collective link failures, unknown
// otherwise.
func classify(t *tally, device string, err error) {
	prefix := ""
	if device != "" {
		prefix = device + ": "
	}
	switch {
	case errors.Is(err, dl.ErrNotFound), errors.Is(err, dl.ErrSymbol):
		t.Unknown(device, ReasonLibraryMissing, "%s%v", prefix, err)
	case errors.Is(err, ErrNoDevices), errors.Is(err, acl.ErrNoDevice):
		t.Unknown(device, ReasonNoDevices, "%s%v", prefix, err)
	case errors.Is(err, devcheck.ErrHung):
		t.Fail(device, ReasonDeviceHung, "%s%v", prefix, err)
	case errors.Is(err, acl.ErrDevice):
		t.Fail(device, ReasonDeviceFault, "%s%v", prefix, err)
	case errors.Is(err, hccl.ErrLink):
		t.Fail(device, ReasonCollectiveLink, "%s%v", prefix, err)
	default:
		t.Unknown(device, ReasonCheckerError, "%s%v", prefix, err)
	}
}

// openNode opens the node's NPUs under ctx's deadline; the returned result
// is non-nil when that failed.
func openNode(ctx context.Context, name string, open Opener, libs Libraries, devices []int) (Node, *benchmarks.Result) {
	var n Node
	err := devcheck.Run(ctx, func() error {
		var err error
		n, err = open(ctx, libs, devices)
		return err
	})
	if err != nil {
		t := newTally(name)
		classify(t, "", err)
		r := t.Result("")
		return nil, &r
	}
	return n, nil
}

// devName is how results name the NPU with logical id i.
func devName(i int) string { return fmt.Sprintf("npu%d", i) }

// devNames names each of the logical ids.
func devNames(idx []int) []string {
	out := make([]string, len(idx))
	for i, d := range idx {
		out[i] = devName(d)
	}
	return out
}
