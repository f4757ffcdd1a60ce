// Package vendors is vigil's table of accelerator vendors: per vendor, the
// PCI vendor ids and classes its devices show, its device nodes, how
// results name its devices, which sampler the watcher reads them with, the
// PyTorch device type the model checks train on and the default command
// that resets one of its devices. The prolog's vendor selection, the
// device-count checks, the epilog's search for leftover processes, the
// model checks, the [repair] defaults and the watcher's sampler choice all
// read this one table, and find devices with Probe, which needs no vendor
// library. It is the only place in vigil that names a PCI vendor id, a
// device node pattern, a vendor's PyTorch device type or its reset tool
// (internal/archtest keeps it so).
package vendors

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/internal/pci"
)

// Sampler names the watcher's accelerator sampler of a vendor.
type Sampler string

const (
	// SamplerNVML reads NVIDIA GPUs through NVML.
	SamplerNVML Sampler = "nvml"
	// SamplerDCMI reads Ascend NPUs through DCMI.
	SamplerDCMI Sampler = "dcmi"
)

// Row is one vendor of the table.
type Row struct {
	// Name is the vendor's name as checks declare it ("nvidia"; benchmarks.Vendor).
	Name string
	// Maker is how messages name the vendor ("NVIDIA").
	Maker string
	// Noun is how messages name one device ("GPU").
	Noun string
	// PCIVendors are the PCI vendor ids of its devices, as sysfs writes
	// them ("0x10de").
	PCIVendors []string
	// PCIClasses are the class prefixes its accelerators show ("0x0302");
	// another function of the same vendor (a GPU's audio) is not one.
	PCIClasses []string
	// DevNode is the prefix of its device nodes: /dev/<DevNode>N ("nvidia").
	DevNode string
	// DevPrefix is how results name device index i: DevPrefix+i ("gpu3").
	DevPrefix string
	// Sampler is the sampler vigil-watch opens for its devices.
	Sampler Sampler
	// TorchDevice is the PyTorch device type of its devices ("cuda"), on
	// which the model checks train; empty where PyTorch cannot drive them.
	TorchDevice string
	// Reset is the default command that resets device IndexPlaceholder
	// ([repair.reset] of the vendor): an argv whose program is an absolute
	// path; empty for none.
	Reset []string
}

// IndexPlaceholder in a reset command stands for the device's index ("3"
// for gpu3).
const IndexPlaceholder = "{index}"

// Table is every accelerator vendor vigil knows, in the order the watcher
// tries their samplers when the probe finds no device.
var Table = []Row{
	{
		Name: "nvidia", Maker: "NVIDIA", Noun: "GPU",
		PCIVendors: []string{"0x10de"},
		PCIClasses: []string{"0x0300", "0x0302"}, // VGA and 3D controllers
		DevNode:    "nvidia", DevPrefix: "gpu", Sampler: SamplerNVML,
		TorchDevice: "cuda",
		Reset:       []string{"/usr/bin/nvidia-smi", "-r", "-i", IndexPlaceholder},
	},
	{
		Name: "ascend", Maker: "Ascend", Noun: "NPU",
		PCIVendors: []string{"0x19e5"}, // Huawei
		PCIClasses: []string{"0x1200"}, // processing accelerators
		DevNode:    "davinci", DevPrefix: "npu", Sampler: SamplerDCMI,
		TorchDevice: "npu", // through torch_npu
		Reset:       []string{"/usr/local/sbin/npu-smi", "set", "-t", "reset", "-i", IndexPlaceholder, "-c", "0"},
	},
}

// Lookup returns the row of the vendor called name.
func Lookup(name string) (Row, bool) {
	for _, r := range Table {
		if r.Name == name {
			return r, true
		}
	}
	return Row{}, false
}

// DevNodePath is the device node of the vendor's device index i under
// root ("/" in production): root/dev/<DevNode>i.
func (r Row) DevNodePath(root string, i int) string {
	return filepath.Join(root, "dev", r.DevNode+strconv.Itoa(i))
}

// ByTorchDevice returns the row whose PyTorch device type is kind.
func ByTorchDevice(kind string) (Row, bool) {
	for _, r := range Table {
		if r.TorchDevice != "" && r.TorchDevice == kind {
			return r, true
		}
	}
	return Row{}, false
}

// ids are the row's PCI vendor ids without "0x", as people write them ("10de").
func (r Row) ids() string {
	var s []string
	for _, v := range r.PCIVendors {
		s = append(s, strings.TrimPrefix(v, "0x"))
	}
	return strings.Join(s, "/")
}

// Absent says, for people, that a node shows none of the vendor's devices
// and where vigil looked ("no NVIDIA GPU on this node (PCI vendor 10de not
// found, no /dev/nvidia[0-9]*)").
func (r Row) Absent() string {
	return fmt.Sprintf("no %s %s on this node (PCI vendor %s not found, no /dev/%s[0-9]*)", r.Maker, r.Noun, r.ids(), r.DevNode)
}

// NoneFound says, for people, that a node shows no device of any vendor
// and where vigil looked.
func NoneFound() string {
	var makers, nodes, ids []string
	for _, r := range Table {
		makers = append(makers, r.Maker)
		nodes = append(nodes, "/dev/"+r.DevNode+"[0-9]*")
		ids = append(ids, r.ids())
	}
	return fmt.Sprintf("no %s devices found (no %s, or PCI functions of vendor %s)",
		strings.Join(makers, " or "), strings.Join(nodes, ", "), strings.Join(ids, "/"))
}

// PCIDevices lists the PCI addresses (normalised, sorted) of the vendor's
// accelerators under sysfs: functions of one of its vendor ids whose class
// is one of its classes. A sysfs without a PCI bus has none.
func (r Row) PCIDevices(sysfs string) ([]string, error) {
	var out []string
	for _, v := range r.PCIVendors {
		d, err := pci.Devices(sysfs, v, r.PCIClasses...)
		if err != nil {
			return nil, err
		}
		out = append(out, d...)
	}
	sort.Strings(out)
	return out, nil
}

// Found is what Probe saw of one vendor.
type Found struct {
	// Row is the vendor.
	Row Row
	// Count is the number of its devices seen: the larger of its device
	// nodes and its PCI functions.
	Count int
	// Evidence says where they were seen ("/dev/nvidia0", "pci 0000:3b:00.0 nvidia").
	Evidence []string
}

// Probe looks for every vendor's devices under root ("/" in production)
// without any vendor library: device nodes /dev/<DevNode>N and PCI
// functions under root/sys. It returns the vendors with at least one
// device, in table order. An unreadable PCI bus counts no devices.
func Probe(root string) []Found {
	var out []Found
	sysfs := filepath.Join(root, "sys")
	for _, r := range Table {
		nodes := devNodes(root, r.DevNode)
		onBus, _ := r.PCIDevices(sysfs)
		f := Found{Row: r, Count: max(len(nodes), len(onBus))}
		if f.Count == 0 {
			continue
		}
		for _, n := range nodes {
			f.Evidence = append(f.Evidence, "/dev/"+n)
		}
		for _, p := range onBus {
			f.Evidence = append(f.Evidence, "pci "+p+" "+r.Name)
		}
		out = append(out, f)
	}
	return out
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
