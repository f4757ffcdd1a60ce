package device

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/vendors"
)

// ReasonSysfsUnreadable: the PCI devices under sysfs could not be read
// (unknown); every vendor's device-count check gives it.
const ReasonSysfsUnreadable = "SysfsUnreadable"

// CountSettings are the settings of every vendor's device-count check
// ([checks.gpu-count], [checks.npu-count]).
type CountSettings struct {
	// Expected is how many devices the node must have; 0 means the node's
	// Slurm Gres GPU count (for Ascend NPUs only when they are on its PCI
	// bus), and no expectation when that is unknown too.
	Expected int `toml:"expected"`
	// Sysfs is the root of sysfs, where bus/pci/devices lists the PCI devices.
	Sysfs string `toml:"sysfs"`
}

// DefaultCountSettings are the shipped settings: no expectation of its
// own, sysfs at /sys.
func DefaultCountSettings() *CountSettings { return &CountSettings{Sysfs: "/sys"} }

// Validate reports out-of-range settings, naming the key.
func (s *CountSettings) Validate() error {
	if s.Expected < 0 {
		return benchmarks.BadSetting("expected", "%d: want 0 (the node's own count) or more", s.Expected)
	}
	return nil
}

// OnBus lists the PCI addresses of vendor v's devices (the vendor table's
// ids and classes) under sysfs/bus/pci/devices, sorted. A sysfs without a
// PCI bus has none.
func OnBus(v benchmarks.Vendor, sysfs string) ([]string, error) {
	r, _ := vendors.Lookup(string(v))
	return r.PCIDevices(sysfs)
}
