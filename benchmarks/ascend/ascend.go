// Package ascend holds vigil's checks of Huawei Ascend NPUs: health facts
// read through DCMI (npu-count, npu-health, npu-ecc, npu-link,
// npu-leftover) and compute probes through ACL and HCCL (npu-gemm,
// npu-copy, npu-kernel-launch, npu-allreduce, npu-allgather, npu-alltoall,
// npu-overlap, and hccl-allreduce-multinode,
// which the prolog's cross-node phase runs through its Setup and
// RunRanks). Each health fact lives in its own file and registers itself
// with benchmarks.Register from init(); the compute probes are the
// vendor-neutral checks of package device, registered from one table
// (checks.go).
//
// The vendor libraries are opened at run time (packages cgo/dcmi, cgo/acl,
// cgo/hccl); on a node without the Ascend driver and CANN every check
// reports unknown with the library search that failed. The checks reach the
// devices through small interfaces (dcmi.Interface, Node) so tests stand
// fakes in for a whole node.
package ascend

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/dcmi"
	"github.com/vigil-hpc/vigil/cgo/dl"
)

// Reason tokens shared by the Ascend health checks, beside
// device.ReasonLibraryMissing (libdcmi.so, libascendcl.so, libopapi.so or
// libhccl.so could not be opened, or lacks a symbol), and
// devcheck.ReasonInvalidSettings and ReasonCanceled.
const (
	// ReasonDCMIError: a DCMI call failed (unknown).
	ReasonDCMIError = "DCMIError"
	// ReasonNotSupported: the device does not report this fact (unknown).
	ReasonNotSupported = "NotSupported"
	// ReasonNPULost: DCMI says a device does not exist any more (fail).
	ReasonNPULost = "NPULost"
)

// EnvLibraryPath lists extra directories (colon-separated) searched for the
// Ascend libraries by every Ascend check, before the configured ones. It is
// the same variable the CUDA checks read.
const EnvLibraryPath = "VIGIL_LIBRARY_PATH"

// dcmiOptions is the search for libdcmi.so: the library paths, then
// dcmi.DefaultDirs and the loader's own search.
func (l Libraries) dcmiOptions() dl.Options { return l.options(l.DCMI) }

// dcmiLibrary opens DCMI at most once per process and hands the same handle
// to every check (checks usually run in their own child process, where
// this is one open per check).
type dcmiLibrary struct {
	open func(dl.Options) (dcmi.Interface, error)

	mu     sync.Mutex
	opened bool
	lib    dcmi.Interface
	err    error
}

var sharedDCMI = &dcmiLibrary{open: func(o dl.Options) (dcmi.Interface, error) {
	l, err := dcmi.Open(o)
	if err != nil {
		return nil, err
	}
	return l, nil
}}

// dcmiCheck is what the DCMI checks share: the DCMI library. Their place
// in the registry is npuFact's (health checks of Ascend NPUs, run in a
// child: DCMI calls go to the driver and can hang on a sick device).
type dcmiCheck struct{ lib *dcmiLibrary }

// npuFact returns d as a DCMI check's descriptor: a health fact of Ascend
// NPUs, isolated, in the default suite.
func npuFact(d benchmarks.Descriptor) benchmarks.Descriptor {
	d.Kind, d.Vendor, d.Isolated, d.Default = benchmarks.KindHealth, benchmarks.VendorAscend, true, true
	return d
}

// get opens and initialises DCMI on first use with o; later calls return
// the first outcome.
func (l *dcmiLibrary) get(o dl.Options) (dcmi.Interface, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.opened {
		l.opened = true
		lib, err := l.open(o)
		if err == nil {
			if err = lib.Init(); err != nil {
				lib.Close()
				lib = nil
			}
		}
		l.lib, l.err = lib, err
	}
	return l.lib, l.err
}

// npu is one selected device.
type npu struct {
	index int // logical id, or enumeration order when DCMI gives none
	dev   dcmi.Device
	model string // "Ascend910B3"; empty when unread
}

// id is the device's name in results ("npu3").
func (n npu) id() string { return fmt.Sprintf("npu%d", n.index) }

// selectNPUs lists the node's NPUs, ordered by logical id, keeping only
// those in want (logical ids) when want is not nil. Chip info is read where
// possible.
func selectNPUs(lib dcmi.Interface, want []int) ([]npu, error) {
	devs, err := lib.Devices()
	if err != nil {
		return nil, err
	}
	all := make([]npu, 0, len(devs))
	for i, d := range devs {
		n := npu{index: d.Logic, dev: d}
		if d.Logic < 0 {
			n.index = i
		}
		if ci, err := lib.ChipInfo(d); err == nil {
			n.model = ci.Model()
		}
		all = append(all, n)
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].index < all[b].index })
	if want == nil {
		return all, nil
	}
	keep := map[int]bool{}
	for _, w := range want {
		keep[w] = true
	}
	var out []npu
	for _, n := range all {
		if keep[n.index] {
			out = append(out, n)
		}
	}
	return out, nil
}

