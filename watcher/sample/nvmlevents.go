package sample

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/internal/pci"
	"github.com/vigil-hpc/vigil/internal/xid"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// EventTypes are the NVML events NVMLEvents registers for: XID critical
// errors and double-bit (uncorrectable) ECC errors. Single-bit ECC errors
// are corrected and are no evidence of a hang.
const EventTypes = uint64(nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError)

// MaxEventsPerPoll bounds the events one Poll call takes from NVML; the
// rest wait in NVML's queue for the next call.
const MaxEventsPerPoll = 256

// NVMLEvents gives the faults NVML reports on the job's GPUs as typed
// device events (trace.DeviceEvent, recorded as trace.StreamDevice), so
// that a watcher which may not read /dev/kmsg (dmesg_restrict=1) still
// sees XID and ECC errors. NVML's event API needs no root:
// nvmlDeviceRegisterEvents and nvmlEventSetWait carry no permission
// requirement (in MIG mode an unprivileged caller gets only the events
// that affect the whole GPU).
type NVMLEvents struct {
	lib     nvml.Interface
	set     nvml.EventSet
	devices []eventDevice
}

// eventDevice is a registered GPU.
type eventDevice struct {
	dev   nvml.Device
	id    string // as NVML was asked for it ("0", "GPU-...")
	pci   string // its PCI address as the driver prints it ("0000:18:00"); "" unknown
	types uint64 // the event types registered
}

// Events registers the sampled GPUs for EventTypes in one event set. A GPU
// that supports only some of them (ECC disabled) is registered for those;
// one that supports none, or refuses (ERROR_NO_PERMISSION), is left out
// and named in the error. The events are nil only when no GPU could be
// registered. The event set is freed by Close (or by NVML's Close).
func (n *NVML) Events() (*NVMLEvents, error) {
	set, ret := n.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: events: create an event set: %s", ErrNVML, errorString(n.lib, ret))
	}
	e := &NVMLEvents{lib: n.lib, set: set}
	var errs []error
	for i, d := range n.devices {
		types, ret := register(d, set)
		if ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("device %s: %s", n.ids[i], errorString(n.lib, ret)))
			continue
		}
		e.devices = append(e.devices, eventDevice{dev: d, id: n.ids[i], pci: busAddr(d), types: types})
	}
	var err error
	if len(errs) > 0 {
		err = fmt.Errorf("%w: events: %w", ErrNVML, errors.Join(errs...))
	}
	if len(e.devices) == 0 {
		e.set.Free()
		return nil, err
	}
	n.events = e
	return e, err
}

