package sample

import (
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/vigil-hpc/vigil/watcher/joblog"
)

// eventGPU is one GPU of fakeEventNVML.
type eventGPU struct {
	busID     string      // NVML's form, "00000000:18:00.0"
	supported uint64      // GetSupportedEventTypes' mask
	register  nvml.Return // what RegisterEvents answers (SUCCESS when 0)
	noECC     bool        // RegisterEvents refuses a mask with the ECC event
}

// fakeEventNVML is a node of GPUs whose event set delivers queue, one event
// per Wait, then ERROR_TIMEOUT (or stop, when set).
type fakeEventNVML struct {
	lib      *mock.Interface
	devs     []*mock.Device
	set      *mock.EventSet
	queue    []nvml.EventData
	stop     nvml.Return
	freed    int
	timeouts []uint32
}

func newFakeEventNVML(gpus ...eventGPU) *fakeEventNVML {
	f := &fakeEventNVML{}
	f.set = &mock.EventSet{
		WaitFunc: func(timeout uint32) (nvml.EventData, nvml.Return) {
			f.timeouts = append(f.timeouts, timeout)
			if len(f.queue) == 0 {
				if f.stop != 0 {
					return nvml.EventData{}, f.stop
				}
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
			ev := f.queue[0]
			f.queue = f.queue[1:]
			return ev, nvml.SUCCESS
		},
		FreeFunc: func() nvml.Return { f.freed++; return nvml.SUCCESS },
	}
	for _, g := range gpus {
		g := g
		var id [32]int8
		for i, c := range g.busID {
			id[i] = int8(c)
		}
		f.devs = append(f.devs, &mock.Device{
			GetPciInfoFunc:             func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{BusId: id}, nvml.SUCCESS },
			GetSupportedEventTypesFunc: func() (uint64, nvml.Return) { return g.supported, nvml.SUCCESS },
			RegisterEventsFunc: func(types uint64, _ nvml.EventSet) nvml.Return {
				if g.noECC && types&nvml.EventTypeDoubleBitEccError != 0 {
					return nvml.ERROR_NOT_SUPPORTED
				}
				if g.register != 0 {
					return g.register
				}
				return nvml.SUCCESS
			},
		})
	}
	f.lib = &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(f.devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(f.devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return f.devs[i], nvml.SUCCESS
		},
		EventSetCreateFunc: func() (nvml.EventSet, nvml.Return) { return f.set, nvml.SUCCESS },
		ErrorStringFunc: func(r nvml.Return) string {
			return map[nvml.Return]string{nvml.ERROR_NOT_SUPPORTED: "Not Supported", nvml.ERROR_NO_PERMISSION: "Insufficient Permissions",
				nvml.ERROR_GPU_IS_LOST: "GPU is lost"}[r]
		},
	}
	return f
}

const allEvents = uint64(nvml.EventTypeAll)