// dcmiLibraries decodes the libraries of [vendor.ascend] in env; a bad
// setting is returned as the result to report.
func dcmiLibraries(name string, env *benchmarks.Env) (Libraries, *benchmarks.Result) {
	libs, err := libraries(env)
	if err != nil {
		r := devcheck.BadSettings(name, err)
		return libs, &r
	}
	return libs, nil
}

// openNPUs is the common start of the per-device DCMI checks: open DCMI
// and select the job's devices. On failure it returns the result to
// report.
func openNPUs(l *dcmiLibrary, name string, env *benchmarks.Env) (dcmi.Interface, []npu, *benchmarks.Result) {
	libs, res := dcmiLibraries(name, env)
	if res != nil {
		return nil, nil, res
	}
	lib, err := l.get(libs.dcmiOptions())
	if err != nil {
		r := dcmiUnavailable(name, err)
		return nil, nil, &r
	}
	npus, err := selectNPUs(lib, devcheck.EnvDevices(env))
	if err != nil {
		return nil, nil, &benchmarks.Result{Check: name, Status: benchmarks.StatusUnknown, Reason: ReasonDCMIError, Message: err.Error()}
	}
	if len(npus) == 0 {
		return nil, nil, &benchmarks.Result{Check: name, Status: benchmarks.StatusPass, Message: "no Ascend NPUs found"}
	}
	return lib, npus, nil
}

// eachNPU runs a per-device DCMI check: it opens DCMI, selects the
// job's NPUs and calls read for each until ctx ends. pass is the message of
// a pass, with %d for the number of NPUs and %s for the word "NPU(s)".
func eachNPU(ctx context.Context, l *dcmiLibrary, name string, env *benchmarks.Env, pass string, read func(t *devcheck.Tally, lib dcmi.Interface, n npu)) benchmarks.Result {
	lib, npus, res := openNPUs(l, name, env)
	if res != nil {
		return *res
	}
	t := newTally(name)
	for _, n := range npus {
		if t.Canceled(ctx) {
			break
		}
		read(t, lib, n)
	}
	return t.Result(fmt.Sprintf(pass, len(npus), devcheck.Plural(len(npus), "NPU")))
}

// dcmiReasons are the tokens every DCMI check can give: DCMI missing or
// failing (dcmiUnavailable, classifyDCMI), a fact not reported, a device gone.
func dcmiReasons() []string {
	return []string{device.ReasonLibraryMissing, ReasonDCMIError, ReasonNotSupported, ReasonNPULost}
}

// dcmiUnavailable is the unknown result of a check that could not open or
// initialise DCMI.
func dcmiUnavailable(name string, err error) benchmarks.Result {
	r := benchmarks.Result{Check: name, Status: benchmarks.StatusUnknown, Reason: ReasonDCMIError, Message: "DCMI unavailable: " + err.Error()}
	if errors.Is(err, dl.ErrNotFound) || errors.Is(err, dl.ErrSymbol) {
		r.Reason = device.ReasonLibraryMissing
		r.Message = "no Ascend NPUs found (" + err.Error() + ")"
	}
	return r
}

// newTally returns the tally of a check: what it found per device, turned
// into a Result; its LibErr sorts DCMI's errors (classifyDCMI).
func newTally(check string) *devcheck.Tally {
	return &devcheck.Tally{Check: check, Classify: classifyDCMI}
}

// classifyDCMI sorts a failed DCMI call: a fault when DCMI says the device
// is gone, unknown otherwise.
func classifyDCMI(dev, what string, err error) (lost bool, reason, message string) {
	switch {
	case errors.Is(err, dcmi.ErrNoDevice):
		return true, ReasonNPULost, fmt.Sprintf("%s %s: device gone: %v", dev, what, err)
	case errors.Is(err, dcmi.ErrNotSupported):
		return false, ReasonNotSupported, fmt.Sprintf("%s %s not supported: %v", dev, what, err)
	case errors.Is(err, dl.ErrSymbol):
		return false, device.ReasonLibraryMissing, fmt.Sprintf("%s %s: %v", dev, what, err)
	default:
		return false, ReasonDCMIError, fmt.Sprintf("%s %s: %v", dev, what, err)
	}
}
