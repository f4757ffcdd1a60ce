// Package pci lists PCI functions of a vendor and class under a sysfs root,
// without any vendor library. Which vendors and classes are accelerators is
// the vendor table's to say (internal/vendors).
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

// Devices lists the PCI addresses (normalised, sorted) of the devices
// under sysfs/bus/pci/devices whose vendor file reads vendor (a PCI vendor id
// as sysfs writes it) and whose class file starts with one of
// classPrefixes ("0x0302"). A sysfs
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
