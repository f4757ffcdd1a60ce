// Package compute holds vigil's GPU compute checks: dense GEMM throughput
// and correctness, kernel launch latency, host/device copy bandwidth, NCCL
// collectives within the node, compute/communication overlap, and an
// admin-configured command whose JSON output becomes values and thresholds.
//
// The checks talk to the GPUs through the Node interface. Its real
// implementation opens libcuda, cuBLASLt and NCCL at run time (package
// cgo/...); tests use fakes. On a node without the libraries every check
// reports unknown with the library search that failed.
package compute

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/cgo/cuda"
	"github.com/vigil-hpc/vigil/cgo/dl"
)

// Reason tokens shared by the compute checks.
const (
	// ReasonLibraryMissing: libcuda, cuBLASLt or NCCL could not be opened (unknown).
	ReasonLibraryMissing = "LibraryMissing"
	// ReasonNoDevices: the driver reports no device, or none of the job's (unknown).
	ReasonNoDevices = "NoDevices"
	// ReasonBadSettings: the check's [checks.NAME] section is invalid (unknown).
	ReasonBadSettings = "BadSettings"
	// ReasonCheckerError: vigil itself could not run the measurement (unknown).
	ReasonCheckerError = "CheckerError"
	// ReasonDeviceFault: a device reported a fault while running work (fail).
	ReasonDeviceFault = "DeviceFault"
	// ReasonDeviceHung: work on a device did not finish by the deadline (fail).
	ReasonDeviceHung = "DeviceHung"
	// ReasonSingleDevice: a collective needs at least two devices (unknown).
	ReasonSingleDevice = "SingleDevice"
)

// EnvLibraryPath lists extra directories (colon-separated) searched for the
// vendor libraries by every compute check, before the configured ones.
const EnvLibraryPath = "VIGIL_LIBRARY_PATH"

// Libraries says where the vendor libraries are. Every compute check's
// settings carry these keys.
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

// Thresholds are per-device-model limits: model key → metric → limit.
// A model key matches a device whose name contains it (case-insensitive);
// the longest matching key wins, so "H100 PCIe" overrides "H100".
type Thresholds map[string]map[string]float64

// merge returns a copy of base with the limits of over replacing or adding
// to it, metric by metric.
func (base Thresholds) merge(over Thresholds) Thresholds {
	out := Thresholds{}
	for m, lim := range base {
		out[m] = map[string]float64{}
		for k, v := range lim {
			out[m][k] = v
		}
	}
	for m, lim := range over {
		if out[m] == nil {
			out[m] = map[string]float64{}
		}
		for k, v := range lim {
			out[m][k] = v
		}
	}
	return out
}

// Lookup returns the limit for metric on a device called name.
func (t Thresholds) Lookup(name, metric string) (float64, string, bool) {
	best := ""
	for key, lim := range t {
		if _, ok := lim[metric]; !ok {
			continue
		}
		if strings.Contains(strings.ToLower(name), strings.ToLower(key)) && len(key) > len(best) {
			best = key
		}
	}
	if best == "" {
		return 0, "", false
	}
	return t[best][metric], best, true
}

// Peers configures the comparison of each device with the node's median.
type Peers struct {
	// Fraction: a device whose value is below Fraction × the node median
	// (for higher-is-better metrics) or above median / Fraction (for
	// lower-is-better ones) fails, even above its absolute floor. 0 disables.
	Fraction float64 `toml:"peer_fraction"`
	// Min is the fewest devices for which the comparison is made.
	Min int `toml:"peer_min_devices"`
}

// DefaultPeers are the shipped peer settings.
func DefaultPeers() Peers { return Peers{Fraction: 0.85, Min: 3} }

func (p Peers) validate() error {
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
	// Name is the value name ("tflops_bf16_8192").
	Name string
	// Key is the threshold key ("tflops_bf16"); empty for none.
	Key string
	// Unit of the value.
	Unit string
	// Lower is true when lower is better (latency).
	Lower bool
	// Label is how messages name it ("bf16 GEMM").
	Label string
}

// reading is one device's value of a metric.
type reading struct {
	Device string // "gpu3"
	Model  string // device name
	Value  float64
}

// sortReadings orders readings by device name, numbers in natural order
// ("gpu2" before "gpu10").
func sortReadings(rs []reading) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i].Device, rs[j].Device
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		return a < b
	})
}