func openEvents(t *testing.T, f *fakeEventNVML) (*NVML, *NVMLEvents, error) {
	t.Helper()
	n, err := NewNVML(f.lib, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := n.Events()
	return n, e, err
}

func TestNVMLEventsRenderKernelLogLines(t *testing.T) {
	f := newFakeEventNVML(eventGPU{busID: "00000000:18:00.0", supported: allEvents}, eventGPU{busID: "00000000:3B:00.0", supported: allEvents})
	n, e, err := openEvents(t, f)
	if err != nil || e == nil || e.Registered() != "0:xid,ecc 1:xid,ecc" {
		t.Fatalf("events %v, %v", e, err)
	}
	f.queue = []nvml.EventData{
		{Device: f.devs[0], EventType: nvml.EventTypeXidCriticalError, EventData: 79},
		{Device: f.devs[1], EventType: nvml.EventTypeXidCriticalError, EventData: 13},
		{Device: f.devs[1], EventType: nvml.EventTypePState},
		{Device: f.devs[0], EventType: nvml.EventTypeDoubleBitEccError},
	}
	lines, err := e.Lines()
	if err != nil || len(lines) != 3 {
		t.Fatalf("lines %q, %v", lines, err)
	}
	for i, tc := range []struct {
		line  string
		kind  joblog.Kind
		xid   int
		fault bool
	}{
		{"NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus (NVML event)", joblog.KindXID, 79, true},
		{"NVRM: Xid (PCI:0000:3b:00): 13, pid='<unknown>', name=<unknown>, graphics engine exception (NVML event)", joblog.KindXID, 13, false},
		{"NVRM: GPU at PCI:0000:18:00: uncorrectable ECC error (double-bit) (NVML event)", joblog.KindECC, -1, true},
	} {
		if lines[i] != tc.line {
			t.Errorf("line %d = %q, want %q", i, lines[i], tc.line)
		}
		m, ok := joblog.Line(lines[i])
		if !ok || m.Kind != tc.kind || m.XID != tc.xid || m.Fault != tc.fault {
			t.Errorf("joblog.Line(%q) = %+v, %v; want %s XID %d fault %v", lines[i], m, ok, tc.kind, tc.xid, tc.fault)
		}
	}
	for _, to := range f.timeouts {
		if to != 0 {
			t.Errorf("Wait(%d): the watcher's loop must never wait for events", to)
		}
	}
	if lines, err := e.Lines(); len(lines) != 0 || err != nil {
		t.Errorf("nothing new: %q, %v", lines, err)
	}
	if err := n.Close(); err != nil || f.freed != 1 {
		t.Errorf("close: %v, event set freed %d times", err, f.freed)
	}
	e.Close() // once more: nothing
	if f.freed != 1 {
		t.Errorf("event set freed %d times", f.freed)
	}
}

func TestNVMLEventsUnsupportedAndRefused(t *testing.T) {
	xidOnly := uint64(nvml.EventTypeXidCriticalError | nvml.EventTypePState)
	f := newFakeEventNVML(
		eventGPU{busID: "00000000:18:00.0", supported: xidOnly},                                       // ECC disabled
		eventGPU{busID: "00000000:3b:00.0", supported: allEvents, noECC: true},                        // says it supports ECC events, refuses them
		eventGPU{busID: "00000000:86:00.0", supported: nvml.EventTypePState},                          // neither
		eventGPU{busID: "00000000:af:00.0", supported: allEvents, register: nvml.ERROR_NO_PERMISSION}, // locked down
	)
	_, e, err := openEvents(t, f)
	if e == nil || e.Registered() != "0:xid 1:xid" {
		t.Fatalf("events %+v, want GPUs 0 and 1 for XIDs", e)
	}
	if !errors.Is(err, ErrNVML) || !strings.Contains(err.Error(), "device 2: Not Supported") || !strings.Contains(err.Error(), "device 3: Insufficient Permissions") {
		t.Errorf("error %v, want GPUs 2 and 3 named", err)
	}
	f.queue = []nvml.EventData{{Device: f.devs[1], EventType: nvml.EventTypeXidCriticalError, EventData: 79}}
	if lines, err := e.Lines(); err != nil || len(lines) != 1 || !strings.Contains(lines[0], "(PCI:0000:3b:00): 79,") {
		t.Errorf("lines %q, %v", lines, err)
	}

	t.Run("none registered", func(t *testing.T) {
		f := newFakeEventNVML(eventGPU{busID: "00000000:18:00.0", supported: allEvents, register: nvml.ERROR_NO_PERMISSION})
		_, e, err := openEvents(t, f)
		if e != nil || !errors.Is(err, ErrNVML) || f.freed != 1 {
			t.Errorf("events %+v, %v, freed %d; want none, an error, the set freed", e, err, f.freed)
		}
	})
	t.Run("no event sets", func(t *testing.T) {
		f := newFakeEventNVML(eventGPU{busID: "00000000:18:00.0", supported: allEvents})
		f.lib.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED }
		if _, e, err := openEvents(t, f); e != nil || !errors.Is(err, ErrNVML) {
			t.Errorf("events %+v, %v", e, err)
		}
	})
}

func TestNVMLEventsWaitFails(t *testing.T) {
	f := newFakeEventNVML(eventGPU{busID: "00000000:18:00.0", supported: allEvents})
	_, e, err := openEvents(t, f)
	if err != nil {
		t.Fatal(err)
	}
	f.queue = []nvml.EventData{{Device: f.devs[0], EventType: nvml.EventTypeXidCriticalError, EventData: 79}}
	f.stop = nvml.ERROR_GPU_IS_LOST
	lines, err := e.Lines()
	if len(lines) != 1 || !errors.Is(err, ErrNVML) || !strings.Contains(err.Error(), "GPU is lost") {
		t.Errorf("lines %q, %v; want the line read before the error, and the error", lines, err)
	}
	// A device the event set does not know, and one whose address NVML
	// cannot tell: still a line, its address unknown.
	other := &mock.Device{GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.ERROR_GPU_IS_LOST }}
	if l, ok := e.line(nvml.EventData{Device: other, EventType: nvml.EventTypeXidCriticalError, EventData: 150}); !ok ||
		l != "NVRM: Xid (PCI:unknown): 150, pid='<unknown>', name=<unknown>, NVLink MSE error (NVML event)" {
		t.Errorf("line %q", l)
	}
}
