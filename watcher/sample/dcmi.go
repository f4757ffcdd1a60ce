package sample

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/cgo/dcmi"
	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/internal/vendors"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

func init() { RegisterOpener(vendors.SamplerDCMI, openDCMI) }

// openDCMI samples the job's NPUs through DCMI.
func openDCMI(job Job) (Accelerators, func(), error) {
	npu, err := dcmi.Open(dl.Options{})
	if err != nil {
		return nil, nil, err
	}
	d, err := NewDCMI(npu, ascendDevices(job.Lookup))
	if err != nil {
		npu.Close()
		return nil, nil, fmt.Errorf("DCMI found but unusable: %w", err)
	}
	return d, func() { d.Close() }, nil
}

// ascendDevices lists the job's NPUs from ASCEND_RT_VISIBLE_DEVICES or
// ASCEND_VISIBLE_DEVICES (logical ids); nil (every NPU DCMI lists) when
// neither is set or lookup is nil.
func ascendDevices(lookup func(string) (string, bool)) []string {
	if lookup == nil {
		return nil
	}
	for _, name := range []string{"ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES"} {
		if v, ok := lookup(name); ok && strings.TrimSpace(v) != "" {
			var ids []string
			for _, f := range strings.Split(v, ",") {
				if f = strings.TrimSpace(f); f != "" {
					ids = append(ids, f)
				}
			}
			return ids
		}
	}
	return nil
}

// ErrDCMI is wrapped by the errors of the DCMI source.
var ErrDCMI = errors.New("sample: dcmi")

// DCMI reads Huawei Ascend NPUs through DCMI (package cgo/dcmi): AI core
// utilisation, HBM in use and power draw.
type DCMI struct {
	lib  dcmi.Interface
	ids  []string
	devs []dcmi.Device
}

// NewDCMI initialises lib (dcmi.Open's library in production, a
// dcmifake.Node in tests) and looks up devices, each a logical NPU id as
// npu-smi and ACL number them ("0"). With no devices, every NPU DCMI lists
// is sampled. The reading's ID is the id given (or the logical id).
func NewDCMI(lib dcmi.Interface, devices []string) (*DCMI, error) {
	if err := lib.Init(); err != nil {
		return nil, fmt.Errorf("%w: init: %w", ErrDCMI, err)
	}
	all, err := lib.Devices()
	if err != nil {
		return nil, fmt.Errorf("%w: device list: %w", ErrDCMI, err)
	}
	byID := map[string]dcmi.Device{}
	var order []string
	for i, d := range all {
		id := d.Logic
		if id < 0 {
			id = i
		}
		s := strconv.Itoa(id)
		byID[s] = d
		order = append(order, s)
	}
	if len(devices) == 0 {
		devices = order
	}
	s := &DCMI{lib: lib}
	for _, id := range devices {
		if _, err := strconv.Atoi(id); err != nil {
			return nil, fmt.Errorf("%w: device %q: want a logical NPU id", ErrDCMI, id)
		}
		d, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("%w: device %s: DCMI lists %d NPUs", ErrDCMI, id, len(all))
		}
		s.ids = append(s.ids, id)
		s.devs = append(s.devs, d)
	}
	return s, nil
}

// Close releases the library.
func (s *DCMI) Close() error {
	if err := s.lib.Close(); err != nil {
		return fmt.Errorf("%w: close: %w", ErrDCMI, err)
	}
	return nil
}

// Sample reads every NPU. A device that fails is left out of the result and
// named in the error; a device without power readings (not supported)
// reads 0 W.
func (s *DCMI) Sample() ([]trace.Accel, error) {
	out := make([]trace.Accel, 0, len(s.devs))
	var errs []error
	for i, d := range s.devs {
		a := trace.Accel{ID: s.ids[i]}
		u, err := s.lib.Utilization(d, dcmi.UtilAICore)
		if err != nil {
			errs = append(errs, fmt.Errorf("device %s: utilization: %w", a.ID, err))
			continue
		}
		a.Util = float64(u)
		h, err := s.lib.HBM(d)
		if err != nil {
			errs = append(errs, fmt.Errorf("device %s: HBM: %w", a.ID, err))
			continue
		}
		a.MemUsedMiB = float64(h.UsedMiB)
		p, err := s.lib.PowerW(d)
		switch {
		case err == nil:
			a.PowerW = p
		case errors.Is(err, dcmi.ErrNotSupported):
		default:
			errs = append(errs, fmt.Errorf("device %s: power: %w", a.ID, err))
			continue
		}
		out = append(out, a)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%w: %w", ErrDCMI, errors.Join(errs...))
	}
	return out, nil
}
