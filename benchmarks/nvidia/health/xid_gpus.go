package health

import (
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"github.com/vigil-hpc/vigil/internal/kmsg"
	"os"
	"path/filepath"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
)

// gpuList is this node's NVIDIA GPUs by the address XID lines print
// ("0000:3b:00"), each with its name: NVML's "gpu<index>", else the
// address (a GPU that sysfs lists and NVML does not: maybe off the bus).
// The driver's XID line names one of the GPUs it drives; an XID naming
// any other address is not the driver's.
type gpuList struct {
	names map[string]string
	// err says why neither NVML nor sysfs could list all the GPUs; nil
	// when one of them did.
	err error
}

// nodeGPUs lists the node's NVIDIA GPUs through NVML and under sysfs
// (bus/pci/devices, the vendor table's NVIDIA ids and classes).
func (c *xid) nodeGPUs(sysfs string) gpuList {
	g := gpuList{names: map[string]string{}}
	nvmlErr := c.nvmlGPUs(g.names)
	sysErr := sysfsGPUs(sysfs, g.names)
	if nvmlErr != nil && sysErr != nil {
		g.err = fmt.Errorf("NVML: %v; sysfs: %v", nvmlErr, sysErr)
	}
	return g
}

// nvmlGPUs adds NVML's GPUs to names, as "gpu<index>"; the error says
// why it could not add them all.
func (c *xid) nvmlGPUs(names map[string]string) error {
	lib, err := c.lib.get()
	if err != nil {
		return err
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("device count: %v", nvml.ErrorString(ret))
	}
	var errs []error
	for i := 0; i < n; i++ {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret == nvml.SUCCESS {
			var info nvml.PciInfo
			if info, ret = dev.GetPciInfo(); ret == nvml.SUCCESS {
				addr, _, _ := strings.Cut(busID(info), ".")
				names[addr] = fmt.Sprintf("gpu%d", i)
				continue
			}
		}
		errs = append(errs, fmt.Errorf("gpu%d's address: %v", i, nvml.ErrorString(ret)))
	}
	return errors.Join(errs...)
}

// sysfsGPUs adds the NVIDIA GPUs sysfs lists to names (by their address,
// unless NVML named them). A sysfs without a PCI bus cannot tell.
func sysfsGPUs(sysfs string, names map[string]string) error {
	if _, err := os.Stat(filepath.Join(sysfs, "bus", "pci", "devices")); err != nil {
		return err
	}
	addrs, err := device.OnBus(benchmarks.VendorNVIDIA, sysfs)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		a, _, _ = strings.Cut(a, ".")
		if _, ok := names[a]; !ok {
			names[a] = a
		}
	}
	return nil
}

// errNotNodeGPU: an XID names an address that is none of the node's GPUs.
var errNotNodeGPU = errors.New("not an NVIDIA GPU of this node")

// errTextLine: an XID read from a line of a text log, which may be part
// of a user's text (kmsg.Record's Plain).
var errTextLine = errors.New("read from a text log, whose lines a user can write (a segfault line quoting a file name with a newline " +
	"becomes two lines in syslog); only a /dev/kmsg record counts: set source = \"/dev/kmsg\"")

// place sets ev's Device to the node's GPU at its address, or says why it
// is none (or may be one the list lacks).
func (g gpuList) place(ev xidEvent) (xidEvent, error) {
	d, ok := g.names[ev.PCI]
	switch {
	case ok:
		ev.Device = d
		return ev, nil
	case g.err != nil:
		return ev, g.err
	}
	return ev, errNotNodeGPU
}

// own returns the XID events of lines that are the driver's (parseXID):
// /dev/kmsg records that name a GPU of this node, each with its Device.
// One naming another address is noted and left out. An XID of a text
// log's line, or one read when the GPUs could not be listed, is left out
// too: a fault one makes the check unknown (ReasonXIDInTextLog,
// ReasonGPUListUnreadable), never a failure.
func (g gpuList) own(t *devcheck.Tally, rule faultRule, lines []kmsg.Record) []xidEvent {
	var out []xidEvent
	for _, l := range lines {
		ev, ok := parseXID(l)
		if !ok {
			continue
		}
		var err error
		if l.Plain {
			err = errTextLine
		} else if ev, err = g.place(ev); err == nil {
			out = append(out, ev)
			continue
		}
		g.leftOut(t, rule, ev, err)
	}
	return out
}

// recheck returns the faults kept from earlier runs that name a GPU of
// this node: those kept with their Device, and those kept before the
// address was checked (no Device) whose address is one now.
func (g gpuList) recheck(t *devcheck.Tally, faults []xidEvent) []xidEvent {
	var out []xidEvent
	for _, ev := range faults {
		if ev.Device == "" {
			var err error
			if ev, err = g.place(ev); err != nil {
				t.Note("XID %d of an earlier run at %s dropped: %v", ev.Code, pciOrUnknown(ev.PCI), err)
				continue
			}
		}
		out = append(out, ev)
	}
	return out
}

// leftOut says why ev does not count.
func (g gpuList) leftOut(t *devcheck.Tally, rule faultRule, ev xidEvent, err error) {
	if errors.Is(err, errNotNodeGPU) {
		t.Note("XID %d at %s ignored: %v", ev.Code, pciOrUnknown(ev.PCI), err)
		return
	}
	if errors.Is(err, errTextLine) {
		if rule.fails(ev) {
			t.Unknown("", ReasonXIDInTextLog, "XID %d at %s not counted: %v", ev.Code, pciOrUnknown(ev.PCI), err)
		} else {
			t.Note("XID %d at %s not counted: read from a text log", ev.Code, pciOrUnknown(ev.PCI))
		}
		return
	}
	if rule.fails(ev) {
		t.Unknown("", ReasonGPUListUnreadable, "XID %d at %s not counted: the node's NVIDIA GPUs could not be listed (%v)",
			ev.Code, pciOrUnknown(ev.PCI), err)
		return
	}
	t.Note("XID %d at %s not counted: the node's NVIDIA GPUs could not be listed", ev.Code, pciOrUnknown(ev.PCI))
}

// pciOrUnknown is an XID's address for messages.
func pciOrUnknown(addr string) string {
	if addr == "" {
		return "PCI:unknown"
	}
	return "PCI:" + addr
}
