package benchmarks

import (
	"fmt"
	"strings"

	"github.com/vigil-hpc/vigil/internal/vendors"
)

// Vendor is the maker of the accelerators a check is about: the name of a
// row of the vendor table (internal/vendors), or VendorNone. The default
// suite on a node holds the vendor-neutral checks and the checks of the
// vendors whose devices the node shows; the others are not applicable there.
// VendorNVIDIA and VendorAscend name the shipped vendors for the packages
// that share them; a new vendor's package declares its own Vendor, the
// name of its row, and nothing here changes.
type Vendor string

const (
	// VendorNone marks a vendor-neutral check (disk, command): it applies to
	// every node.
	VendorNone Vendor = "none"
	// VendorNVIDIA marks a check of NVIDIA GPUs (NVML, CUDA, NCCL, the
	// NVIDIA driver's XID messages).
	VendorNVIDIA Vendor = "nvidia"
	// VendorAscend marks a check of Huawei Ascend NPUs (DCMI, ACL, HCCL).
	VendorAscend Vendor = "ascend"
)

// Hardware is what a node shows of accelerators, found without any vendor
// library (PCI functions of the vendor's ids and device nodes): the number
// of devices seen per vendor, keyed by the vendor table's name. A vendor
// the node shows none of may be absent or zero.
type Hardware map[Vendor]int

// None reports whether the node shows no accelerator at all.
func (h Hardware) None() bool {
	for _, n := range h {
		if n > 0 {
			return false
		}
	}
	return true
}

// Has reports whether the node shows devices of vendor v; every node "has"
// VendorNone.
func (h Hardware) Has(v Vendor) bool { return v == VendorNone || h[v] > 0 }

// absent says, for people, why a vendor's checks do not apply: where the
// vendor table says its devices show.
func absent(v Vendor) string {
	if r, ok := vendors.Lookup(string(v)); ok {
		return r.Absent()
	}
	return fmt.Sprintf("no %s device on this node", v)
}

// NotApplicable is a check of the default suite that was left out because
// the node shows none of its vendor's devices. It is not a result: it never
// drains, never counts toward unknown, and is listed in the report.
type NotApplicable struct {
	// Check is the check's name.
	Check string `json:"check"`
	// Vendor is the vendor the check is about.
	Vendor Vendor `json:"vendor"`
	// Message says why, for people ("no Ascend NPU on this node (...)").
	Message string `json:"message"`
}

// applies decides whether a default-suite check applies to hw.
func applies(d Descriptor, hw Hardware) bool {
	return hw.Has(d.Vendor) || (hw.None() && d.ChecksGres)
}

// SelectFor returns the checks to run on a node that shows hw, and the
// checks of the default suite that do not apply to it. With names empty
// the default suite is chosen by vendor: the vendor-neutral checks, the
// checks of each vendor whose devices the node shows (both on a node with
// both), and, on a node without any accelerator, the checks that compare
// Slurm's Gres with the devices present (gpu-count). Named checks run as
// asked, whatever the node shows. skip and healthOnly apply as in Select,
// before anything is called not applicable.
func SelectFor(names, skip []string, healthOnly bool, hw Hardware) ([]Check, []NotApplicable, error) {
	return selectChecks(registered(), names, skip, healthOnly, &hw)
}

// registered returns every registered check, sorted by name.
func registered() []Check {
	names := Names()
	out := make([]Check, 0, len(names))
	for _, n := range names {
		if c, ok := Lookup(n); ok {
			out = append(out, c)
		}
	}
	return out
}

// CheckInfo describes a registered check for --list-checks.
type CheckInfo struct {
	// Name is the check's name.
	Name string
	// Kind is "health" or "perf".
	Kind Kind
	// Vendor is the vendor the check is about.
	Vendor Vendor
	// Default is set when the check is in the default suite (on nodes that
	// show its vendor's devices).
	Default bool
	// Description is one line saying what the check does.
	Description string
	// Reasons are the reason tokens the check declares (beyond RunnerReasons).
	Reasons []string
}

// Infos describes every registered check, sorted by name.
func Infos() []CheckInfo {
	var out []CheckInfo
	for _, c := range registered() {
		d := Describe(c)
		out = append(out, CheckInfo{Name: d.Name, Kind: d.Kind, Vendor: d.Vendor,
			Default: d.Default, Description: d.Description, Reasons: d.Reasons})
	}
	return out
}

// String returns "health" or "perf".
func (k Kind) String() string {
	switch k {
	case KindHealth:
		return "health"
	case KindPerf:
		return "perf"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// yesNo renders a bool for the check list.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ListTable renders infos as the table vigil-prolog --list-checks prints:
// one line a check with its name, kind, vendor, whether it is in the
// default suite and its description, under a header line; below each, an
// indented line of the reason tokens it can give; and last, the tokens any
// check can give (RunnerReasons).
func ListTable(infos []CheckInfo) string {
	w := len("CHECK")
	for _, i := range infos {
		w = max(w, len(i.Name))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s  %-6s  %-6s  %-7s  %s\n", w, "CHECK", "KIND", "VENDOR", "DEFAULT", "DESCRIPTION")
	for _, i := range infos {
		fmt.Fprintf(&b, "%-*s  %-6s  %-6s  %-7s  %s\n", w, i.Name, i.Kind, i.Vendor, yesNo(i.Default), i.Description)
		if len(i.Reasons) > 0 {
			fmt.Fprintf(&b, "%-*s  reasons: %s\n", w, "", strings.Join(i.Reasons, " "))
		}
	}
	fmt.Fprintf(&b, "\nany check: %s\n", strings.Join(RunnerReasons(), " "))
	return b.String()
}
