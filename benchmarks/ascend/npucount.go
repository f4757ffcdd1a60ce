package ascend

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/cgo/dcmi"
	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/internal/pci"
)

// Reasons of the npu-count check.
const (
	// ReasonNPUCountMismatch: DCMI sees fewer NPUs than expected (or the
	// driver is missing while NPUs are expected).
	ReasonNPUCountMismatch = "NPUCountMismatch"
	// ReasonNPUFellOffBus: an Ascend NPU is on the PCI bus but not in DCMI.
	ReasonNPUFellOffBus = "NPUFellOffBus"
	// ReasonAllocatedNPUMissing: a device allocated to the job does not exist.
	ReasonAllocatedNPUMissing = "AllocatedNPUMissing"
)

// npuCount is npu-count. Its settings are those of every device-count
// check (device.CountSettings): expected 0 means the node's Slurm Gres GPU
// count when Ascend NPUs are on its PCI bus, and no expectation otherwise.
type npuCount struct{ dcmiCheck }

func init() { benchmarks.Register(&npuCount{dcmiCheck{sharedDCMI}}) }

// Spec describes the check.
func (*npuCount) Spec() benchmarks.Descriptor {
	return npuFact(benchmarks.Descriptor{Name: "npu-count",
		Description: "NPUs in DCMI against expected (or Gres) and the Ascend NPUs on the PCI bus",
		Settings:    func() any { return device.DefaultCountSettings() },
		Reasons: append([]string{ReasonNPUCountMismatch, ReasonNPUFellOffBus, ReasonAllocatedNPUMissing, device.ReasonSysfsUnreadable},
			dcmiReasons()...)})
}

func (c *npuCount) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := device.DefaultCountSettings()
	if err := devcheck.Decode(env, s); err != nil {
		return devcheck.BadSettings(c.Spec().Name, err)
	}
	if err := s.Validate(); err != nil {
		return devcheck.BadSettings(c.Spec().Name, err)
	}
	t := newTally(c.Spec().Name)
	onBus, busErr := device.OnBus(benchmarks.VendorAscend, s.Sysfs)
	if busErr != nil {
		t.Unknown("", device.ReasonSysfsUnreadable, "%v", busErr)
	} else {
		t.Value("", "pci_npus", float64(len(onBus)), "count", nil, "", benchmarks.StatusPass)
	}
	expected := s.Expected
	libs, res := dcmiLibraries(c.Spec().Name, env)
	if res != nil {
		return *res
	}
	lib, err := c.lib.get(libs.dcmiOptions())
	if expected == 0 && env != nil && env.GresGPUs > 0 && (len(onBus) > 0 || err == nil) {
		// The Gres count is about NPUs only on a node that has them.
		expected = env.GresGPUs
	}
	if err != nil {
		return c.noDCMI(t, err, s.Expected, onBus)
	}
	devs, err := lib.Devices()
	if err != nil {
		t.LibErr("", "device list", err)
		return t.Result("")
	}
	n := len(devs)
	countNPUs(t, n, expected)
	allocatedNPUs(t, devs, devcheck.EnvDevices(env))
	if busErr == nil && len(onBus) > n {
		offTheBus(t, devs, onBus)
	}
	r := t.Result(countMessage(n, expected))
	r.Components = inventory(lib, devs)
	return r
}

// countMessage is npu-count's message of a pass: DCMI's n NPUs and the
// expected count (0: none expected).
func countMessage(n, expected int) string {
	switch {
	case n == 0:
		return "no Ascend NPUs found"
	case expected > 0:
		return fmt.Sprintf("%d NPUs, %d expected", n, expected)
	}
	return fmt.Sprintf("%d NPUs", n)
}

// countNPUs compares the n NPUs DCMI sees with the expected count (0: no
// expectation): fewer is a fault, more a note.
func countNPUs(t *devcheck.Tally, n, expected int) {
	st := benchmarks.StatusPass
	if n < expected {
		st = benchmarks.StatusFail
		t.Fail("", ReasonNPUCountMismatch, "expected %d %s, DCMI sees %d", expected, devcheck.Plural(expected, "NPU"), n)
	}
	var thr *float64
	if expected > 0 {
		thr = devcheck.Ptr(float64(expected))
	}
	t.Value("", "npus", float64(n), "count", thr, ">=", st)
	if expected > 0 && n > expected {
		t.Note("DCMI sees %d NPUs, more than the %d expected", n, expected)
	}
}

// allocatedNPUs fails each device allocated to the job (logical ids) that
// DCMI does not list.
func allocatedNPUs(t *devcheck.Tally, devs []dcmi.Device, allocated []int) {
	logic := map[int]bool{}
	for i, d := range devs {
		if d.Logic >= 0 {
			logic[d.Logic] = true
		} else {
			logic[i] = true
		}
	}
	for _, i := range allocated {
		if !logic[i] {
			t.Fail(fmt.Sprintf("npu%d", i), ReasonAllocatedNPUMissing, "npu%d allocated to the job but DCMI does not list it (%d NPUs)", i, len(devs))
		}
	}
}

// offTheBus fails the Ascend NPUs on the PCI bus (onBus, more than DCMI
// sees) that DCMI does not list: each one by address when DCMI gave every
// device's, the node otherwise.
func offTheBus(t *devcheck.Tally, devs []dcmi.Device, onBus []string) {
	n := len(devs)
	have := map[string]bool{}
	known := true
	for _, d := range devs {
		if d.PCI == "" {
			known = false
		}
		have[pci.Normalise(d.PCI)] = true
	}
	var missing []string
	for _, a := range onBus {
		if known && !have[a] {
			missing = append(missing, a)
		}
	}
	if len(missing) == 0 {
		t.Fail("", ReasonNPUFellOffBus, "%d Ascend NPUs on the PCI bus, DCMI sees %d", len(onBus), n)
	}
	for _, a := range missing {
		t.Fail(a, ReasonNPUFellOffBus, "%s Ascend NPU on the PCI bus but not in DCMI (%d on the bus, %d in DCMI)", a, len(onBus), n)
	}
}

// noDCMI decides when DCMI cannot be used: a fault when NPUs are expected
// by configuration and the library is missing, unknown otherwise.
func (c *npuCount) noDCMI(t *devcheck.Tally, err error, expected int, onBus []string) benchmarks.Result {
	busNote := ""
	if len(onBus) > 0 {
		busNote = fmt.Sprintf(", but %d Ascend %s on the PCI bus", len(onBus), devcheck.Plural(len(onBus), "NPU"))
	}
	if expected > 0 && errors.Is(err, dl.ErrNotFound) {
		t.Value("", "npus", 0, "count", devcheck.Ptr(float64(expected)), ">=", benchmarks.StatusFail)
		t.Fail("", ReasonNPUCountMismatch, "expected %d %s, found none: %v%s", expected, devcheck.Plural(expected, "NPU"), err, busNote)
		return t.Result("")
	}
	r := dcmiUnavailable(c.Spec().Name, err)
	r.Message += busNote
	r.Values = t.Values
	return r
}