// finding is a failed comparison.
type finding struct {
	Device  string
	Peers   bool // below peers rather than below the absolute limit
	Message string
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

// evaluate compares each reading with its model's limit and with the
// median of all readings. It returns one Value per reading and the failures.
func evaluate(m metric, rs []reading, th Thresholds, p Peers) ([]benchmarks.Value, []finding) {
	var vals []benchmarks.Value
	var fs []finding
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = r.Value
	}
	med := median(xs)
	usePeers := p.Fraction > 0 && len(rs) >= p.Min
	op := ">="
	if m.Lower {
		op = "<="
	}
	for _, r := range rs {
		v := benchmarks.Value{Device: r.Device, Name: m.Name, Value: round(r.Value), Unit: m.Unit, Status: benchmarks.StatusPass}
		if lim, _, ok := th.Lookup(r.Model, m.Key); m.Key != "" && ok {
			l := lim
			v.Threshold, v.Op = &l, op
			if (!m.Lower && r.Value < lim) || (m.Lower && r.Value > lim) || math.IsNaN(r.Value) {
				v.Status = benchmarks.StatusFail
				fs = append(fs, finding{Device: r.Device, Message: fmt.Sprintf("%s %s %.4g %s, limit %s %.4g", r.Device, m.Label, r.Value, m.Unit, op, lim)})
			}
		}
		if usePeers && v.Status == benchmarks.StatusPass {
			if (!m.Lower && r.Value < p.Fraction*med) || (m.Lower && r.Value > med/p.Fraction) {
				v.Status = benchmarks.StatusFail
				fs = append(fs, finding{Device: r.Device, Peers: true, Message: fmt.Sprintf("%s %s %.4g %s is %.0f%% of the node median %.4g", r.Device, m.Label, r.Value, m.Unit, 100*r.Value/med, med)})
			}
		}
		vals = append(vals, v)
	}
	return vals, fs
}

// round keeps reports readable: 4 significant digits after the point.
func round(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	return math.Round(x*1e4) / 1e4
}

// result assembles a check's Result from its values and findings. prefix
// names the reasons: prefix+"BelowThreshold", prefix+"BelowPeers" (or
// "Above…" for lower-is-better metrics).
type result struct {
	check    string
	values   []benchmarks.Value
	fails    []failure
	unknowns []failure
	notes    []string
}

type failure struct {
	reason, device, msg string
}

func (r *result) add(m metric, prefix string, vals []benchmarks.Value, fs []finding) {
	r.values = append(r.values, vals...)
	word := "Below"
	if m.Lower {
		word = "Above"
	}
	for _, f := range fs {
		reason := prefix + word + "Threshold"
		if f.Peers {
			reason = prefix + word + "Peers"
		}
		r.fails = append(r.fails, failure{reason, f.Device, f.Message})
	}
}

func (r *result) fail(reason, device, format string, args ...any) {
	r.fails = append(r.fails, failure{reason, device, fmt.Sprintf(format, args...)})
}

// deviceError records an error of one device's measurement: a fail for
// faults and hangs, an unknown otherwise.
func (r *result) deviceError(device string, err error) {
	c := classify(r.check, err)
	f := failure{c.Reason, device, fmt.Sprintf("%s: %s", device, c.Message)}
	if c.Status == benchmarks.StatusFail {
		r.fails = append(r.fails, f)
	} else {
		r.unknowns = append(r.unknowns, f)
	}
}

func (r *result) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

func (r *result) done(pass string) benchmarks.Result {
	res := benchmarks.Result{Check: r.check, Values: r.values, Status: benchmarks.StatusPass}
	if len(r.fails) > 0 {
		res.Status = benchmarks.StatusFail
		res.Reason = r.fails[0].reason
		res.Device = r.fails[0].device
		var msgs []string
		for _, f := range r.fails {
			msgs = append(msgs, f.msg)
		}
		res.Message = strings.Join(append(msgs, r.notes...), "; ")
		return res
	}
	if len(r.unknowns) > 0 {
		res.Status = benchmarks.StatusUnknown
		res.Reason = r.unknowns[0].reason
		var msgs []string
		for _, f := range r.unknowns {
			msgs = append(msgs, f.msg)
		}
		res.Message = strings.Join(append(msgs, r.notes...), "; ")
		return res
	}
	res.Message = strings.Join(append([]string{pass}, r.notes...), "; ")
	return res
}

func unknown(check, reason, format string, args ...any) benchmarks.Result {
	return benchmarks.Result{Check: check, Status: benchmarks.StatusUnknown, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// ErrHung is returned by run when ctx expired before the device finished.
var ErrHung = errors.New("device did not finish before the deadline")

// run calls f in its own goroutine and returns its error, or ErrHung when
// ctx ends first. A device call blocked in C cannot be interrupted; the
// framework kills the checker process, so the goroutine's fate is moot.
func run(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%w: %v", ErrHung, err)
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrHung, ctx.Err())
	}
}

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

// decode applies env's settings to s (which holds defaults).
func decode(env *benchmarks.Env, s any) error {
	if env == nil || env.Settings == nil {
		return nil
	}
	return env.Settings(s)
}

// positive checks a duration setting.
func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s = %v: must be > 0", name, d)
	}
	return nil
}
