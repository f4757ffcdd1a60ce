package health

import (
	"context"
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// Reasons of the gpu-count check.
const (
	// ReasonGPUCountMismatch: NVML sees fewer GPUs than expected (or none
	// because the driver is missing while GPUs are expected).
	ReasonGPUCountMismatch = "GPUCountMismatch"
	// ReasonGPUFellOffBus: an NVIDIA GPU is on the PCI bus but not in NVML.
	ReasonGPUFellOffBus = "GPUFellOffBus"
	// ReasonAllocatedGPUMissing: a device allocated to the job does not exist in NVML.
	ReasonAllocatedGPUMissing = "AllocatedGPUMissing"
)

// gpuCount compares the GPUs NVML sees with the expected count and with the
// NVIDIA GPUs on the PCI bus.
type gpuCount struct{ nvmlCheck }

func init() { benchmarks.Register(&gpuCount{nvmlCheck{shared}}) }

// Spec describes the check. ChecksGres: gpu-count compares Slurm's Gres
// with the GPUs present, so it runs by default on a node that shows no
// accelerator at all.
func (*gpuCount) Spec() benchmarks.Descriptor {
	return nvmlFact(benchmarks.Descriptor{Name: "gpu-count", ChecksGres: true,
		Description: "GPUs in NVML against Slurm's Gres (or expected) and the NVIDIA GPUs on the PCI bus",
		Settings:    func() any { return device.DefaultCountSettings() },
		Reasons: append([]string{ReasonGPUCountMismatch, ReasonGPUFellOffBus, ReasonAllocatedGPUMissing, device.ReasonSysfsUnreadable},
			nvmlReasons()...)})
}

func (c *gpuCount) Run(ctx context.Context, env *benchmarks.Env) benchmarks.Result {
	s := device.DefaultCountSettings()
	if err := loadSettings(env, s); err != nil {
		return devcheck.BadSettings(c.Spec().Name, err)
	}
	expected, source := s.Expected, "config"
	if expected == 0 && env != nil {
		expected, source = env.GresGPUs, "Gres"
	}
	t := newTally(c.Spec().Name)

	pci, pciErr := device.OnBus(benchmarks.VendorNVIDIA, s.Sysfs)
	if pciErr != nil {
		t.Unknown("", device.ReasonSysfsUnreadable, "%v", pciErr)
	} else {
		t.Value("", "pci_gpus", float64(len(pci)), "count", nil, "", benchmarks.StatusPass)
	}

	lib, err := c.lib.get()
	if err != nil {
		return c.noNVML(t, err, expected, source, pci, pciErr)
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		t.LibErr("", "device count", ret)
		return t.Result("")
	}

	st := benchmarks.StatusPass
	if n < expected {
		st = benchmarks.StatusFail
		t.Fail("", ReasonGPUCountMismatch, "fewer GPUs than expected (%s)", compared(source, expected, pci, pciErr, fmt.Sprint(n)))
	}
	var thr *float64
	if expected > 0 {
		thr = devcheck.Ptr(float64(expected))
	}
	t.Value("", "gpus", float64(n), "count", thr, ">=", st)
	if n > expected && expected > 0 {
		t.Note("NVML sees %d GPUs, more than the %d expected", n, expected)
	}

	if env != nil {
		for _, i := range env.Devices {
			if i < 0 || i >= n {
				t.Fail(fmt.Sprintf("gpu%d", i), ReasonAllocatedGPUMissing,
					"gpu%d allocated to the job but NVML sees %d GPUs", i, n)
			}
		}
	}

	if pciErr == nil && len(pci) > n {
		missing := missingFromNVML(lib, n, pci)
		if len(missing) == 0 {
			t.Fail("", ReasonGPUFellOffBus, "%d NVIDIA GPUs on the PCI bus, NVML sees %d", len(pci), n)
		}
		for _, addr := range missing {
			t.Fail(addr, ReasonGPUFellOffBus,
				"%s NVIDIA GPU on the PCI bus but not in NVML (%d on the bus, %d in NVML)", addr, len(pci), n)
		}
	}
	r := t.Result(countMessage(n, expected))
	r.Components = inventory(lib, n)
	return r
}

// countMessage is gpu-count's message of a pass: NVML's n GPUs and the
// expected count (0: none expected).
func countMessage(n, expected int) string {
	switch {
	case n == 0:
		return "no NVIDIA devices found"
	case expected > 0:
		return fmt.Sprintf("%d GPUs, %d expected", n, expected)
	}
	return fmt.Sprintf("%d GPUs", n)
}

// noNVML decides when NVML cannot be opened: a fault when GPUs are
// expected and the driver is missing (the node cannot run GPU jobs), a pass
// when none are expected and none are on the bus, unknown otherwise.
func (c *gpuCount) noNVML(t *devcheck.Tally, err error, expected int, source string, pci []string, pciErr error) benchmarks.Result {
	onBus := pciErr == nil && len(pci) > 0
	driverMissing := errors.Is(err, errLibraryNotFound) || errors.Is(err, ErrDriverNotLoaded)
	switch {
	case expected > 0 && driverMissing:
		t.Value("", "gpus", 0, "count", devcheck.Ptr(float64(expected)), ">=", benchmarks.StatusFail)
		t.Fail("", ReasonGPUCountMismatch, "fewer GPUs than expected (%s)", compared(source, expected, pci, pciErr, nvmlState(err)))
		return t.Result("")
	case expected == 0 && driverMissing && !onBus:
		// A node without NVIDIA GPUs (the library may be in the image, the
		// driver not loaded); an unreadable sysfs changes nothing.
		return benchmarks.Result{Check: c.Spec().Name, Status: benchmarks.StatusPass, Values: t.Values,
			Message: "no NVIDIA devices found (" + nvmlState(err) + ")"}
	}
	r := nvmlUnavailable(c.Spec().Name, err)
	if onBus {
		r.Message = fmt.Sprintf("%v, but %d NVIDIA %s on the PCI bus", err, len(pci), devcheck.Plural(len(pci), "GPU"))
	}
	r.Values = t.Values
	return r
}

// compared says what gpu-count compared, for its messages: where the
// expectation came from ("Gres" or "config", [checks.gpu-count] expected),
// the NVIDIA GPUs on the PCI bus and what NVML said, e.g.
// "Gres: 2, PCI: 0, NVML: libnvidia-ml.so.1 not found".
func compared(source string, expected int, pci []string, pciErr error, nvmlSays string) string {
	onBus := fmt.Sprint(len(pci))
	if pciErr != nil {
		onBus = "unreadable"
	}
	return fmt.Sprintf("%s: %d, PCI: %s, NVML: %s", source, expected, onBus, nvmlSays)
}

// nvmlState says in a few words why NVML could not be used.
func nvmlState(err error) string {
	switch {
	case errors.Is(err, errLibraryNotFound):
		return errLibraryNotFound.Error()
	case errors.Is(err, ErrDriverNotLoaded):
		return "driver not loaded"
	}
	return err.Error()
}

// missingFromNVML returns the PCI addresses in pci that none of NVML's n
// devices has, or nil when NVML's bus ids cannot all be read.
func missingFromNVML(lib nvml.Interface, n int, pci []string) []string {
	have := map[string]bool{}
	for i := 0; i < n; i++ {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil
		}
		info, ret := dev.GetPciInfo()
		if ret != nvml.SUCCESS {
			return nil
		}
		have[busID(info)] = true
	}
	var out []string
	for _, addr := range pci {
		if !have[addr] {
			out = append(out, addr)
		}
	}
	return out
}
