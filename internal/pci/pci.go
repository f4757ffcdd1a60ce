// Package pci finds accelerators on the PCI bus under a sysfs root,
// without any vendor library: what the prolog's accelerator probe and the
// device-count checks of both vendors compare their libraries with.
package pci

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// PCI vendor ids and class prefixes of the accelerators vigil knows.
const (
	// VendorNVIDIA is NVIDIA's PCI vendor id.
	VendorNVIDIA = "0x10de"
	// VendorHuawei is Huawei's PCI vendor id.
	VendorHuawei = "0x19e5"
	// ClassVGA and Class3D are the display controllers NVIDIA GPUs show
	// as (a GPU's audio function, class 0x0403, is not one).
	ClassVGA = "0x0300"
	Class3D  = "0x0302"
	// ClassAccelerator is the "processing accelerator" class of Ascend NPUs.
	ClassAccelerator = "0x1200"
)

// NVIDIAGPUs lists the PCI addresses of NVIDIA display and 3D controllers
// under sysfs (Devices).
func NVIDIAGPUs(sysfs string) ([]string, error) {
	return Devices(sysfs, VendorNVIDIA, ClassVGA, Class3D)
}

// AscendNPUs lists the PCI addresses of Huawei processing accelerators
// under sysfs (Devices).
func AscendNPUs(sysfs string) ([]string, error) {
	return Devices(sysfs, VendorHuawei, ClassAccelerator)
}

// Devices lists the PCI addresses (normalised, sorted) of the devices
// under sysfs/bus/pci/devices whose vendor file reads vendor ("0x10de") and
// whose class file starts with one of classPrefixes ("0x0302"). A sysfs
// without a PCI bus has none; a device that vanishes while it is listed is
// skipped.
func Devices(sysfs, vendor string, classPrefixes ...string) ([]string, error) {
	dir := filepath.Join(sysfs, "bus", "pci", "devices")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("PCI devices: %w", err)
	}
	var out []string
	for _, e := range entries {
		v, err := os.ReadFile(filepath.Join(dir, e.Name(), "vendor"))
		if err != nil || strings.TrimSpace(string(v)) != vendor {
			continue
		}
		class, err := os.ReadFile(filepath.Join(dir, e.Name(), "class"))
		if err != nil {
			continue
		}
		cl := strings.TrimSpace(string(class))
		for _, p := range classPrefixes {
			if strings.HasPrefix(cl, p) {
				out = append(out, Normalise(e.Name()))
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// Normalise lower-cases a PCI address and trims its domain to four
// digits, so NVML's "00000000:3B:00.0" and sysfs's "0000:3b:00.0" compare
// equal.
func Normalise(addr string) string {
	addr = strings.ToLower(strings.TrimSpace(addr))
	if dom, rest, ok := strings.Cut(addr, ":"); ok && len(dom) > 4 {
		addr = dom[len(dom)-4:] + ":" + rest
	}
	return addr
}
