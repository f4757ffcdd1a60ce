package sample

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/vigil-hpc/vigil/cgo/dcmi"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// DCMIFaults gives what DCMI says about the job's NPUs as typed device
// events (trace.DeviceEvent), as NVMLEvents does for NVIDIA's XIDs: DCMI
// has no event queue a job's user may wait on, so each Poll call reads
// every NPU's current error codes (dcmi_get_device_errorcode_v2) and
// uncorrectable HBM ECC count (dcmi_get_device_ecc_info) and reports what
// changed since the previous call. None of these calls needs root.
//
// An error code that was not current at the previous call becomes an
// event of kind error-code, with the NPU's health read in the same call
// (a fault when that is a major or critical alarm); one that stays current
// is reported once, and again only after it has cleared and come back. A
// rise of the uncorrectable (double-bit) HBM ECC count becomes an event of
// kind ecc with the count and what it was.
//
// The first successful read of each NPU only takes note: what an NPU
// carries when the watcher starts is the prolog's to judge (npu-health,
// npu-ecc), and an ECC count has no "was" before it.
type DCMIFaults struct {
	lib  dcmi.Interface
	npus []faultNPU
}

// faultNPU is what DCMIFaults remembers of one NPU between calls.
type faultNPU struct {
	id    string // logical id ("2")
	dev   dcmi.Device
	codes map[uint32]bool // error codes current at the last successful read; nil before it
	ecc   uint32          // the uncorrectable HBM ECC count at the last successful read
	eccOK bool            // ecc has been read
	noECC bool            // HBM ECC not supported or disabled: not asked again
}

// Faults returns the fault events of the sampled NPUs. It shares the
// sampler's library: Close the sampler, not the faults.
func (s *DCMI) Faults() *DCMIFaults {
	f := &DCMIFaults{lib: s.lib}
	for i, d := range s.devs {
		f.npus = append(f.npus, faultNPU{id: s.ids[i], dev: d})
	}
	return f
}

// HealthFault says whether a dcmi_get_device_health value makes an NPU's
// error codes a device fault: a major or critical alarm, or the device
// gone. It is the meaning the root-side npu-health check gives the health
// level (benchmarks/ascend, which the watcher may not import) without its
// fail_on_minor setting: a minor alarm drains a node after the job by
// default, but is no cause of a hang. DCMI gives the job's user no level
// per code, and a device's health is the most severe of its current
// alarms, so every code new at a call is judged by the health read in that
// call.
func HealthFault(h uint32) bool {
	return h == dcmi.HealthMajor || h == dcmi.HealthCritical || h == dcmi.HealthAbsent
}

// Poll returns the error codes and ECC errors that are new since the last
// call. It never waits beyond the DCMI calls themselves. An NPU that
// cannot be read is named in the error and keeps what was known of it,
// so that a passing failure reports nothing twice; the other NPUs' events
// are returned with the error.
func (f *DCMIFaults) Poll() ([]trace.DeviceEvent, error) {
	if f == nil {
		return nil, nil
	}
	var out []trace.DeviceEvent
	var errs []error
	for i := range f.npus {
		evs, err := f.npus[i].poll(f.lib)
		out = append(out, evs...)
		if err != nil {
			errs = append(errs, fmt.Errorf("device %s: %w", f.npus[i].id, err))
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%w: faults: %w", ErrDCMI, errors.Join(errs...))
	}
	return out, nil
}

// poll reads one NPU.
func (n *faultNPU) poll(lib dcmi.Interface) ([]trace.DeviceEvent, error) {
	var out []trace.DeviceEvent
	var errs []error
	codes, err := lib.ErrorCodes(n.dev)
	if err != nil {
		errs = append(errs, fmt.Errorf("error codes: %w", err))
	} else {
		now := make(map[uint32]bool, len(codes))
		var fresh []uint32
		for _, c := range codes {
			if !n.codes[c] && !now[c] {
				fresh = append(fresh, c)
			}
			now[c] = true
		}
		report := n.codes != nil
		n.codes = now
		if report && len(fresh) > 0 {
			h, err := lib.Health(n.dev)
			if err != nil {
				errs = append(errs, fmt.Errorf("health: %w", err))
			}
			for _, c := range fresh {
				out = append(out, ErrorCodeEvent(n.id, n.dev.PCI, c, h, err == nil))
			}
		}
	}
	if !n.noECC {
		e, ok, err := n.pollECC(lib)
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			out = append(out, e)
		}
	}
	return out, errors.Join(errs...)
}

// pollECC reads the uncorrectable HBM ECC count and reports a rise.
func (n *faultNPU) pollECC(lib dcmi.Interface) (trace.DeviceEvent, bool, error) {
	e, err := lib.ECC(n.dev, dcmi.MemoryHBM)
	switch {
	case errors.Is(err, dcmi.ErrNotSupported):
		n.noECC = true
		return trace.DeviceEvent{}, false, nil
	case err != nil:
		return trace.DeviceEvent{}, false, fmt.Errorf("HBM ECC: %w", err)
	case !e.Enabled:
		n.noECC = true
		return trace.DeviceEvent{}, false, nil
	}
	was, report := n.ecc, n.eccOK
	n.ecc, n.eccOK = e.DoubleBit, true
	if !report || e.DoubleBit <= was { // a fall is a reset: the new count is the base
		return trace.DeviceEvent{}, false, nil
	}
	return trace.DeviceEvent{Source: trace.DeviceDCMI, Device: n.id, PCI: n.dev.PCI, Kind: trace.DeviceECC,
		Count: int64(e.DoubleBit), Was: int64(was)}, true, nil
}

// ErrorCodeEvent is the event of a DCMI error code new on the NPU with
// logical id id at PCI address addr ("0000:c3:00.0"; "" when unknown),
// given the device's health h (known false when it could not be read). It
// is a device fault only when the health is known and a major or critical
// alarm (HealthFault).
func ErrorCodeEvent(id, addr string, code, h uint32, known bool) trace.DeviceEvent {
	e := trace.DeviceEvent{Source: trace.DeviceDCMI, Device: id, PCI: addr, Kind: trace.DeviceErrorCode, Code: fmt.Sprintf("0x%08x", code)}
	if known {
		e.Health, e.Fault = dcmi.HealthName(h), HealthFault(h)
	}
	return e
}

// Watched describes the NPUs for a log line: "0:codes,ecc 1:codes" (ECC
// as far as known: an NPU whose HBM ECC is not reported loses ",ecc" at
// the first call).
func (f *DCMIFaults) Watched() string {
	parts := make([]string, 0, len(f.npus))
	for _, n := range f.npus {
		kinds := "codes"
		if !n.noECC {
			kinds += ",ecc"
		}
		parts = append(parts, n.id+":"+kinds)
	}
	return strings.Join(parts, " ")
}

// DeviceFaults reads the job's NPUs' DCMI error codes and uncorrectable
// HBM ECC counts once a period and returns what is new as device events.
// DCMI has no event queue to register for: nothing can fail here, a
// failing read is said once by the watcher's job logs.
func (s *DCMI) DeviceFaults(log logrus.FieldLogger) DeviceEvents {
	f := s.Faults()
	log.WithField("npus", f.Watched()).Info("following DCMI's error codes and uncorrectable HBM ECC counts")
	return f
}
