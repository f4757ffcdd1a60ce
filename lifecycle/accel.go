package lifecycle

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vigil-hpc/vigil/report"
)

// PCI vendor IDs of the accelerators vigil knows.
const (
	pciVendorNVIDIA = "0x10de"
	pciVendorHuawei = "0x19e5"
)

// ProbeAccelerators looks for NVIDIA and Ascend devices under root ("/" in
// production) without any vendor library: device nodes /dev/nvidiaN and
// /dev/davinciN, and PCI functions of the vendors' IDs whose class is a
// display/3D controller (NVIDIA) or a processing accelerator (Ascend).
func ProbeAccelerators(root string) report.Accelerators {
	var a report.Accelerators
	devN := devNodes(root, "nvidia")
	devA := devNodes(root, "davinci")
	var pciN, pciA []string
	entries, _ := os.ReadDir(filepath.Join(root, "sys/bus/pci/devices"))
	for _, e := range entries {
		dir := filepath.Join(root, "sys/bus/pci/devices", e.Name())
		vendor := readTrim(filepath.Join(dir, "vendor"))
		class := readTrim(filepath.Join(dir, "class"))
		switch {
		case vendor == pciVendorNVIDIA && (strings.HasPrefix(class, "0x0300") || strings.HasPrefix(class, "0x0302")):
			pciN = append(pciN, e.Name())
		case vendor == pciVendorHuawei && strings.HasPrefix(class, "0x1200"):
			pciA = append(pciA, e.Name())
		}
	}
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

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
