package lifecycle

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/vigil-hpc/vigil/internal/pci"
	"github.com/vigil-hpc/vigil/report"
)

// ProbeAccelerators looks for NVIDIA and Ascend devices under root ("/" in
// production) without any vendor library: device nodes /dev/nvidiaN and
// /dev/davinciN, and PCI functions of the vendors' IDs whose class is a
// display/3D controller (NVIDIA) or a processing accelerator (Ascend), as
// package pci finds them. An unreadable PCI bus counts no devices.
func ProbeAccelerators(root string) report.Accelerators {
	var a report.Accelerators
	devN := devNodes(root, "nvidia")
	devA := devNodes(root, "davinci")
	sysfs := filepath.Join(root, "sys")
	pciN, _ := pci.NVIDIAGPUs(sysfs)
	pciA, _ := pci.AscendNPUs(sysfs)
	a.NVIDIA = max(len(devN), len(pciN))
	a.Ascend = max(len(devA), len(pciA))
	for _, d := range devN {
		a.Evidence = append(a.Evidence, "/dev/"+d)
	}
	for _, d := range devA {
		a.Evidence = append(a.Evidence, "/dev/"+d)
	}
	for _, p := range pciN {
		a.Evidence = append(a.Evidence, "pci "+p+" nvidia")
	}
	for _, p := range pciA {
		a.Evidence = append(a.Evidence, "pci "+p+" huawei")
	}
	return a
}

// devNodes lists /dev/<prefix>N under root.
func devNodes(root, prefix string) []string {
	m, _ := filepath.Glob(filepath.Join(root, "dev", prefix+"[0-9]*"))
	var out []string
	for _, p := range m {
		b := filepath.Base(p)
		if isDigits(strings.TrimPrefix(b, prefix)) {
			out = append(out, b)
		}
	}
	sort.Strings(out)
	return out
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