// register registers d for the EventTypes it supports.
func register(d nvml.Device, set nvml.EventSet) (uint64, nvml.Return) {
	want := EventTypes
	if supported, ret := d.GetSupportedEventTypes(); ret == nvml.SUCCESS {
		if want &= supported; want == 0 {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
	}
	ret := d.RegisterEvents(want, set)
	if ret == nvml.ERROR_NOT_SUPPORTED && want != nvml.EventTypeXidCriticalError && want&nvml.EventTypeXidCriticalError != 0 {
		// NOT_SUPPORTED when any of the types is: XID events alone, then.
		want = nvml.EventTypeXidCriticalError
		ret = d.RegisterEvents(want, set)
	}
	if ret != nvml.SUCCESS {
		return 0, ret
	}
	return want, nvml.SUCCESS
}

// Registered describes the registered GPUs for a log line:
// "0:xid,ecc 1:xid".
func (e *NVMLEvents) Registered() string {
	parts := make([]string, 0, len(e.devices))
	for _, d := range e.devices {
		kinds := "xid"
		if d.types&nvml.EventTypeDoubleBitEccError != 0 {
			kinds += ",ecc"
		}
		parts = append(parts, d.id+":"+kinds)
	}
	return strings.Join(parts, " ")
}

// Poll returns the events NVML has delivered since the last call, at most
// MaxEventsPerPoll. It never waits: NVML is asked with a zero timeout
// until it has nothing more. Events of other types are skipped. An error
// (other than NVML's "nothing now") ends the call and is returned with the
// events read before it.
func (e *NVMLEvents) Poll() ([]trace.DeviceEvent, error) {
	if e == nil {
		return nil, nil
	}
	var out []trace.DeviceEvent
	for range MaxEventsPerPoll {
		ev, ret := e.set.Wait(0)
		switch ret {
		case nvml.SUCCESS:
			if d, ok := e.event(ev); ok {
				out = append(out, d)
			}
		case nvml.ERROR_TIMEOUT:
			return out, nil
		default:
			return out, fmt.Errorf("%w: events: wait: %s", ErrNVML, errorString(e.lib, ret))
		}
	}
	return out, nil
}

// Close frees the event set. It is safe to call more than once.
func (e *NVMLEvents) Close() {
	if e != nil && e.set != nil {
		e.set.Free()
		e.set = nil
	}
}

// event is one NVML event as a device event, and false for an event of
// another type.
func (e *NVMLEvents) event(ev nvml.EventData) (trace.DeviceEvent, bool) {
	d := trace.DeviceEvent{Source: trace.DeviceNVML, Device: e.idOf(ev.Device), PCI: e.pciOf(ev.Device)}
	switch {
	case ev.EventType&nvml.EventTypeXidCriticalError != 0:
		d.Kind, d.XID = trace.DeviceXID, int(ev.EventData)
		d.What = xidWords(d.XID)
		return d, true
	case ev.EventType&nvml.EventTypeDoubleBitEccError != 0:
		d.Kind = trace.DeviceECC
		return d, true
	}
	return trace.DeviceEvent{}, false
}

// idOf is the id NVML was asked for an event's device by ("0",
// "GPU-..."), "" when the device is not one registered.
func (e *NVMLEvents) idOf(d nvml.Device) string {
	if r, ok := e.registered(d); ok {
		return r.id
	}
	return ""
}

// registered is the registered GPU that d is.
func (e *NVMLEvents) registered(d nvml.Device) (eventDevice, bool) {
	if d == nil || !reflect.TypeOf(d).Comparable() {
		return eventDevice{}, false
	}
	for _, r := range e.devices {
		if reflect.TypeOf(r.dev) == reflect.TypeOf(d) && r.dev == d {
			return r, true
		}
	}
	return eventDevice{}, false
}

// pciOf is the PCI address of an event's device: the one found when it was
// registered (a GPU that fell off the bus answers no more questions), else
// asked now, else "".
func (e *NVMLEvents) pciOf(d nvml.Device) string {
	if d == nil {
		return ""
	}
	if r, ok := e.registered(d); ok {
		return r.pci
	}
	return busAddr(d)
}

// busAddr is d's PCI address as the driver prints it in XID lines
// ("0000:18:00", from NVML's "00000000:18:00.0"), or "".
func busAddr(d nvml.Device) (addr string) {
	defer func() {
		if recover() != nil { // a mock without GetPciInfoFunc
			addr = ""
		}
	}()
	info, ret := d.GetPciInfo()
	if ret != nvml.SUCCESS {
		return ""
	}
	b := make([]byte, 0, len(info.BusId))
	for _, c := range info.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	addr, _, _ = strings.Cut(pci.Normalise(string(b)), ".")
	return addr
}

// unknownXID is the XID NVML reports for an XID it cannot name.
const unknownXID = 999

// xidWords names an XID in a few words, from the catalogue the watcher
// and the xid check share (internal/xid), which also decides what is a
// fault.
func xidWords(code int) string {
	if info, ok := xid.Lookup(code); ok {
		return info.What
	}
	if code == unknownXID {
		return "unknown XID"
	}
	return "XID"
}

// DeviceFaults registers the job's GPUs for NVML's fault events (XIDs,
// double-bit ECC errors), which need no root, and returns them; nil when
// no GPU could be registered. A GPU that cannot be registered is said once
// and left out; sampling goes on regardless. Close frees the event set.
func (n *NVML) DeviceFaults(log logrus.FieldLogger) DeviceEvents {
	ev, err := n.Events()
	if err != nil {
		log.WithError(err).Info("some GPUs give no NVML fault events (not supported or not permitted); " +
			"their XIDs come only from the kernel log, where readable")
	}
	if ev == nil {
		return nil
	}
	log.WithField("gpus", ev.Registered()).Info("following NVML's XID and ECC events")
	return ev
}
