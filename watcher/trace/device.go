package trace

import (
	"encoding/json"
	"fmt"
	"time"
)

// StreamDevice marks a fault that the device library reported (NVML's XID
// and double-bit ECC events, the new DCMI error codes and uncorrectable
// HBM ECC counts of an NPU): the record's Line is a DeviceEvent as JSON,
// typed, never text to parse back. Traces of older versions carry these
// as kernel-log lines instead ("... (NVML event)", "dcmi: npu2 ..."),
// which still read.
const StreamDevice = "device"

// DeviceEvent is one fault a device library reported on a device of the
// node.
type DeviceEvent struct {
	Source string `json:"source"` // DeviceNVML or DeviceDCMI
	// Device is the device as the library was asked for it: a GPU's index
	// or UUID, an NPU's logical id.
	Device string `json:"device"`
	// PCI is the device's address as the driver prints it in XID lines
	// ("0000:18:00", no function) for a GPU, DCMI's for an NPU
	// ("0000:c3:00.0"); "" when unknown.
	PCI  string `json:"pci,omitempty"`
	Kind string `json:"kind"` // DeviceXID, DeviceECC or DeviceErrorCode
	XID  int    `json:"xid,omitempty"`
	// What names the XID for people (the catalogue's words when the
	// event was read); the catalogue of the reader decides what is a fault.
	What string `json:"what,omitempty"`
	Code string `json:"code,omitempty"` // DeviceErrorCode: "0x80e18005"
	// Health is the NPU's health when the error code was read ("major
	// alarm"); "" when it could not be read. Fault is set when that health
	// is a major or critical alarm: only then is the code a device fault.
	Health string `json:"health,omitempty"`
	Fault  bool   `json:"fault,omitempty"`
	// Count and Was are an NPU's uncorrectable HBM ECC count now and
	// before (DeviceECC from DCMI; NVML's double-bit event carries none).
	Count int64 `json:"count,omitempty"`
	Was   int64 `json:"was,omitempty"`
}

// Sources and kinds of a DeviceEvent.
const (
	DeviceNVML      = "nvml"
	DeviceDCMI      = "dcmi"
	DeviceXID       = "xid"
	DeviceECC       = "ecc"
	DeviceErrorCode = "error-code"
)

// DeviceRecord is the trace record of e, read on host for job at t.
func DeviceRecord(host, job string, t time.Time, e DeviceEvent) Sample {
	b, _ := json.Marshal(e) // a struct of strings, ints and bools
	return Sample{V: Version, Time: t, Host: host, Job: job, Log: &Log{Stream: StreamDevice, Line: string(b)}}
}

// ParseDeviceEvent reads the line of a StreamDevice record; false when it
// is not one (another version's, or damaged).
func ParseDeviceEvent(line string) (DeviceEvent, bool) {
	var e DeviceEvent
	if json.Unmarshal([]byte(line), &e) != nil || e.Kind == "" {
		return DeviceEvent{}, false
	}
	return e, true
}

// Text says e for people, as the digest's evidence and the hang report's
// page show it: "nvml: gpu0 (PCI:0000:18:00) Xid 79, GPU has fallen off the
// bus", "dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, major alarm
// (fault)".
func (e DeviceEvent) Text() string {
	unit := "gpu"
	if e.Source == DeviceDCMI {
		unit = "npu"
	}
	pci, dev := e.PCI, e.Device
	if pci == "" {
		pci = "unknown"
	}
	if dev == "" {
		dev = "?"
	}
	head := fmt.Sprintf("%s: %s%s (PCI:%s)", e.Source, unit, dev, pci)
	switch e.Kind {
	case DeviceXID:
		s := fmt.Sprintf("%s Xid %d", head, e.XID)
		if e.What != "" {
			s += ", " + e.What
		}
		return s
	case DeviceECC:
		if e.Count > 0 {
			return fmt.Sprintf("%s uncorrectable ECC errors %d (was %d)", head, e.Count, e.Was)
		}
		return head + " uncorrectable ECC error (double-bit)"
	case DeviceErrorCode:
		health := e.Health
		if health == "" {
			health = "health unknown"
		}
		s := fmt.Sprintf("%s error code %s, %s", head, e.Code, health)
		if e.Fault {
			s += " (fault)"
		}
		return s
	}
	return head + " " + e.Kind
}
