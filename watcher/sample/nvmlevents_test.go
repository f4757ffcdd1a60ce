package sample

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
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

func TestNVMLEventsAreDeviceEvents(t *testing.T) {
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
	evs, err := e.Poll()
	if err != nil || len(evs) != 3 {
		t.Fatalf("events %+v, %v", evs, err)
	}
	for i, tc := range []struct {
		ev    trace.DeviceEvent
		text  string
		kind  joblog.Kind
		xid   int
		fault bool
	}{
		{trace.DeviceEvent{Source: "nvml", Device: "0", PCI: "0000:18:00", Kind: "xid", XID: 79, What: "GPU has fallen off the bus"},
			"nvml: gpu0 (PCI:0000:18:00) Xid 79, GPU has fallen off the bus", joblog.KindXID, 79, true},
		{trace.DeviceEvent{Source: "nvml", Device: "1", PCI: "0000:3b:00", Kind: "xid", XID: 13, What: "graphics engine exception"},
			"nvml: gpu1 (PCI:0000:3b:00) Xid 13, graphics engine exception", joblog.KindXID, 13, false},
		{trace.DeviceEvent{Source: "nvml", Device: "0", PCI: "0000:18:00", Kind: "ecc"},
			"nvml: gpu0 (PCI:0000:18:00) uncorrectable ECC error (double-bit)", joblog.KindECC, -1, true},
	} {
		if evs[i] != tc.ev || evs[i].Text() != tc.text {
			t.Errorf("event %d = %+v (%q), want %+v (%q)", i, evs[i], evs[i].Text(), tc.ev, tc.text)
		}
		rec := trace.DeviceRecord("n1", "7", time.Now(), evs[i])
		m, ok := joblog.LineIn(rec.Log.Stream, rec.Log.Line)
		if !ok || m.Kind != tc.kind || m.XID != tc.xid || m.Fault != tc.fault {
			t.Errorf("joblog.LineIn(device, %q) = %+v, %v; want %s XID %d fault %v", rec.Log.Line, m, ok, tc.kind, tc.xid, tc.fault)
		}
	}
	for _, to := range f.timeouts {
		if to != 0 {
			t.Errorf("Wait(%d): the watcher's loop must never wait for events", to)
		}
	}
	if evs, err := e.Poll(); len(evs) != 0 || err != nil {
		t.Errorf("nothing new: %+v, %v", evs, err)
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
	if evs, err := e.Poll(); err != nil || len(evs) != 1 || evs[0].PCI != "0000:3b:00" || evs[0].XID != 79 {
		t.Errorf("events %+v, %v", evs, err)
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
	evs, err := e.Poll()
	if len(evs) != 1 || !errors.Is(err, ErrNVML) || !strings.Contains(err.Error(), "GPU is lost") {
		t.Errorf("events %+v, %v; want the event read before the error, and the error", evs, err)
	}
	// A device the event set does not know, and one whose address NVML
	// cannot tell: still an event, its device and address unknown.
	other := &mock.Device{GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.ERROR_GPU_IS_LOST }}
	if ev, ok := e.event(nvml.EventData{Device: other, EventType: nvml.EventTypeXidCriticalError, EventData: 150}); !ok ||
		ev.Text() != "nvml: gpu? (PCI:unknown) Xid 150, NVLink MSE error" {
		t.Errorf("event %+v (%q)", ev, ev.Text())
	}
}
