package ascend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/compute"
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

// mergeThresholds returns a copy of base with over's limits replacing or
// adding to it, metric by metric.
func mergeThresholds(base, over compute.Thresholds) compute.Thresholds {
	out := compute.Thresholds{}
	for _, t := range []compute.Thresholds{base, over} {
		for m, lim := range t {
			if out[m] == nil {
				out[m] = map[string]float64{}
			}
			for k, v := range lim {
				out[m][k] = v
			}
		}
	}
	return out
}

// validatePeers checks the peer settings.
func validatePeers(p compute.Peers) error {
	if p.Fraction < 0 || p.Fraction > 1 {
		return fmt.Errorf("peer_fraction = %v: must be in [0, 1]", p.Fraction)
	}
	if p.Min < 2 {
		return fmt.Errorf("peer_min_devices = %d: must be >= 2", p.Min)
	}
	return nil
}

// metric describes one measured quantity.
type metric struct {
	Name, Key, Unit, Label string
}

// reading is one device's value of a metric.
type reading struct {
	Device, Model string
	Value         float64
}

// median of xs (xs is not modified).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// evaluate compares each reading (higher is better) with its model's limit
// and with the node's median, like the CUDA checks: a device below its
// floor fails with prefix+"BelowThreshold", one below Fraction × median
// with prefix+"BelowPeers".
func evaluate(t *tally, m metric, prefix string, rs []reading, th compute.Thresholds, p compute.Peers) {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = r.Value
	}
	med := median(xs)
	usePeers := p.Fraction > 0 && len(rs) >= p.Min
	for _, r := range rs {
		v := benchmarks.Value{Device: r.Device, Name: m.Name, Value: round(r.Value), Unit: m.Unit, Status: benchmarks.StatusPass}
		if lim, _, ok := th.Lookup(r.Model, m.Key); m.Key != "" && ok {
			l := lim
			v.Threshold, v.Op = &l, ">="
			if r.Value < lim || math.IsNaN(r.Value) {
				v.Status = benchmarks.StatusFail
				t.fail(r.Device, prefix+"BelowThreshold", "%s %s %.4g %s, limit >= %.4g", r.Device, m.Label, r.Value, m.Unit, lim)
			}
		}
		if usePeers && v.Status == benchmarks.StatusPass && r.Value < p.Fraction*med {
			v.Status = benchmarks.StatusFail
			t.fail(r.Device, prefix+"BelowPeers", "%s %s %.4g %s is %.0f%% of the node median %.4g", r.Device, m.Label, r.Value, m.Unit, 100*r.Value/med, med)
		}
		t.values = append(t.values, v)
	}
}

// round keeps reports readable: 4 digits after the point.
func round(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	return math.Round(x*1e4) / 1e4
}

// run calls f in its own goroutine and returns its error, or one wrapping
// compute.ErrHung when ctx ends first. A call blocked in the driver cannot
// be interrupted; the framework kills the checker process.
func run(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%w: %v", compute.ErrHung, err)
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", compute.ErrHung, ctx.Err())
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
		t.unknown(device, ReasonLibraryMissing, "%s%v", prefix, err)
	case errors.Is(err, ErrNoDevices), errors.Is(err, acl.ErrNoDevice):
		t.unknown(device, ReasonNoDevices, "%s%v", prefix, err)
	case errors.Is(err, compute.ErrHung):
		t.fail(device, ReasonDeviceHung, "%s%v", prefix, err)
	case errors.Is(err, acl.ErrDevice):
		t.fail(device, ReasonDeviceFault, "%s%v", prefix, err)
	case errors.Is(err, hccl.ErrLink):
		t.fail(device, ReasonCollectiveLink, "%s%v", prefix, err)
	default:
		t.unknown(device, ReasonCheckerError, "%s%v", prefix, err)
	}
}

// openNode opens the node's NPUs under ctx's deadline; the returned result
// is non-nil when that failed.
func openNode(ctx context.Context, name string, open Opener, libs Libraries, devices []int) (Node, *benchmarks.Result) {
	var n Node
	err := run(ctx, func() error {
		var err error
		n, err = open(ctx, libs, devices)
		return err
	})
	if err != nil {
		t := &tally{check: name}
		classify(t, "", err)
		r := t.result("")
		return nil, &r
	}
	return n, nil
}

// devName is how results name the NPU with logical id i.
func devName(i int) string { return fmt.Sprintf("npu%d", i) }
